"""Compliant GKE and AKS graphs, crafted by hand with the SDKs' type tokens and property names, until the GCP and
Azure translators land and their captured graphs replace these. Tests mutate them like captured graphs."""

from __future__ import annotations

from gpufleet.engine.capture import Graph, Resource

TAGS = {"team": "ml-platform", "cost-center": "cc-4100", "gpufleet-cluster": "train"}
KMS = "projects/p/locations/us-central1/keyRings/train/cryptoKeys/data"
VAULT_KEY = "https://train-kv.vault.azure.net/keys/data/0123"
GPU_TAINT = "nvidia.com/gpu"


def _r(type_: str, name: str, inputs: dict, deps: tuple[str, ...] = ()) -> Resource:
    return Resource(type=type_, name=name, parent=None, custom=True, inputs=inputs, dependencies=sorted(deps))


GKE_CLUSTER = "gcp:container/cluster:Cluster::train-gke"
AKS_CLUSTER = "azure-native:containerservice:ManagedCluster::train-aks"
AZURE_ACCOUNT = "azure-native:storage:StorageAccount::train-checkpoints"


def gcp_graph() -> Graph:
    """A GKE cluster with an 8-node a3-highgpu-8g (TCPX) pool, a checkpoint bucket and Managed Lustre."""
    pool = {
        "cluster": "train", "location": "us-central1", "nodeLocations": ["us-central1-a"],
        "autoscaling": {"totalMinNodeCount": 0, "totalMaxNodeCount": 8},
        "nodeConfig": {
            "machineType": "a3-highgpu-8g", "bootDiskKmsKey": KMS, "resourceLabels": TAGS,
            "guestAccelerators": [{"type": "nvidia-h100-80gb", "count": 8,
                                   "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"}}],
            "taints": [{"key": GPU_TAINT, "value": "present", "effect": "NO_SCHEDULE"}],
            "labels": {"gpufleet.io/pool": "h100", "gpufleet.io/gpu": "H100", "gpufleet.io/fabric": "tcpx"},
            "workloadMetadataConfig": {"mode": "GKE_METADATA"}},
        "networkConfig": {"enablePrivateNodes": True, "additionalNodeNetworkConfigs": [
            {"network": f"train-gpu-{i}", "subnetwork": f"train-gpu-{i}"} for i in range(4)]},
        "placementPolicy": {"type": "COMPACT"},
        "upgradeSettings": {"maxSurge": 1, "maxUnavailable": 0, "strategy": "SURGE"},
        "management": {"autoRepair": True, "autoUpgrade": True},
    }
    return Graph(project="gpufleet", stack="gcp-train", resources=[
        _r("pulumi:providers:gcp", "train-gcp", {"region": "us-central1", "project": "p",
                                                 "defaultLabels": '{"team": "ml-platform", "cost-center": "cc-4100"}'}),
        _r("gcp:container/cluster:Cluster", "train-gke", {
            "name": "train", "location": "us-central1", "resourceLabels": TAGS, "removeDefaultNodePool": True,
            "initialNodeCount": 1,
            "privateClusterConfig": {"enablePrivateNodes": True, "enablePrivateEndpoint": True},
            "workloadIdentityConfig": {"workloadPool": "p.svc.id.goog"},
            "databaseEncryption": {"state": "ENCRYPTED", "keyName": KMS},
            "maintenancePolicy": {"recurringWindow": {"startTime": "2026-01-03T02:00:00Z",
                                                      "endTime": "2026-01-03T08:00:00Z",
                                                      "recurrence": "FREQ=WEEKLY;BYDAY=SA"}}}),
        _r("gcp:container/nodePool:NodePool", "train-h100", pool, (GKE_CLUSTER,)),
        _r("gcp:projects/iAMMember:IAMMember", "train-nodes-default", {
            "project": "p", "role": "roles/container.defaultNodeServiceAccount",
            "member": "serviceAccount:train-nodes@p.iam.gserviceaccount.com"}),
        _r("gcp:storage/bucket:Bucket", "train-checkpoints", {
            "location": "US-CENTRAL1", "labels": TAGS, "versioning": {"enabled": True},
            "encryption": {"defaultKmsKeyName": KMS}, "publicAccessPrevention": "enforced",
            "uniformBucketLevelAccess": True}),
        _r("gcp:lustre/instance:Instance", "train-lustre", {
            "location": "us-central1-a", "capacityGib": 36000, "perUnitStorageThroughput": 1000, "kmsKey": KMS,
            "labels": TAGS, "maintenancePolicy": {"weeklyMaintenanceWindows": {"day": "SATURDAY"}}}),
    ])


