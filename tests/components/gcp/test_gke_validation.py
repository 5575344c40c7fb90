"""Every GCP-specific mistake is rejected before anything is built, with the config path, the value, what is
allowed and how to fix it."""

from __future__ import annotations

from typing import Any

import pytest

from components.errors import SpecError
from components.validate import resolve
from tests.components.gcp.fleets import gcp_fleet, gpu_pool

POOL = "clusters[0].node_pools[0]"


def problems(fleet: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as caught:
        resolve(fleet, "stacks/Pulumi.gcp-test.yaml")
    return [p.render() for p in caught.value.problems]


def test_compact_placement_across_more_than_one_zone() -> None:
    pool = gpu_pool("a3-megagpu-8g")
    del pool["zone"]
    [message] = problems(gcp_fleet(pool, zones=["us-central1-b", "us-central1-c"]))
    assert message.startswith(f"{POOL}.zone: is unset, but compact placement keeps a pool in one zone and the "
                              "cluster spans 2 (us-central1-b, us-central1-c).")
    assert message.endswith("Set zone to the one zone the pool's capacity is in, or set interconnect: off, or use "
                            "flex_start or reservation capacity (placed by the cloud) with compact_placement: false.")
    reserved = {**pool, "compact_placement": False, "capacity": {"type": "reservation", "id": "a3mega-train"}}
    resolve(gcp_fleet(reserved, zones=["us-central1-b", "us-central1-c"]))
    [message] = problems(gcp_fleet({**pool, "compact_placement": False}, zones=["us-central1-b", "us-central1-c"]))
    assert message.startswith(f"{POOL}.compact_placement: is false, but this pool of up to 2 a3-megagpu-8g "
                              "nodes needs compact placement for its tcpxo interconnect")


def test_reservation_in_another_zone() -> None:
    capacity = {"type": "reservation", "id": "projects/shared-cap/zones/us-central1-a/reservations/a4-resv"}
    [message] = problems(gcp_fleet(gpu_pool("a4-highgpu-8g", capacity=capacity)))
    assert message == (f"{POOL}.capacity.id: reservation '{capacity['id']}' is in zone us-central1-a, but the pool "
                       "runs in us-central1-b. Set the pool's zone to us-central1-a, or name a reservation in "
                       "us-central1-b.")


def test_reservation_id_that_gcp_cannot_name() -> None:
    [message] = problems(gcp_fleet(gpu_pool("a4-highgpu-8g", capacity={"type": "reservation", "id": "A4_Resv"})))
    assert message.startswith(f"{POOL}.capacity.id: 'A4_Resv' is not a GCP reservation id. Use one of the forms ")
    assert "projects/shared-capacity/reservations/h100-resv" in message


def test_accelerator_not_offered_in_the_zone() -> None:
    [message] = problems(gcp_fleet(gpu_pool("a3-ultragpu-8g", zone="us-central1-c"),
                                   zones=["us-central1-b", "us-central1-c"]))
    assert message == (f"{POOL}.zone: a3-ultragpu-8g is not offered in zone us-central1-c. Zones of us-central1 "
                       "that offer it: us-central1-b; set zone.")


@pytest.mark.parametrize(("capacity", "path", "says"), [
    ({"id": "a3mega-train"}, "capacity.id", "is set, but capacity type 'flex_start' takes no id."),
    ({"block": "b1"}, "capacity.block", "reservation blocks are not available for 'flex_start' on GCP."),
])
def test_queued_provisioning_together_with_a_reservation(capacity: dict[str, str], path: str, says: str) -> None:
    [message] = problems(gcp_fleet(gpu_pool("a3-megagpu-8g", capacity={"type": "flex_start", **capacity})))
    assert message.startswith(f"{POOL}.{path}: {says}")


def test_flex_start_pools_start_empty() -> None:
    pool = gpu_pool("a3-ultragpu-8g", capacity={"type": "flex_start"}, nodes={"min": 2, "max": 4})
    [message] = problems(gcp_fleet(pool))
    assert message == (f"{POOL}.nodes: 'flex_start' pools start empty and get nodes only when a workload asks for "
                       "them; got min 2, desired None. Set nodes.min: 0 and drop nodes.desired.")


@pytest.mark.parametrize("machine", ["a3-ultragpu-8g", "a4-highgpu-8g"])
def test_a3_ultra_and_a4_are_not_sold_on_demand(machine: str) -> None:
    [message] = problems(gcp_fleet(gpu_pool(machine, capacity={"type": "on_demand"})))
    assert message == (f"{POOL}.capacity.type: {machine} is not sold as 'on_demand' capacity. "
                       "Use one of flex_start, reservation, spot.")


def test_spot_has_no_price_cap_on_gcp() -> None:
    [message] = problems(gcp_fleet(gpu_pool("a3-highgpu-8g", capacity={"type": "spot", "max_usd_per_hour": 40})))
    assert message == (f"{POOL}.capacity.max_usd_per_hour: GCP spot capacity has no price cap; got 40. "
                       "Remove it: spot nodes cost the current spot price.")


def test_capacity_blocks_are_aws_only() -> None:
    [message] = problems(gcp_fleet(gpu_pool("a3-megagpu-8g", capacity={"type": "capacity_block", "id": "x"})))
    assert message.startswith(f"{POOL}.capacity.type: 'capacity_block' is not available on GCP: capacity blocks "
                              "are an AWS product")
    assert "Allowed: on_demand, spot, reservation, flex_start." in message


@pytest.mark.parametrize(("tib", "tier", "ok"), [
    (9, 1000, True), (1584, 1000, True), (1539, 1000, False), (36, 500, True), (10, 500, False),
    (3168, 500, True), (3204, 500, False), (72, 125, True), (12312, 125, False)])
def test_managed_lustre_sizes_follow_the_tier(tib: float, tier: int, ok: bool) -> None:
    storage = {"buckets": [{"name": "data"}],
               "lustre": {"capacity_tib": tib, "throughput_mbps_per_tib": tier, "bucket": "data"}}
    fleet = gcp_fleet(gpu_pool("a3-megagpu-8g"), storage=storage)
    if ok:
        resolve(fleet)
        return
    [message] = problems(fleet)
    assert message.startswith(f"clusters[0].storage.lustre.capacity_tib: {tib:g} TiB is not a valid Managed Lustre "
                              f"size for the {tier} MB/s/TiB tier. Allowed: ")


def test_managed_lustre_tier() -> None:
    storage = {"buckets": [{"name": "data"}],
               "lustre": {"capacity_tib": 36, "throughput_mbps_per_tib": 200, "bucket": "data"}}
    [message] = problems(gcp_fleet(gpu_pool("a3-megagpu-8g"), storage=storage))
    assert message == ("clusters[0].storage.lustre.throughput_mbps_per_tib: 200 is not a Managed Lustre throughput "
                       "tier. Allowed: 125, 250, 500, 1000.")


def test_project_id_shape() -> None:
    fleet = gcp_fleet(gpu_pool("a3-megagpu-8g"))
    fleet["account"] = "ML_Train"
    [message] = problems(fleet)
    assert message == "account: 'ML_Train' is not a GCP project id. Use the form 'ml-train-prod'."
    del fleet["account"]
    resolve(fleet)  # optional: the provider then takes the project from the environment
