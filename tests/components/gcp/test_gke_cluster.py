"""The control plane, identities, keys, storage and the example stack: private nodes/endpoint, Workload
Identity, upgrades held for training, CSI drivers, node service account, CMEK, bucket and Managed Lustre."""

from __future__ import annotations

import copy
import json
from typing import Any

import pulumi
import pytest

from components.gcp.cluster import kubeconfig
from components.gcp.storage import LustreArgs, ManagedLustre
from components.spec import LustreSpec
from gpufleet.engine.mocks import FleetMocks
from tests.components.gcp.fleets import PROJECT, VARIANT, ZOO, graph_of
from tests.conftest import example_fleet, of_type, one


def _cluster(fleet: dict[str, Any] = ZOO) -> dict[str, Any]:
    return one(graph_of(fleet), "container/cluster:Cluster", "train-gke").inputs


def test_private_nodes_and_endpoint_by_default() -> None:
    cluster = _cluster()
    assert cluster["privateClusterConfig"]["enablePrivateNodes"] is True
    assert cluster["privateClusterConfig"]["enablePrivateEndpoint"] is True
    assert cluster["masterAuthorizedNetworksConfig"]["cidrBlocks"] == []


def test_public_endpoint_only_for_listed_ranges() -> None:
    cluster = _cluster(VARIANT)
    assert cluster["privateClusterConfig"]["enablePrivateEndpoint"] is False
    assert cluster["privateClusterConfig"]["enablePrivateNodes"] is True
    assert [c["cidrBlock"] for c in cluster["masterAuthorizedNetworksConfig"]["cidrBlocks"]] == ["203.0.113.0/24"]


def test_workload_identity_release_channel_and_upgrade_exclusion() -> None:
    cluster = _cluster()
    assert cluster["workloadIdentityConfig"] == {"workloadPool": f"{PROJECT}.svc.id.goog"}
    assert cluster["releaseChannel"] == {"channel": "REGULAR"} and cluster["minMasterVersion"] == "1.33"
    [exclusion] = cluster["maintenancePolicy"]["maintenanceExclusions"]
    assert exclusion["exclusionOptions"] == {"scope": "NO_MINOR_OR_NODE_UPGRADES",
                                             "endTimeBehavior": "UNTIL_END_OF_SUPPORT"}
    assert cluster["enableShieldedNodes"] is True and cluster["removeDefaultNodePool"] is True
    assert cluster["location"] == "us-central1" and cluster["deletionProtection"] is True


def test_dcgm_monitoring_and_csi_drivers() -> None:
    cluster = _cluster()
    assert "DCGM" in cluster["monitoringConfig"]["enableComponents"]
    assert cluster["monitoringConfig"]["managedPrometheus"] == {"enabled": True}
    # 1.33 (a minor: its early patches run before 1.33.2-gke.4655000) keeps the legacy port
    assert cluster["addonsConfig"]["lustreCsiDriverConfig"] == {"enabled": True, "enableLegacyLustrePort": True}
    assert cluster["addonsConfig"]["gcsFuseCsiDriverConfig"] == {"enabled": True}
    assert _cluster(VARIANT)["addonsConfig"]["lustreCsiDriverConfig"]["enableLegacyLustrePort"] is True  # 1.32


def test_dedicated_least_privilege_node_account_and_admins() -> None:
    graph = graph_of(ZOO)
    account = one(graph, "serviceaccount/account:Account", "train-nodes").inputs
    assert account["accountId"] == "train-gke-nodes"
    grants = {(m.inputs["role"], m.inputs["member"]) for m in of_type(graph, "projects/iAMMember:IAMMember")}
    node = "serviceAccount:train-gke-nodes@gpufleet-preview.iam.gserviceaccount.com"
    assert grants == {("roles/container.defaultNodeServiceAccount", node), ("roles/artifactregistry.reader", node),
                      ("roles/container.admin", "group:ml-admins@example.com"),
                      ("roles/container.admin", "user:ana@example.com")}


def test_every_child_is_parented_and_named_after_its_component() -> None:
    graph = graph_of(ZOO)
    by_key = graph.by_key()
    for resource in graph.resources:
        if not resource.type.startswith(("gcp:", "gpufleet:gcp:")):
            continue  # the provider, and the cloud-neutral add-on layer on top of the cluster
        if resource.parent is None:
            assert resource.type == "gpufleet:gcp:GpuCluster"
            continue
        parent = by_key[resource.parent]
        assert parent.type.startswith("gpufleet:gcp:") and resource.name.startswith(parent.name), resource.key


