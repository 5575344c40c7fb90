"""The AKS translator under the mock runtime: assertions on the captured graph (type, name, parent, inputs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components import catalog
from components.catalog import Cloud, Fabric
from gpufleet.engine.capture import Graph, run_program
from stacks.config import CONFIG_KEY
from tests.conftest import Capture, example_fleet, of_type, one

CRG = ("/subscriptions/3f2a6b1c-9d4e-4f5a-8b7c-1d2e3f4a5b6c/resourceGroups/capacity/providers/"
       "Microsoft.Compute/capacityReservationGroups/nd-h100-eastus2")
GPU_SIZES = [m for m in catalog.for_cloud(Cloud.AZURE) if m.gpus]


@pytest.fixture(scope="module")
def example() -> Graph:
    return run_program("azure-train", {CONFIG_KEY: example_fleet("azure-train")})


def _fleet_with_pool(pool: dict[str, Any], region: str = "eastus2", **cluster: Any) -> dict[str, Any]:
    fleet = example_fleet("azure-train")
    spec = fleet["clusters"][0]
    spec.update(region=region, zones=["1"], node_pools=[{"zone": "1", **pool}], **cluster)
    spec["addons"]["kueue_teams"] = []
    return fleet


def test_every_child_is_parented_and_named_after_its_component(example: Graph) -> None:
    by_key = example.by_key()
    for r in example.resources:
        if r.type.startswith("azure-native:"):
            assert r.parent, r.key
            assert r.name.startswith(by_key[r.parent].name), r.key


def test_pool_vm_sizes_come_from_the_catalogue(example: Graph) -> None:
    assert one(example, "AgentPool", "train-h100-pool").inputs["vmSize"] == "Standard_ND96isr_H100_v5"
    spot = one(example, "AgentPool", "train-evalspot-pool").inputs
    assert spot["vmSize"] == "Standard_NC40ads_H100_v5"  # accelerator H100 x 1 resolves the NC H100 v5 size
    system = one(example, "ManagedCluster", "train-aks").inputs["agentPoolProfiles"][0]
    assert (system["mode"], system["vmSize"]) == ("System", "Standard_D8s_v5")


@pytest.mark.parametrize("machine", GPU_SIZES, ids=lambda m: m.name)
def test_each_gpu_size_builds_its_agent_pool(capture: Capture, machine: catalog.MachineType) -> None:
    region = "eastus2" if "eastus2" in catalog.regions(Cloud.AZURE, machine.name) else \
        sorted(catalog.regions(Cloud.AZURE, machine.name))[0]
    graph = capture(_fleet_with_pool({"name": "gpu", "machine_type": machine.name, "nodes": {"min": 0, "max": 2}},
                                     region))
    inputs = one(graph, "AgentPool", "train-gpu-pool").inputs
    assert (inputs["vmSize"], inputs["osSKU"], inputs["availabilityZones"]) == (machine.name, "Ubuntu", ["1"])
    assert inputs["nodeLabels"]["gpufleet.io/fabric"] == machine.fabric.value
    features = of_type(graph, "SubscriptionFeatureRegistration")
    needs_ib = machine.fabric is Fabric.INFINIBAND and "GB200" not in machine.name
    assert [f.inputs["featureName"] for f in features] == (["AKSInfinibandSupport"] if needs_ib else [])


@pytest.mark.parametrize(("owner", "driver"), [("operator", "None"), ("cloud", "Install")])
def test_gpu_driver_has_exactly_one_owner(capture: Capture, owner: str, driver: str) -> None:
    fleet = example_fleet("azure-train")
    fleet["clusters"][0]["addons"]["gpu_driver"] = owner
    graph = capture(fleet)
    for pool in of_type(graph, "containerservice:AgentPool"):
        assert pool.inputs["gpuProfile"] == {"driver": driver}
    # NC H100 v5 is not among the GPUs Azure Linux supports (V100, T4: learn.microsoft.com/azure/azure-linux/
    # intro-azure-linux), and InfiniBand pools need Ubuntu: every pool of the example runs Ubuntu either way
    assert one(graph, "AgentPool", "train-evalspot-pool").inputs["osSKU"] == "Ubuntu"
    assert one(graph, "AgentPool", "train-h100-pool").inputs["osSKU"] == "Ubuntu"


@pytest.mark.parametrize(("gpu", "fabric", "driver", "expected"), [
    ("T4", "none", "cloud", "AzureLinux"), ("V100", "none", "cloud", "AzureLinux"),
    ("T4", "none", "operator", "Ubuntu"), ("H100", "none", "cloud", "Ubuntu"), ("A100", "none", "cloud", "Ubuntu"),
    ("V100", "infiniband", "cloud", "Ubuntu")])
def test_azure_linux_only_for_the_gpus_it_supports(gpu: str, fabric: str, driver: str, expected: str) -> None:
    from types import SimpleNamespace

    from components.azure.agentpool import os_sku
    from components.catalog import Fabric as F

    pool = SimpleNamespace(machine=SimpleNamespace(gpu=gpu), fabric=F(fabric))  # a fake Pool: only what os_sku reads
    assert os_sku(pool, driver) == expected  # type: ignore[arg-type]


def test_reserved_pool_draws_from_the_capacity_reservation_group(example: Graph) -> None:
    pool = one(example, "AgentPool", "train-h100-pool").inputs
    assert pool["capacityReservationGroupID"] == CRG
    assert pool["scaleSetPriority"] == "Regular"
    assert "spotMaxPrice" not in pool and "scaleSetEvictionPolicy" not in pool
    assert (pool["minCount"], pool["maxCount"], pool["count"], pool["enableAutoScaling"]) == (8, 8, 8, True)
    assert pool["upgradeSettings"] == {"maxSurge": "1"}  # one GPU node at a time


def test_spot_pool_priority_eviction_price_and_taint(example: Graph) -> None:
    pool = one(example, "AgentPool", "train-evalspot-pool").inputs
    assert (pool["scaleSetPriority"], pool["scaleSetEvictionPolicy"], pool["spotMaxPrice"]) == ("Spot", "Delete", 4.5)
    assert "capacityReservationGroupID" not in pool
    assert "kubernetes.azure.com/scalesetpriority=spot:NoSchedule" in pool["nodeTaints"]
    assert "upgradeSettings" not in pool  # AKS refuses max surge on spot pools


def test_spot_without_a_cap_pays_up_to_on_demand(capture: Capture) -> None:
    graph = capture(_fleet_with_pool({"name": "spot", "accelerator": "H100-NVL", "gpus": 1,
                                      "nodes": {"min": 0, "max": 2}, "capacity": {"type": "spot"}}))
    assert one(graph, "AgentPool", "train-spot-pool").inputs["spotMaxPrice"] == -1


def test_gpu_taints_labels_and_user_taints(capture: Capture) -> None:
    graph = capture(_fleet_with_pool({"name": "gpu", "machine_type": "Standard_ND96isr_H100_v5",
                                      "nodes": {"max": 2}, "labels": {"team": "a"},
                                      "taints": [{"key": "dedicated", "value": "a", "effect": "NoExecute"},
                                                 {"key": "nvidia.com/gpu", "value": "x"}]}))
    pool = one(graph, "AgentPool", "train-gpu-pool").inputs
    # the health gate's startup taint: self-healing is on by default, so new nodes wait for their gate
    assert pool["nodeTaints"] == ["nvidia.com/gpu=true:NoSchedule", "gpufleet.io/health-gate=pending:NoSchedule",
                                  "dedicated=a:NoExecute"]
    assert pool["nodeLabels"] == {"gpufleet.io/pool": "gpu", "gpufleet.io/gpu": "H100",
                                  "gpufleet.io/fabric": "infiniband", "team": "a"}


def test_infiniband_pools_wait_for_the_subscription_feature(example: Graph) -> None:
    feature = one(example, "SubscriptionFeatureRegistration", "train-infiniband")
    assert (feature.inputs["providerNamespace"], feature.inputs["featureName"]) == (
        "Microsoft.ContainerService", "AKSInfinibandSupport")
    assert feature.key in one(example, "GpuAgentPool", "train-h100").dependencies
    assert feature.key not in one(example, "GpuAgentPool", "train-evalspot").dependencies


def test_private_cluster_with_entra_id_and_no_local_accounts(example: Graph) -> None:
    aks = one(example, "ManagedCluster", "train-aks").inputs
    assert aks["apiServerAccessProfile"]["enablePrivateCluster"] is True
    assert aks["apiServerAccessProfile"]["privateDNSZone"] == "system"
    assert aks["disableLocalAccounts"] is True
    assert aks["aadProfile"] == {"managed": True, "enableAzureRBAC": True,
                                 "adminGroupObjectIDs": ["5b8f3c2e-7a41-4d6b-9e0f-2c3d4e5f6a7b"]}
    assert aks["identity"]["type"] == "UserAssigned"


def test_public_endpoint_is_limited_to_its_cidrs(capture: Capture) -> None:
    fleet = example_fleet("azure-train")
    fleet["clusters"][0].update(endpoint="public", public_access_cidrs=["203.0.113.0/24"],
                                deploy={"egress_cidrs": ["203.0.113.7/32"]})
    access = one(capture(fleet), "ManagedCluster", "train-aks").inputs["apiServerAccessProfile"]
    assert access["enablePrivateCluster"] is False
    assert access["authorizedIPRanges"] == ["203.0.113.0/24"]


def test_oidc_workload_identity_and_cni_overlay(example: Graph) -> None:
    aks = one(example, "ManagedCluster", "train-aks").inputs
    assert aks["oidcIssuerProfile"] == {"enabled": True}
    assert aks["securityProfile"]["workloadIdentity"] == {"enabled": True}
    net = aks["networkProfile"]
    assert (net["networkPlugin"], net["networkPluginMode"], net["outboundType"]) == (
        "azure", "overlay", "userAssignedNATGateway")
    assert "/natGateways/train-net-nat" in one(example, "Subnet", "train-net-nodes").inputs["natGateway"]["id"]


def test_control_plane_identity_joins_only_the_nodes_subnet(example: Graph) -> None:
    grant = one(example, "RoleAssignment", "train-subnet-join").inputs
    assert grant["scope"] == one(example, "ManagedCluster", "train-aks").inputs["agentPoolProfiles"][0]["vnetSubnetID"]
    assert grant["roleDefinitionId"].endswith("/roleDefinitions/4d97b98b-1d4f-4787-a291-c67834d212e7")
    assert grant["principalType"] == "ServicePrincipal"


def test_upgrades_are_held_to_the_maintenance_window(example: Graph) -> None:
    aks = one(example, "ManagedCluster", "train-aks").inputs
    assert aks["autoUpgradeProfile"] == {"upgradeChannel": "patch", "nodeOSUpgradeChannel": "NodeImage"}
    for config in ("aksManagedAutoUpgradeSchedule", "aksManagedNodeOSUpgradeSchedule"):
        window = one(example, "MaintenanceConfiguration", f"train-{config}").inputs
        assert window["configName"] == config
        assert window["maintenanceWindow"]["schedule"] == {"weekly": {"dayOfWeek": "Sunday", "intervalWeeks": 1}}
        assert window["maintenanceWindow"]["durationHours"] == 4


def test_storage_account_is_hardened(example: Graph) -> None:
    account = one(example, "StorageAccount", "train-checkpoints-account").inputs
    assert account["publicNetworkAccess"] == "Disabled"
    assert account["minimumTlsVersion"] == "TLS1_2"
    assert account["encryption"]["requireInfrastructureEncryption"] is True
    assert account["allowBlobPublicAccess"] is False and account["enableHttpsTrafficOnly"] is True
    assert account["allowSharedKeyAccess"] is True  # AMLFS blob integration signs SAS tokens with the key
    assert len(account["accountName"]) <= 24 and account["accountName"].isalnum()
    endpoint = one(example, "PrivateEndpoint", "train-checkpoints-blob-pe").inputs
    assert endpoint["privateLinkServiceConnections"][0]["groupIds"] == ["blob"]


def test_account_without_lustre_refuses_shared_keys(capture: Capture) -> None:
    fleet = example_fleet("azure-train")
    fleet["clusters"][0]["storage"].pop("lustre")
    graph = capture(fleet)
    assert one(graph, "StorageAccount", "train-checkpoints-account").inputs["allowSharedKeyAccess"] is False
    assert not of_type(graph, "AmlFilesystem")


def test_lifecycle_expires_old_versions_and_cools_checkpoints(example: Graph) -> None:
    actions = one(example, "ManagementPolicy", "train-checkpoints-lifecycle").inputs["policy"]["rules"][0][
        "definition"]["actions"]
    assert actions["version"]["delete"]["daysAfterCreationGreaterThan"] == 14
    assert actions["baseBlob"]["tierToCold"]["daysAfterModificationGreaterThan"] == 90
    assert one(example, "BlobServiceProperties", "train-checkpoints-blob-service").inputs["isVersioningEnabled"]


def test_lustre_hsm_links_the_checkpoint_and_logging_containers(example: Graph) -> None:
    fs = one(example, "AmlFilesystem", "train-lustre-amlfs").inputs
    assert (fs["sku"]["name"], fs["storageCapacityTiB"]) == ("AMLFS-Durable-Premium-500", 16)
    settings = fs["hsm"]["settings"]
    assert settings["container"].endswith("/blobServices/default/containers/checkpoints")
    assert settings["loggingContainer"].endswith("/blobServices/default/containers/lustre-logs")
    assert settings["container"].rsplit("/containers/", 1)[0] == settings["loggingContainer"].rsplit("/containers/")[0]
    assert settings["importPrefixesInitial"] == ["/datasets", "/checkpoints"]
    assert fs["filesystemSubnet"].endswith("/subnets/" + fs["filesystemSubnet"].rsplit("/", 1)[-1])
    assert one(example, "Subnet", "train-net-lustre").inputs["addressPrefix"] == "10.20.72.0/27"  # 16 TiB: a /27


def test_one_standing_blob_job_auto_import_of_datasets_with_the_change_feed(example: Graph) -> None:
    """AMLFS runs one blob-integration job at a time and auto-import needs the account's change feed kept >= 7
    days (https://learn.microsoft.com/azure/azure-managed-lustre/auto-import): the one standing job imports the
    datasets prefix; checkpoints are exported on demand (the lustre-export stack output)."""
    imports = one(example, "AutoImportJob", "train-lustre-auto-import").inputs
    assert imports["amlFilesystemName"] == "train-lustre"
    assert imports["autoImportPrefixes"] == ["/datasets"] and imports["adminStatus"] == "Enable"
    assert not of_type(example, "storagecache:AutoExportJob")
    feeds = [r.inputs.get("changeFeed") for r in of_type(example, "storage:BlobServiceProperties")]
    assert {"enabled": True, "retentionInDays": 7} in feeds


def test_the_export_command_pauses_auto_import_around_the_archive() -> None:
    from components.azure.lustre import export_command

    command = export_command("rg", "train-lustre", "/checkpoints")
    steps = [step.strip() for step in command.replace("&&", ";").split(";")]
    assert steps[0].endswith("--admin-status Disable") and steps[-1].endswith("--admin-status Enable")
    assert "az amlfs archive --resource-group rg --amlfs-name train-lustre --filesystem-path /checkpoints" in steps


def test_hsm_roles_are_granted_when_the_principal_is_known(tmp_path: Path) -> None:
    program = tmp_path / "__main__.py"
    program.write_text(
        "import pulumi, pulumi_azure_native as azure\n"
        "from stacks import config\nfrom components.azure.gpu_cluster import AzureGpuCluster\n"
        "cluster = config.load().clusters[0]\n"
        "p = azure.Provider('p', location=cluster.spec.region)\n"
        "AzureGpuCluster('train', cluster, pulumi.ResourceOptions(providers={'azure-native': p}),\n"
        "                storage_principal_id='11111111-2222-3333-4444-555555555555')\n")
    graph = run_program("azure-train", {CONFIG_KEY: example_fleet("azure-train")}, program)
    roles = {r.name: r.inputs for r in of_type(graph, "RoleAssignment") if r.name.startswith("train-lustre")}
    assert sorted(r["roleDefinitionId"].rsplit("/", 1)[-1] for r in roles.values()) == [
        "17d1049b-9a84-46fb-8f53-869881c3d3ab", "ba92f5b4-2d11-453d-a403-e96b0029c9fe"]
    account = one(graph, "StorageAccount", "train-checkpoints-account")
    assert all(r["scope"].endswith("/storageAccounts/" + account.inputs["accountName"]) for r in roles.values())
    fs = one(graph, "AmlFilesystem", "train-lustre-amlfs")
    assert {f"azure-native:authorization:RoleAssignment::{n}" for n in roles} <= set(fs.dependencies)


def test_kubeconfig_is_a_secret_exec_kubeconfig(tmp_path: Path) -> None:
    out = tmp_path / "kubeconfig.txt"
    program = tmp_path / "__main__.py"
    program.write_text(
        "import pulumi\nfrom stacks import config\nfrom components.azure import deploy\n"
        "built = deploy(config.load().clusters[0])\n"
        "pulumi.Output.all(pulumi.Output.from_input(built.kubeconfig).is_secret(), built.kubeconfig).apply(\n"
        f"    lambda a: open({str(out)!r}, 'w').write(f'{{a[0]}}\\n{{a[1]}}'))\n")
    run_program("azure-train", {CONFIG_KEY: example_fleet("azure-train")}, program)
    secret, kubeconfig = out.read_text().split("\n", 1)
    assert secret == "True"
    assert "command: kubelogin" in kubeconfig and "privatelink" in kubeconfig


def test_existing_vnet_gets_our_subnets_and_no_new_vnet(capture: Capture) -> None:
    vnet = ("/subscriptions/3f2a6b1c-9d4e-4f5a-8b7c-1d2e3f4a5b6c/resourceGroups/shared-net/providers/"
            "Microsoft.Network/virtualNetworks/hub")
    fleet = example_fleet("azure-train")
    fleet["clusters"][0]["existing_network"] = vnet
    graph = capture(fleet)
    assert not of_type(graph, "network:VirtualNetwork")
    nodes = one(graph, "Subnet", "train-net-nodes").inputs
    assert (nodes["resourceGroupName"], nodes["virtualNetworkName"]) == ("shared-net", "hub")
