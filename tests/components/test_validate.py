"""Every class of bad fleet description gets one clear problem: config path, value, what is allowed, a fix."""

from __future__ import annotations

from typing import Any

import pytest

from components.errors import SpecError
from components.validate import resolve
from tests.conftest import example_fleet


def problems(fleet: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as caught:
        resolve(fleet, "stacks/Pulumi.test.yaml")
    return [p.render() for p in caught.value.problems]


def pool(fleet: dict[str, Any], i: int = 0) -> dict[str, Any]:
    return fleet["clusters"][0]["node_pools"][i]


def test_examples_resolve() -> None:
    fleet = resolve(example_fleet("aws-train"))
    pools = {p.name: p for p in fleet.clusters[0].pools}
    assert pools["h100"].machine.name == "p5.48xlarge" and pools["h100"].compact
    assert pools["a100-eval"].machine.gpu == "A100-40GB"  # p4d: 8 x A100 40 GB, https://aws.amazon.com/ec2/instance-types/p4/
    assert resolve(example_fleet("dev")).clusters[0].pools[0].machine.name == "g6.xlarge"


def test_unknown_gpu_suggests_the_closest() -> None:
    fleet = example_fleet("aws-train")
    pool(fleet)["accelerator"] = "H10"
    [message] = problems(fleet)
    assert message.startswith("clusters[0].node_pools[0].accelerator: 'H10' is not a known GPU.")
    assert "Did you mean 'H100'?" in message and "Known: A100, A100-40GB, A100-80GB, A10G" in message


def test_machine_type_typo_suggests_the_closest() -> None:
    fleet = example_fleet("aws-train")
    pool(fleet, 1)["machine_type"] = "p4d.24xlarg"
    [message] = problems(fleet)
    assert "clusters[0].node_pools[1].machine_type: 'p4d.24xlarg' is not a known AWS GPU machine type." in message
    assert "Did you mean 'p4d.24xlarge'?" in message


def test_machine_not_offered_in_region() -> None:
    fleet = example_fleet("aws-train")
    pool(fleet, 1)["machine_type"] = "p5e.48xlarge"
    fleet["clusters"][0]["addons"]["kueue_teams"] = []
    [message] = problems(fleet)
    assert "p5e.48xlarge is not offered in us-east-1." in message and "us-east-2" in message


def test_zone_not_in_cluster() -> None:
    fleet = example_fleet("aws-train")
    pool(fleet)["zone"] = "use1-az1"  # a zone id of us-east-1 the cluster does not list
    [message] = problems(fleet)
    assert message.startswith("clusters[0].node_pools[0].zone: 'use1-az1' is not one of the cluster's zones")


def test_machine_not_offered_in_the_pool_zone() -> None:
    fleet = example_fleet("aws-train")
    pool(fleet)["machine_type"] = "p5en.48xlarge"  # us-east-1: use1-az2 and use1-az6 only (moto's offerings)
    pool(fleet)["zone"] = "use1-az4"
    fleet["clusters"][0]["addons"]["kueue_teams"] = []
    assert problems(fleet) == ["clusters[0].node_pools[0]: p5en.48xlarge has 8 x H200, not accelerator H100. "
                               "Drop accelerator/gpus or the machine_type."]
    del pool(fleet)["accelerator"], pool(fleet)["gpus"]
    [message] = problems(fleet)
    assert message.startswith("clusters[0].node_pools[0].zone: p5en.48xlarge is not offered in zone use1-az4.")


def test_interconnect_required_of_a_machine_without_one() -> None:
    fleet = example_fleet("dev")
    pool(fleet)["interconnect"] = "required"
    [message] = problems(fleet)
    assert "node_pools[0].interconnect: 'required' but g6.xlarge has no high-speed interconnect." in message
    assert "g6.48xlarge" in message  # an L4 machine that has EFA


def test_min_greater_than_max() -> None:
    fleet = example_fleet("aws-train")
    pool(fleet, 1)["nodes"] = {"min": 5, "max": 4}
    [message] = problems(fleet)
    assert message == "clusters[0].node_pools[1].nodes: min (5) is greater than max (4). Set min <= max."


def test_pool_too_large_for_one_compact_placement() -> None:
    fleet = {"cloud": "gcp", "tags": {"team": "t", "cost_center": "c"}, "monthly_budget_usd": 1,
             "clusters": [{"name": "big", "region": "us-central1", "zones": ["us-central1-a"], "node_pools": [
                 {"name": "mega", "machine_type": "a3-megagpu-8g", "nodes": {"max": 2000}}]}]}
    [message] = problems(fleet)
    assert "nodes.max: 2000 nodes do not fit one compact placement (at most 1500 on GCP)." in message


def _without_efa(fleet: dict[str, Any]) -> dict[str, Any]:
    for p in fleet["clusters"][0]["node_pools"]:
        p["interconnect"] = "off"
    return fleet


@pytest.mark.parametrize(("capacity_tib", "ok"), [(1.2, True), (2.4, True), (4.8, True), (3.6, False), (1.0, False)])
def test_lustre_capacity_must_be_a_valid_increment(capacity_tib: float, ok: bool) -> None:
    fleet = _without_efa(example_fleet("aws-train"))  # no EFA pool: FSx's ordinary sizes
    fleet["clusters"][0]["storage"]["lustre"]["capacity_tib"] = capacity_tib
    if ok:
        resolve(fleet)
        return
    [message] = problems(fleet)
    assert (f"storage.lustre.capacity_tib: {capacity_tib:g} TiB is not a valid FSx for Lustre PERSISTENT_2 "
            "size") in message
    assert "Allowed: 1.2, multiples of 2.4" in message


# EFA-enabled FSx for Lustre steps, from the FSx for Lustre User Guide (getting-started.html: "increments of 4.8 TiB,
# 9.6 TiB, 19.2 TiB, and 38.4 TiB for 1000, 500, 250, and 125 MBps/TiB"), up to the 2,400 TiB ceiling.
EFA_STEP = {1000: 4.8, 500: 9.6, 250: 19.2, 125: 38.4}
EFA_TOP = {1000: 2400, 500: 2400, 250: 2400, 125: 2380.8}


@pytest.mark.parametrize("tier", sorted(EFA_STEP))
def test_efa_enabled_lustre_is_sized_in_its_tiers_step(tier: int) -> None:
    """aws-train's pools use EFA, so its file system is EFA-enabled: each side of each boundary."""
    step = EFA_STEP[tier]
    fleet = example_fleet("aws-train")
    lustre = fleet["clusters"][0]["storage"]["lustre"]
    lustre["throughput_mbps_per_tib"] = tier
    for ok in (step, 2 * step, EFA_TOP[tier]):
        lustre["capacity_tib"] = ok
        resolve(fleet)
    for bad in (1.2, step - 2.4, step + 2.4, EFA_TOP[tier] + step):  # the ordinary FSx sizes around one step
        lustre["capacity_tib"] = round(bad, 1)
        [message] = problems(fleet)
        assert message.startswith(f"clusters[0].storage.lustre.capacity_tib: {round(bad, 1):g} TiB is not a valid "
                                  f"size for an EFA-enabled FSx for Lustre PERSISTENT_2 file system at {tier} "
                                  "MB/s/TiB (it is EFA-enabled because node pool(s) h100, a100-eval use EFA).")
        assert f"Allowed at {tier} MB/s/TiB: multiples of {step:g} from {step:g} to {EFA_TOP[tier]:g} TiB." in message
        assert "steps of 4.8 at 1000, 9.6 at 500, 19.2 at 250, 38.4 at 125 MB/s/TiB" in message


def test_efa_sizing_follows_the_pools_that_use_efa() -> None:
    """2.4 TiB is an ordinary FSx size but no EFA one: refused while any pool uses EFA, accepted once none does."""
    fleet = example_fleet("aws-train")
    fleet["clusters"][0]["storage"]["lustre"]["capacity_tib"] = 2.4
    pool(fleet)["interconnect"] = "off"  # the p4d pool still uses EFA
    [message] = problems(fleet)
    assert "because node pool(s) a100-eval use EFA" in message
    resolve(_without_efa(fleet))


def test_lustre_bucket_must_exist() -> None:
    fleet = example_fleet("aws-train")
    fleet["clusters"][0]["storage"]["lustre"]["bucket"] = "checkpoint"
    [message] = problems(fleet)
    assert "'checkpoint' is not a known bucket of this cluster. Did you mean 'checkpoints'?" in message


def test_capacity_type_the_cloud_lacks_is_explained() -> None:
    fleet = example_fleet("aws-train")
    pool(fleet, 1)["capacity"] = {"type": "flex_start"}
    [message] = problems(fleet)
    assert "capacity.type: 'flex_start' is not available on AWS: flex-start" in message
    assert "use capacity_block" in message


def test_capacity_block_needs_an_id_and_a_block_machine() -> None:
    fleet = example_fleet("dev")
    pool(fleet)["capacity"] = {"type": "capacity_block"}
    messages = problems(fleet)
    assert any("capacity.id: capacity type 'capacity_block' needs the reservation id." in m for m in messages)
    assert any("g6.xlarge is not sold as a capacity block." in m for m in messages)


def test_unknown_key_suggests_the_right_one() -> None:
    fleet = example_fleet("aws-train")
    pool(fleet)["taint"] = []
    [message] = problems(fleet)
    assert message.startswith("clusters[0].node_pools[0].taint: unknown key. Did you mean 'taints'?")


def test_mandatory_tags() -> None:
    fleet = example_fleet("dev")
    del fleet["tags"]["cost_center"]
    assert problems(fleet) == ["tags.cost_center: is required. Add it to the stack's gpufleet:fleet config."]


def test_public_endpoint_open_to_the_world_is_refused() -> None:
    fleet = example_fleet("dev")
    fleet["clusters"][0].update(endpoint="public", public_access_cidrs=["0.0.0.0/0"])
    [message] = problems(fleet)
    assert "public_access_cidrs[0]: '0.0.0.0/0' opens the API server to everyone." in message


def test_team_quotas_cannot_exceed_the_pools() -> None:
    fleet = example_fleet("aws-train")
    fleet["clusters"][0]["addons"]["kueue_teams"][0]["gpus"]["H100"] = 200
    [message] = problems(fleet)
    assert "team quotas ask for 200 H100 GPUs but the node pools provide at most 128." in message


def test_every_problem_is_reported_at_once() -> None:
    fleet = example_fleet("aws-train")
    pool(fleet)["accelerator"] = "H10"
    pool(fleet, 1)["nodes"] = {"min": 5, "max": 4}
    fleet["clusters"][0]["storage"]["lustre"]["capacity_tib"] = 3
    assert len(problems(fleet)) == 3


def test_operator_driver_is_refused_where_the_image_owns_it() -> None:
    fleet = example_fleet("dev")
    fleet["clusters"][0]["addons"]["gpu_driver"] = "operator"
    [message] = problems(fleet)
    assert message.startswith("clusters[0].addons.gpu_driver: 'operator' is not available on AWS: the EKS AL2023")
    assert message.endswith("Set gpu_driver: cloud.")


def test_error_names_the_stack_file() -> None:
    fleet = example_fleet("dev")
    fleet["cloud"] = "oracle"
    with pytest.raises(SpecError) as caught:
        resolve(fleet, "stacks/Pulumi.dev.yaml")
    text = str(caught.value)
    assert "stacks/Pulumi.dev.yaml: cloud:" in text and "Allowed: aws, gcp, azure." in text