def test_customer_managed_keys_for_secrets_disks_and_data() -> None:
    graph = graph_of(ZOO)
    keys = {r.name: r for r in of_type(graph, "kms/cryptoKey:CryptoKey")}
    assert set(keys) == {"train-keys-secrets", "train-keys-disks", "train-keys-data"}
    assert {k.inputs["rotationPeriod"] for k in keys.values()} == {"7776000s"}
    grants = {(g.inputs["cryptoKeyId"].rsplit("/", 1)[1].rsplit("-", 1)[0], g.inputs["member"].split("@")[1])
              for g in of_type(graph, "kms/cryptoKeyIAMMember:CryptoKeyIAMMember")}
    assert grants == {("train-keys-secrets", "container-engine-robot.iam.gserviceaccount.com"),
                      ("train-keys-disks", "compute-system.iam.gserviceaccount.com"),
                      ("train-keys-data", "gs-project-accounts.iam.gserviceaccount.com"),
                      ("train-keys-data", "gcp-sa-lustre.iam.gserviceaccount.com")}
    cluster = one(graph, "container/cluster:Cluster", "train-gke")
    assert cluster.inputs["databaseEncryption"]["state"] == "ENCRYPTED"
    assert "gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember::train-keys-secrets-container-engine-robot" in \
        cluster.dependencies
    pool = one(graph, "container/nodePool:NodePool", "train-mega-np").inputs
    assert "/cryptoKeys/train-keys-disks-" in pool["nodeConfig"]["bootDiskKmsKey"]
    bucket = one(graph, "storage/bucket:Bucket", "train-checkpoints-bucket").inputs
    lustre = one(graph, "lustre/instance:Instance", "train-lustre-instance").inputs
    assert bucket["encryption"]["defaultKmsKeyName"] == lustre["kmsKey"] and "train-keys-data" in lustre["kmsKey"]


def test_bucket_and_lustre() -> None:
    graph = graph_of(ZOO)
    bucket = one(graph, "storage/bucket:Bucket", "train-checkpoints-bucket").inputs
    assert bucket["uniformBucketLevelAccess"] is True and bucket["publicAccessPrevention"] == "enforced"
    assert bucket["versioning"] == {"enabled": True}
    lustre = one(graph, "lustre/instance:Instance", "train-lustre-instance")
    assert lustre.inputs["capacityGib"] == "36000" and lustre.inputs["perUnitStorageThroughput"] == "500"
    assert lustre.inputs["location"] == "us-central1-b" and lustre.inputs["filesystem"] == "train"
    assert lustre.inputs["network"].startswith("projects/gpufleet-preview/global/networks/train-net-vpc-")
    assert "gcp:servicenetworking/connection:Connection::train-lustre-psa" in lustre.dependencies
    access = one(graph, "storage/bucketIAMMember:BucketIAMMember", "train-lustre-agent-bucket").inputs
    assert access["role"] == "roles/storage.objectUser"
    assert access["member"] == "serviceAccount:service-123456789012@gcp-sa-lustre.iam.gserviceaccount.com"
    firewall = one(graph, "compute/firewall:Firewall", "train-lustre-clients").inputs
    assert firewall["allows"] == [{"protocol": "tcp", "ports": ["988", "6988"]}]  # 1.33: the legacy port too
    assert lustre.inputs["gkeSupportEnabled"] is True
    assert firewall["sourceRanges"] == ["10.96.0.0/20"]
    assert firewall["targetServiceAccounts"] == ["train-gke-nodes@gpufleet-preview.iam.gserviceaccount.com"]


@pytest.fixture
def mocked() -> None:
    pulumi.runtime.set_mocks(FleetMocks(), project="gpufleet", stack="test", preview=False)