def azure_graph() -> Graph:
    """An AKS cluster with a 4-node ND96isr_H100_v5 (InfiniBand) pool, a storage account and Managed Lustre."""
    return Graph(project="gpufleet", stack="azure-train", resources=[
        _r("pulumi:providers:azure-native", "train-azure", {"location": "eastus"}),
        _r("azure-native:containerservice:ManagedCluster", "train-aks", {
            "location": "eastus", "tags": TAGS, "disableLocalAccounts": True,
            "apiServerAccessProfile": {"enablePrivateCluster": True},
            "oidcIssuerProfile": {"enabled": True},
            "securityProfile": {"workloadIdentity": {"enabled": True},
                                "azureKeyVaultKms": {"enabled": True, "keyId": VAULT_KEY}},
            "agentPoolProfiles": [{"name": "system", "mode": "System", "vmSize": "Standard_D8s_v5", "count": 2,
                                   "enableNodePublicIP": False}]}),
        _r("azure-native:containerservice:AgentPool", "train-h100", {
            "vmSize": "Standard_ND96isr_H100_v5", "count": 4, "availabilityZones": ["1"], "mode": "User",
            "nodeTaints": [f"{GPU_TAINT}=present:NoSchedule"], "enableEncryptionAtHost": True,
            "nodeLabels": {"gpufleet.io/pool": "h100", "gpufleet.io/fabric": "infiniband"},
            "gpuProfile": {"driver": "Install"}, "upgradeSettings": {"maxSurge": "1"}, "tags": TAGS},
            (AKS_CLUSTER,)),
        _r("azure-native:containerservice:MaintenanceConfiguration", "train-maintenance", {
            "configName": "aksManagedAutoUpgradeSchedule"}, (AKS_CLUSTER,)),
        _r("kubernetes:helm.sh/v3:Release", "train-gpu-operator", {
            "chart": "gpu-operator", "namespace": "gpu-operator",
            "values": {"driver": {"enabled": False}, "toolkit": {"enabled": True}}}),
        _r("azure-native:storage:StorageAccount", "train-checkpoints", {
            "location": "eastus", "tags": TAGS, "minimumTlsVersion": "TLS1_2", "allowBlobPublicAccess": False,
            "enableHttpsTrafficOnly": True,
            "encryption": {"keySource": "Microsoft.Keyvault", "keyVaultProperties": {"keyName": "data"}}}),
        _r("azure-native:storage:BlobServiceProperties", "train-checkpoints-blob", {"isVersioningEnabled": True},
           (AZURE_ACCOUNT,)),
        _r("azure-native:storagecache:AmlFilesystem", "train-lustre", {
            "location": "eastus", "tags": TAGS, "storageCapacityTiB": 16, "zones": ["1"],
            "sku": {"name": "AMLFS-Durable-Premium-250"},
            "encryptionSettings": {"keyEncryptionKey": {"keyUrl": VAULT_KEY, "sourceVault": {"id": "/kv"}}},
            "hsm": {"settings": {"container": "/blob/checkpoints", "loggingContainer": "/blob/logs"}},
            "maintenanceWindow": {"dayOfWeek": "Saturday", "timeOfDayUTC": "02:00"}}),
    ])


# What gpufleet preview would pass from these fleets' specs.
CONFIG = {"stack-monthly-budget": {"monthly_budget_usd": 600000}, "spot-only-where-allowed": {"spot_pools": []}}
