"""The EKS translator under the mock runtime: assertions on the captured graph (type, name, parent, inputs)."""

from __future__ import annotations

from typing import Any

import pytest

from components import catalog
from components.catalog import Cloud, Fabric
from tests.conftest import Capture, example_fleet, of_type, one

EFA_MACHINES = [m for m in catalog.for_cloud(Cloud.AWS) if m.fabric is Fabric.EFA]


def _second_zone(region: str, zone: str) -> str:
    """Another zone of the region where the system pool's type runs: the EKS control plane needs two."""
    return sorted(set(catalog.regions(Cloud.AWS, "m7i.2xlarge")[region]) - {zone})[0]


def _fleet_with_pool(pool: dict[str, Any], region: str = "us-east-1", zone: str = "use1-az6") -> dict[str, Any]:
    fleet = example_fleet("aws-train")
    cluster = fleet["clusters"][0]
    cluster.update(region=region, zones=[zone, _second_zone(region, zone)], node_pools=[{"zone": zone, **pool}])
    cluster["addons"]["kueue_teams"] = []
    cluster.pop("network_profiles", None)
    cluster["storage"] = {"buckets": [{"name": "ckpt"}]}
    return fleet


def _region_for(machine: str) -> tuple[str, str]:
    regions = catalog.regions(Cloud.AWS, machine)
    region = "us-east-1" if "us-east-1" in regions else sorted(regions)[0]
    return region, regions[region][0]


@pytest.mark.parametrize("machine", EFA_MACHINES, ids=lambda m: m.name)
def test_launch_template_has_one_interface_per_efa_card_in_order(capture: Capture,
                                                                 machine: catalog.MachineType) -> None:
    region, zone = _region_for(machine.name)
    graph = capture(_fleet_with_pool({"name": "gpu", "machine_type": machine.name, "nodes": {"min": 2, "max": 2}},
                                     region, zone))
    interfaces = one(graph, "LaunchTemplate", "train-gpu-lt").inputs["networkInterfaces"]
    assert len(interfaces) == machine.efa_interfaces
    assert [i["networkCardIndex"] for i in interfaces] == list(range(machine.efa_interfaces))
    assert (interfaces[0]["interfaceType"], interfaces[0]["deviceIndex"]) == ("efa", 0)
    assert all((i["interfaceType"], i["deviceIndex"]) == ("efa-only", 1) for i in interfaces[1:])
    assert all(i["associatePublicIpAddress"] == "false" for i in interfaces)
    efa_group = one(graph, "SecurityGroup", "train-efa")
    assert all(efa_group.key in _refs(i["securityGroups"], graph) for i in interfaces)


def _refs(values: list[str], graph: Any) -> set[str]:
    """Security group ids in the captured inputs back to the resource keys that own them."""
    from gpufleet.engine.fakes.aws import ID_PREFIX
    from gpufleet.engine.fakes.base import hex_id

    owners = {ID_PREFIX["aws:ec2/securityGroup:SecurityGroup"] + hex_id(r.type + r.name): r.key
              for r in of_type(graph, "ec2/securityGroup:SecurityGroup")}
    return {owners.get(v, v) for v in values}


