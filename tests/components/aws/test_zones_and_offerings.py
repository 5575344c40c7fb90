"""AWS zones by zone id: the catalogue's offerings agree with the EC2 offering data moto ships (read here straight
from moto's files, the test's oracle), the spec refuses zone names with the reason, the VPC is built by zone id,
and the system node group spreads over the cluster's zones."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections import defaultdict
from importlib import resources
from pathlib import Path

import pytest

from components import catalog
from components.aws.cluster import vpc_cni_version
from components.catalog import Cloud
from components.errors import SpecError
from components.validate import resolve
from tests.conftest import Capture, example_fleet, of_type, one

ROOT = Path(__file__).resolve().parents[3]


def _moto() -> dict[str, dict[str, set[str]]]:
    folder = resources.files("moto") / "ec2" / "resources" / "instance_type_offerings" / "availability-zone-id"
    out: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for entry in folder.iterdir():
        for row in json.loads(gzip.decompress(entry.read_bytes())):
            out[row["InstanceType"]][entry.name.split(".")[0]].add(row["Location"])
    return out


MOTO = _moto()
AWS_TYPES = [m.name for m in catalog.for_cloud(Cloud.AWS)]


@pytest.mark.parametrize("machine", AWS_TYPES)
def test_offerings_agree_with_moto(machine: str) -> None:
    ours = {region: set(zones) for region, zones in catalog.regions(Cloud.AWS, machine).items()}
    assert ours == {region: zones for region, zones in MOTO[machine].items()}


def test_the_disagreements_the_review_found_are_gone() -> None:
    """Spot checks against moto's us-east-1 / eu-north-1 files (the hand-typed lists had these wrong)."""
    assert set(catalog.regions(Cloud.AWS, "p5en.48xlarge")["us-east-1"]) == {"use1-az2", "use1-az6"}
    assert set(catalog.regions(Cloud.AWS, "p6-b200.48xlarge")["us-east-1"]) == {"use1-az6"}
    assert "eu-north-1" in catalog.regions(Cloud.AWS, "p6-b200.48xlarge")


def test_the_derivation_script_finds_no_difference() -> None:
    done = subprocess.run([sys.executable, "scripts/derive_aws_offerings.py", "--check"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    source = json.loads((ROOT / "components/data/offerings_source.json").read_text())["aws"]
    assert source["location_type"] == "availability-zone-id" and "moto" in source["source"]


def test_a_zone_name_is_refused_with_how_to_find_its_id() -> None:
    fleet = example_fleet("aws-train")
    fleet["clusters"][0]["zones"] = ["use1-az6", "us-east-1a"]
    with pytest.raises(SpecError) as caught:
        resolve(fleet)
    [problem] = caught.value.problems
    assert problem.path == "clusters[0].zones[1]"
    assert "zone name" in problem.message and "describe-availability-zones" in problem.fix


def test_a_zone_id_of_another_region_is_unknown() -> None:
    fleet = example_fleet("aws-train")
    fleet["clusters"][0]["zones"] = ["use1-az6", "usw2-az1"]
    with pytest.raises(SpecError) as caught:
        resolve(fleet)
    assert [p.path for p in caught.value.problems] == ["clusters[0].zones[1]"]


def test_a_zone_without_the_system_machine_is_refused() -> None:
    """m7i.2xlarge is not in use1-az3 (moto's us-east-1 file), though p5.48xlarge is."""
    assert "use1-az3" not in catalog.regions(Cloud.AWS, "m7i.2xlarge")["us-east-1"]
    fleet = example_fleet("aws-train")
    fleet["clusters"][0]["zones"] = ["use1-az6", "use1-az3"]
    with pytest.raises(SpecError) as caught:
        resolve(fleet)
    assert [p.path for p in caught.value.problems] == ["clusters[0].zones"]


@pytest.mark.parametrize(("version", "ok"), [("v1.18.4-eksbuild.1", False), ("v1.18.5-eksbuild.1", True),
                                             ("v1.19.0-eksbuild.1", True), ("v1.17.9-eksbuild.2", False)])
def test_vpc_cni_for_efa_only_interfaces(version: str, ok: bool) -> None:
    if ok:
        assert vpc_cni_version(version) == version
    else:
        with pytest.raises(ValueError, match=r"1\.18\.5"):
            vpc_cni_version(version)


def test_subnets_by_zone_id_and_the_system_group_spread(capture: Capture) -> None:
    graph = capture(example_fleet("aws-train"))
    private = [r for r in of_type(graph, "ec2/subnet:Subnet") if "-private-" in r.name]
    assert sorted(r.inputs["availabilityZoneId"] for r in private) == ["use1-az4", "use1-az6"]
    assert not any("availabilityZone" in r.inputs for r in private)
    assert len(one(graph, "eks/nodeGroup:NodeGroup", "train-system-ng").inputs["subnetIds"]) == 2
    assert len(one(graph, "eks/nodeGroup:NodeGroup", "train-h100-ng").inputs["subnetIds"]) == 1


def test_the_preview_prints_a_capacity_block_pools_upgrade_path(capture: Capture, monkeypatch) -> None:
    import pulumi

    warned: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *a, **k: warned.append(message))
    capture(example_fleet("aws-train"))
    [path] = [w for w in warned if "capacity-block pool" in w]
    assert "pool h100" in path and "desiredSize=0" in path and "maxSize=16" in path
    assert not [w for w in warned if "a100-eval" in w]  # on demand: no such path needed


def test_instances_volumes_and_interfaces_get_the_cost_tags(capture: Capture) -> None:
    """README: AWS instances, volumes and interfaces get the cost tags from the launch template (no others: a tag
    there is baked into template versions, and a change rolls the nodes)."""
    graph = capture(example_fleet("aws-train"))
    expected = {"team": "ml-platform", "cost-center": "cc-4100", "gpufleet-cluster": "train"}
    for template in of_type(graph, "ec2/launchTemplate:LaunchTemplate"):
        specs = {s["resourceType"]: s["tags"] for s in template.inputs["tagSpecifications"]}
        assert specs == {"instance": expected, "volume": expected, "network-interface": expected}, template.name