@pulumi.runtime.test
def test_lustre_hydration_command(mocked: None) -> None:
    lustre = ManagedLustre("t-lustre", LustreArgs(
        spec=LustreSpec(capacity_tib=9, throughput_mbps_per_tib=1000, bucket="b", import_path="/datasets/"),
        cluster_name="train", zone="us-central1-b", project=PROJECT, network_id="projects/p/global/networks/n",
        node_service_account="n@p.iam.gserviceaccount.com", bucket_name="ckpt-1234", legacy_port=False,
        labels={}, kms_key="projects/p/locations/us-central1/keyRings/r/cryptoKeys/data"))

    def check(commands: list[str]) -> None:
        assert commands[0] == ("gcloud lustre instances import-data train-lustre --project=ml-train-prod "
                               "--location=us-central1-b --gcs-path-uri=gs://ckpt-1234/datasets/ "
                               "--lustre-path=/datasets")
        assert commands[1].startswith("gcloud lustre instances export-data train-lustre ")
        assert commands[1].endswith("--gcs-path-uri=gs://ckpt-1234/checkpoints/ --lustre-path=/checkpoints")

    return pulumi.Output.all(lustre.import_command, lustre.export_command).apply(check)


@pytest.mark.parametrize("dns", [True, False])
@pulumi.runtime.test
def test_kubeconfig_uses_the_gke_auth_plugin(mocked: None, dns: bool) -> None:
    """Over the DNS endpoint: its name (gke-...gke.goog, the FAKE's form) and no CA, its certificate being public;
    over the IP endpoint: the address and the cluster CA."""
    import pulumi_gcp as gcp

    cluster = gcp.container.Cluster("k-gke", name="train", location="us-central1", initial_node_count=1,
                                    control_plane_endpoints_config={"dns_endpoint_config": {
                                        "allow_external_traffic": dns}})

    def check(text: str) -> None:
        config = json.loads(text)
        entry = config["clusters"][0]["cluster"]
        assert entry["server"].startswith("https://gke-") is dns and entry["server"].endswith(".gke.goog") is dns
        assert ("certificate-authority-data" in entry) is not dns
        assert config["users"][0]["user"]["exec"]["command"] == "gke-gcloud-auth-plugin"

    return kubeconfig(cluster, dns).apply(check)


def test_private_cluster_deployed_from_outside_opens_the_dns_endpoint() -> None:
    """gcp-train: private endpoint, deployer outside: the DNS endpoint takes user traffic; the VARIANT (a public
    endpoint) keeps it closed, and a runner inside the VPC gets its addresses into the authorized networks."""
    assert _cluster()["controlPlaneEndpointsConfig"] == {"dnsEndpointConfig": {"allowExternalTraffic": True}}
    assert _cluster(VARIANT)["controlPlaneEndpointsConfig"] == {"dnsEndpointConfig": {"allowExternalTraffic": False}}
    inside = copy.deepcopy(ZOO)
    inside["clusters"][0]["deploy"] = {"deployer": "network", "runner_cidrs": ["10.8.0.0/24"]}
    cluster = _cluster(inside)
    assert cluster["controlPlaneEndpointsConfig"] == {"dnsEndpointConfig": {"allowExternalTraffic": False}}
    assert [b["cidrBlock"] for b in cluster["masterAuthorizedNetworksConfig"]["cidrBlocks"]] == ["10.8.0.0/24"]


def test_example_stack() -> None:
    graph = graph_of(example_fleet("gcp-train"))
    pools = {p.name: p.inputs for p in of_type(graph, "container/nodePool:NodePool")}
    assert set(pools) == {"train-system-np", "train-h100-np", "train-h200-np"}
    assert pools["train-h100-np"]["nodeConfig"]["reservationAffinity"]["values"] == ["a3mega-train"]
    assert len(pools["train-h100-np"]["networkConfig"]["additionalNodeNetworkConfigs"]) == 8
    assert pools["train-h200-np"]["queuedProvisioning"] == {"enabled": True}
    assert len(pools["train-h200-np"]["networkConfig"]["additionalNodeNetworkConfigs"]) == 9
    assert one(graph, "lustre/instance:Instance", "train-lustre-instance").inputs["location"] == "us-central1-c"
    provider = one(graph, "pulumi:providers:gcp", "train-gcp").inputs
    assert provider["project"] == "ml-train-prod" and provider["region"] == "us-central1"


@pytest.mark.parametrize(("version", "legacy"), [
    ("1.32", True), ("1.33", True),  # a bare minor may get its earliest patch, which needs the legacy port
    ("1.33.2-gke.4654999", True), ("1.33.2-gke.4655000", False), ("1.33.3-gke.100", False), ("1.34", False)])
def test_the_legacy_lustre_port_keys_on_the_node_version(version: str, legacy: bool) -> None:
    """The boundary from the Managed Lustre CSI docs: nodes before 1.33.2-gke.4655000 need port 6988."""
    from components.gcp.cluster import legacy_lustre_port

    assert legacy_lustre_port(version) is legacy