def test_capacity_block_pool(capture: Capture) -> None:
    graph = capture(example_fleet("aws-train"))
    template = one(graph, "LaunchTemplate", "train-h100-lt").inputs
    assert template["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert template["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0a1b2c3d4e5f60718"}}
    assert "placement" not in template  # a capacity block is its own UltraCluster placement
    group = one(graph, "NodeGroup", "train-h100-ng").inputs
    assert group["capacityType"] == "CAPACITY_BLOCK"
    assert group["instanceTypes"] == ["p5.48xlarge"]
    assert group["amiType"] == "AL2023_x86_64_NVIDIA"
    assert group["scalingConfig"] == {"minSize": 16, "maxSize": 16, "desiredSize": 16}
    assert group["updateConfig"] == {"maxUnavailable": 1}
    assert {"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"} in group["taints"]
    assert {"key": "vpc.amazonaws.com/efa", "value": "true", "effect": "NO_SCHEDULE"} in group["taints"]
    assert group["labels"]["gpufleet.io/gpu"] == "H100" and group["labels"]["workload"] == "pretraining"


def test_on_demand_efa_pool_gets_a_cluster_placement_group(capture: Capture) -> None:
    graph = capture(example_fleet("aws-train"))
    group = one(graph, "PlacementGroup", "train-a100-eval-pg")
    assert group.inputs["strategy"] == "cluster"
    assert group.parent == "gpufleet:aws:GpuNodeGroup::train-a100-eval"
    template = one(graph, "LaunchTemplate", "train-a100-eval-lt")
    assert template.inputs["placement"] == {"groupName": "train-a100-eval-pg-" + _suffix("train-a100-eval-pg")}
    assert "capacityReservationSpecification" not in template.inputs
    assert one(graph, "NodeGroup", "train-a100-eval-ng").inputs["capacityType"] == "ON_DEMAND"


def _suffix(name: str) -> str:
    from gpufleet.engine.fakes.base import hex_id

    return hex_id("aws:ec2/placementGroup:PlacementGroup" + name, 7)


def test_reservation_and_spot_pools(capture: Capture) -> None:
    reserved = capture(_fleet_with_pool({"name": "gpu", "machine_type": "p5.48xlarge", "nodes": {"max": 4},
                                         "capacity": {"type": "reservation", "id": "cr-0123456789abcdef0"}}))
    template = one(reserved, "LaunchTemplate", "train-gpu-lt").inputs
    assert template["capacityReservationSpecification"]["capacityReservationTarget"] == {
        "capacityReservationId": "cr-0123456789abcdef0"}
    assert "instanceMarketOptions" not in template
    assert one(reserved, "NodeGroup", "train-gpu-ng").inputs["capacityType"] == "ON_DEMAND"
    spot = capture(_fleet_with_pool({"name": "gpu", "machine_type": "g6.xlarge", "nodes": {"max": 4},
                                     "capacity": {"type": "spot"}}))
    assert one(spot, "NodeGroup", "train-gpu-ng").inputs["capacityType"] == "SPOT"
    template = one(spot, "LaunchTemplate", "train-gpu-lt").inputs
    assert "networkInterfaces" not in template and "placement" not in template
    assert not of_type(spot, "PlacementGroup") and not any(r.name == "train-efa" for r in spot.resources)


def test_every_launch_template_requires_imdsv2_and_encrypts_the_root_disk(capture: Capture) -> None:
    graph = capture(example_fleet("aws-train"))
    templates = of_type(graph, "LaunchTemplate")
    assert len(templates) == 3
    for t in templates:
        assert t.inputs["metadataOptions"]["httpTokens"] == "required"
        assert t.inputs["blockDeviceMappings"][0]["ebs"]["encrypted"] == "true"
    raid = one(graph, "LaunchTemplate", "train-h100-lt").inputs["userData"]
    import base64

    assert "strategy: RAID0" in base64.b64decode(raid).decode()


def test_control_plane_is_private_encrypted_and_logged(capture: Capture) -> None:
    graph = capture(example_fleet("aws-train"))
    eks = one(graph, "eks/cluster:Cluster", "train-eks")
    assert eks.parent == "gpufleet:aws:EksCluster::train"
    vpc = eks.inputs["vpcConfig"]
    assert vpc["endpointPrivateAccess"] is True and vpc["endpointPublicAccess"] is False
    assert eks.inputs["encryptionConfig"]["resources"] == ["secrets"]
    assert "aws:kms/key:Key::train-secrets" in eks.dependencies
    assert set(eks.inputs["enabledClusterLogTypes"]) >= {"api", "audit", "authenticator"}
    assert eks.inputs["accessConfig"]["authenticationMode"] == "API"
    addons = {a.inputs["addonName"]: a.inputs for a in of_type(graph, "eks/addon:Addon")}
    assert set(addons) == {"vpc-cni", "coredns", "kube-proxy", "eks-pod-identity-agent"}
    assert addons["vpc-cni"]["podIdentityAssociations"][0]["serviceAccount"] == "aws-node"


def test_node_role_has_no_wildcards_and_only_node_policies(capture: Capture) -> None:
    graph = capture(example_fleet("aws-train"))
    attached = [r.inputs["policyArn"] for r in of_type(graph, "RolePolicyAttachment")
                if r.name.startswith("train-nodes-")]
    assert sorted(a.rsplit("/", 1)[1] for a in attached) == ["AmazonEC2ContainerRegistryPullOnly",
                                                              "AmazonEKSWorkerNodeMinimalPolicy"]


def test_storage_is_private_versioned_encrypted_and_linked_to_lustre(capture: Capture) -> None:
    graph = capture(example_fleet("aws-train"))
    block = one(graph, "BucketPublicAccessBlock", "train-checkpoints-public-access").inputs
    assert all(block[k] is True for k in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls",
                                          "restrictPublicBuckets"))
    assert one(graph, "BucketVersioning", "train-checkpoints-versioning").inputs[
        "versioningConfiguration"]["status"] == "Enabled"
    sse = one(graph, "BucketServerSideEncryptionConfiguration", "train-checkpoints-encryption").inputs
    assert sse["rules"][0]["applyServerSideEncryptionByDefault"]["sseAlgorithm"] == "aws:kms"
    fsx = one(graph, "LustreFileSystem", "train-lustre-fsx").inputs
    assert (fsx["deploymentType"], fsx["storageCapacity"], fsx["perUnitStorageThroughput"]) == (
        "PERSISTENT_2", 4800, 1000)
    assert fsx["efaEnabled"] is True and fsx["kmsKeyId"]
    # what EFA needs besides PERSISTENT_2 (FSx for Lustre User Guide, efa-file-systems.html): a metadata
    # configuration, which Lustre 2.12 does not take (botocore fsx FileSystemTypeVersion doc)
    assert (fsx["metadataConfiguration"]["mode"], fsx["fileSystemTypeVersion"]) == ("AUTOMATIC", "2.15")
    bucket = one(graph, "s3/bucket:Bucket", "train-checkpoints-bucket")
    links = {r.inputs["fileSystemPath"]: r for r in of_type(graph, "DataRepositoryAssociation")}
    assert set(links) == {"/datasets", "/checkpoints"}
    for link in links.values():
        assert link.inputs["dataRepositoryPath"].startswith("s3://checkpoints-")  # bucket_prefix + fake suffix
        assert bucket.key in link.dependencies
        assert link.inputs["s3"]["autoImportPolicy"]["events"] == ["NEW", "CHANGED", "DELETED"]
        assert link.inputs["s3"]["autoExportPolicy"]["events"] == ["NEW", "CHANGED", "DELETED"]
    rules = [r for r in of_type(graph, "SecurityGroupIngressRule")
             if r.parent == "gpufleet:aws:LustreFileSystem::train-lustre"]
    assert {(r.inputs["fromPort"], r.inputs["toPort"]) for r in rules} == {(988, 988), (1018, 1023)}
    assert all("cidrIpv4" not in r.inputs for r in rules)


def test_dev_stack_has_no_lustre_and_no_efa(capture: Capture) -> None:
    graph = capture(example_fleet("dev"))
    assert not of_type(graph, "LustreFileSystem") and not of_type(graph, "PlacementGroup")
    assert one(graph, "NodeGroup", "dev-l4-ng").inputs["instanceTypes"] == ["g6.xlarge"]


def test_existing_vpc_is_used_instead_of_a_new_one(capture: Capture) -> None:
    fleet = example_fleet("dev")
    fleet["clusters"][0]["existing_network"] = "vpc-0123456789abcdef0"
    graph = capture(fleet)
    assert not of_type(graph, "ec2/vpc:Vpc") and not of_type(graph, "NatGateway")
    assert one(graph, "NodeGroup", "dev-l4-ng").inputs["subnetIds"][0].startswith("subnet-")
