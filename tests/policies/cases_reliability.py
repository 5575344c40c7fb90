"""Crafted violations of the reliability policies."""

from tests.policies import keys as k
from tests.policies.helpers import DROP, Case, case

CASES = [
    case("checkpoint-buckets-versioned", "aws-train", k.VERSIONING, {"versioningConfiguration.status": "Suspended"},
         "versioning is not enabled (BucketVersioning status: Enabled): an overwritten or deleted checkpoint is gone",
         on=k.BUCKET),
    case("checkpoint-buckets-versioned", "gke", k.GCS, {"versioning.enabled": False},
         "object versioning is off: set versioning.enabled: true"),
    case("checkpoint-buckets-versioned", "aks", k.BLOB, {"isVersioningEnabled": False},
         "blob versioning is off: add BlobServiceProperties with isVersioningEnabled: true", on=k.STORAGE),
    case("gpu-pool-one-node-at-a-time", "aws-train", k.NG_H100, {"updateConfig.maxUnavailable": 2},
         "updates take 2 nodes down at once; at most 1"),
    case("gpu-pool-one-node-at-a-time", "aws-train", k.NG_A100,
         {"updateConfig": {"maxUnavailablePercentage": 25}},
         "updateConfig.maxUnavailablePercentage takes a share of the pool down at once; use maxUnavailable"),
    case("gpu-pool-one-node-at-a-time", "gke", k.GKE_POOL, {"upgradeSettings.maxSurge": 2},
         "upgrades replace 2 nodes at a time (maxSurge 2 + maxUnavailable 0); at most 1, strategy SURGE"),
    case("gpu-pool-one-node-at-a-time", "aks", k.AKS_POOL, {"upgradeSettings.maxSurge": "33%"},
         "upgrades drain maxSurge 33% + maxUnavailable 0 nodes at a time (33% of 4 nodes is 2, rounded up); set "
         "upgradeSettings.maxSurge to '1' (or maxSurge '0' and maxUnavailable '1')"),
    case("maintenance-window-set", "gke", k.GKE, {"maintenancePolicy": DROP},
         "no maintenance window or exclusion: GKE may upgrade GPU nodes in the middle of a training run"),
    case("maintenance-window-set", "aks", k.AKS_MAINTENANCE, DROP,
         "no MaintenanceConfiguration: AKS may upgrade GPU nodes at any time", on=k.AKS),
    case("maintenance-window-set", "aks", k.AML, {"maintenanceWindow": DROP}, "no maintenance window set"),
    Case("lustre-data-protected", "aws-train", ((k.DRA_CHECKPOINTS, DROP), (k.DRA_DATASETS, DROP)),
         [(k.FSX, "neither automatic backups (automaticBackupRetentionDays) nor an automatic export to S3 (a "
                  "DataRepositoryAssociation with s3.autoExportPolicy): checkpoints written to Lustre can be lost")]),
    case("lustre-data-protected", "aks", k.AML, {"hsm": DROP},
         "no blob integration (hsm.settings.container): nothing exports Lustre data to Blob storage"),
    case("node-auto-repair", "aws-train", k.NG_A100, {"nodeRepairConfig.enabled": False},
         "node auto-repair is off (nodeRepairConfig.enabled): a node that stays NotReady is never "
         "replaced"),
    case("node-auto-repair", "gke", k.GKE_POOL, {"management.autoRepair": False},
         "node auto-repair is off (management.autoRepair: false)"),
]
