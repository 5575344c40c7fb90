"""Boundaries and second branches of the policies: just below / at / just above each threshold, and each way a rule
can be met or broken. ``expected`` [] means the policy must stay silent. Messages are the policies' API (the text a
user reads), so they are typed in here in full."""

import json

from tests.policies import keys as k
from tests.policies.helpers import DROP, Case, case

EKS_OPEN = ("the EKS API endpoint is public to {}: set endpoint: private, or list the office / CI CIDRs in "
            "public_access_cidrs")
GKE_OPEN = ("the GKE control plane has a public endpoint open to any address: set "
            "privateClusterConfig.enablePrivateEndpoint, or masterAuthorizedNetworksConfig.cidrBlocks")
AKS_OPEN = ("the AKS API server is public to any address: set apiServerAccessProfile.enablePrivateCluster, or "
            "authorizedIPRanges")
S3_KEY = "no server-side encryption configuration with aws:kms and a customer key (kmsMasterKeyId)"
NOT_TLS = json.dumps({"Version": "2012-10-17", "Statement": [
    {"Sid": "DenyPlainHttp", "Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": "*",
     "Condition": {"Bool": {"aws:SecureTransport": "true"}}}]})
SCOPED = json.dumps({"Version": "2012-10-17", "Statement": [
    {"Sid": "Scoped", "Effect": "Allow", "Action": "*", "Resource": "arn:aws:s3:::one-bucket/*"}]})
NO_RESOURCE = json.dumps({"Version": "2012-10-17", "Statement": [
    {"Sid": "NoResource", "Effect": "Allow", "Action": ["s3:GetObject", "*"]}]})


def eks_public(cidrs: list[str]) -> dict:
    return {"vpcConfig.endpointPublicAccess": True, "vpcConfig.publicAccessCidrs": cidrs}


def gke_public(blocks: list[str]) -> dict:
    return {"privateClusterConfig.enablePrivateEndpoint": False,
            "masterAuthorizedNetworksConfig": {"cidrBlocks": [{"cidrBlock": b} for b in blocks]}}


def aks_public(ranges: list[str]) -> dict:
    # the wire name of ManagedClusterAPIServerAccessProfileArgs.authorized_ip_ranges in the installed SDK:
    # @pulumi.getter(name="authorizedIPRanges") (pulumi_azure_native/containerservice/_inputs.py)
    return {"apiServerAccessProfile": {"enablePrivateCluster": False, "authorizedIPRanges": ranges}}


def sse(algorithm: str, key: object) -> dict:
    rule: dict = {"sseAlgorithm": algorithm}
    if key is not None:
        rule["kmsMasterKeyId"] = key
    return {"rules.0.applyServerSideEncryptionByDefault": rule}


GKE_EVERY_ZONE = ("sets no nodeLocations, so the pool takes every zone of its cluster, its node count in each: "
                  "multi-node jobs then pay cross-zone latency and egress; pin the pool to one zone "
                  "(nodeLocations: [<zone>])")
NOT_PLACED_EKS = ("node group train-a100-eval-ng (p4d.24xlarge, up to {} nodes) is not in a cluster placement group: "
                  "EFA traffic then crosses spine switches")
NOT_PLACED_GKE = ("a3-highgpu-8g pool of up to {} nodes has no compact placement (placementPolicy.type: COMPACT), "
                  "specific reservation or queued provisioning")
RESERVED_TEMPLATE = {"placement": DROP, "capacityReservationSpecification": {
    "capacityReservationTarget": {"capacityReservationId": "cr-0a1b2c3d4e5f60718"}}}


def eks_max(n: int) -> tuple[str, dict]:
    return k.NG_A100, {"scalingConfig.maxSize": n}


def gke_unplaced(max_nodes: int, **more: object) -> dict:
    return {"placementPolicy": DROP, "autoscaling.totalMaxNodeCount": max_nodes, **more}


PNP = "private-cluster-endpoint"
IP = "interconnect-placement"
ONE = "gpu-pool-one-node-at-a-time"
CASES = [
    # EKS endpoint: public through the CIDR list is only as open as the list
    case(PNP, "aws-train", k.EKS, eks_public(["203.0.113.0/24"]), label="eks-narrow-cidr"),
    case(PNP, "aws-train", k.EKS, eks_public(["0.0.0.0/0"]), EKS_OPEN.format("['0.0.0.0/0']"), label="eks-open-cidr"),
    case(PNP, "aws-train", k.EKS, eks_public(["203.0.113.0/24", "0.0.0.0/0"]),
         EKS_OPEN.format("['203.0.113.0/24', '0.0.0.0/0']"), label="eks-open-cidr-second"),
    case(PNP, "aws-train", k.EKS, eks_public([]), EKS_OPEN.format("the internet"), label="eks-no-cidrs"),
    case(PNP, "aws-train", k.EKS,
         {"vpcConfig.endpointPublicAccess": False, "vpcConfig.publicAccessCidrs": ["0.0.0.0/0"]},
         label="eks-private-ignores-cidrs"),
    case(PNP, "gke", k.GKE, gke_public(["203.0.113.0/24"]), label="gke-narrow-cidr"),
    case(PNP, "gke", k.GKE, gke_public(["203.0.113.0/24", "0.0.0.0/0"]), GKE_OPEN, label="gke-open-cidr"),
    case(PNP, "aks", k.AKS, aks_public(["203.0.113.0/24"]), label="aks-narrow-range"),
    case(PNP, "aks", k.AKS, aks_public(["0.0.0.0/0"]), AKS_OPEN, label="aks-open-range"),
    # S3 default encryption: aws:kms without a customer key is the AWS-managed key
    case("bucket-customer-managed-key", "aws-train", k.SSE, sse("aws:kms", None), S3_KEY, on=k.BUCKET,
         label="kms-without-key"),
    case("bucket-customer-managed-key", "aws-train", k.SSE, sse("aws:kms:dsse", "arn:aws:kms:us-east-1:1:key/x"),
         on=k.BUCKET, label="dsse-with-key"),
    case("bucket-customer-managed-key", "aws-train", k.SSE, sse("AES256", "arn:aws:kms:us-east-1:1:key/x"), S3_KEY,
         on=k.BUCKET, label="aes-with-key"),
    case("bucket-customer-managed-key", "aws-train", k.SSE, DROP, S3_KEY, on=k.BUCKET, label="no-sse-resource"),
    # IMDS hop limit: at most max_hop_limit (default 1)
    case("imdsv2-required", "aws-train", k.LT_H100, {"metadataOptions.httpPutResponseHopLimit": 1}, label="hop-1"),
    case("imdsv2-required", "aws-train", k.LT_H100, {"metadataOptions.httpPutResponseHopLimit": 2},
         "metadata hop limit 2 lets pods reach node credentials; at most 1", label="hop-2"),
    case("imdsv2-required", "aws-train", k.LT_H100, {"metadataOptions.httpPutResponseHopLimit": 2},
         config={"imdsv2-required": {"max_hop_limit": 2}}, label="hop-2-limit-2"),
    case("imdsv2-required", "aws-train", k.LT_H100, {"metadataOptions.httpPutResponseHopLimit": 3},
         "metadata hop limit 3 lets pods reach node credentials; at most 2",
         config={"imdsv2-required": {"max_hop_limit": 2}}, label="hop-3-limit-2"),
    case("imdsv2-required", "aws-train", k.LT_H100, {"metadataOptions.httpTokens": DROP},
         "IMDSv1 is allowed (metadataOptions.httpTokens: None): set it to 'required'", label="tokens-unset"),
    # storage TLS: the minimum version, and plain HTTP
    case("tls-minimum-version", "aks", k.STORAGE, {"minimumTlsVersion": "TLS1_1"},
         "accepts TLS1_1; the minimum is TLS1_2 (minimumTlsVersion)", label="tls-1.1"),
    case("tls-minimum-version", "aks", k.STORAGE, {"minimumTlsVersion": "TLS1_3"},
         config={"tls-minimum-version": {"minimum_tls_version": "TLS1_3"}}, label="tls-1.3-min-1.3"),
    case("tls-minimum-version", "aks", k.STORAGE, {"minimumTlsVersion": "TLS1_2"},
         "accepts TLS1_2; the minimum is TLS1_3 (minimumTlsVersion)",
         config={"tls-minimum-version": {"minimum_tls_version": "TLS1_3"}}, label="tls-1.2-min-1.3"),
    case("tls-minimum-version", "aks", k.STORAGE, {"minimumTlsVersion": DROP},
         "accepts TLS1_0; the minimum is TLS1_2 (minimumTlsVersion)", label="tls-unset"),
    case("tls-minimum-version", "aks", k.STORAGE, {"enableHttpsTrafficOnly": False},
         "accepts plain HTTP (enableHttpsTrafficOnly: false)", label="plain-http"),
    # S3 TLS-only: a Deny on SecureTransport *true* denies the wrong requests
    case("bucket-tls-only", "aws-train", k.TLS_ONLY, {"policy": NOT_TLS},
         "no bucket policy denies requests without TLS (aws:SecureTransport: false)", on=k.BUCKET,
         label="deny-on-true"),
    # IAM wildcards: every action on one resource is scoped; no Resource at all means every resource
    case("iam-no-wildcard-admin", "aws-train", k.NODE_ROLE, {"inlinePolicies": [{"name": "s", "policy": SCOPED}]},
         label="scoped-resource"),
    case("iam-no-wildcard-admin", "aws-train", k.NODE_ROLE, {"inlinePolicies": [{"name": "n", "policy": NO_RESOURCE}]},
         "statement 'NoResource' allows every action on every resource", label="action-list-no-resource"),
    case("iam-no-wildcard-admin", "gke", k.GCP_IAM, {"role": "roles/owner"},
         "grants a primitive / owner role (roles/owner); grant a narrower predefined role", label="owner"),
    case("iam-no-wildcard-admin", "gke", k.GCP_IAM, {"role": "roles/viewer"}, label="viewer"),
    # one node at a time: EKS maxUnavailable, GKE maxSurge + maxUnavailable, AKS maxSurge (+ maxUnavailable)
    case(ONE, "aws-train", k.NG_H100, {"updateConfig.maxUnavailable": 1}, label="eks-1"),
    case(ONE, "aws-train", k.NG_H100, {"updateConfig.maxUnavailable": 2},
         config={ONE: {"max_nodes_at_a_time": 2}}, label="eks-2-limit-2"),
    case(ONE, "aws-train", k.NG_H100, {"updateConfig.maxUnavailable": 3},
         "updates take 3 nodes down at once; at most 2",
         config={ONE: {"max_nodes_at_a_time": 2}}, label="eks-3-limit-2"),
    case(ONE, "dev", k.DEV_NG, {"updateConfig.maxUnavailable": 3}, label="eks-spot-exempt"),
    case(ONE, "gke", k.GKE_POOL, {"upgradeSettings": {"maxSurge": 0, "maxUnavailable": 1, "strategy": "SURGE"}},
         label="gke-unavailable-1"),
    case(ONE, "gke", k.GKE_POOL, {"upgradeSettings": {"maxSurge": 0, "maxUnavailable": 2, "strategy": "SURGE"}},
         "upgrades replace 2 nodes at a time (maxSurge 0 + maxUnavailable 2); at most 1, strategy SURGE",
         label="gke-unavailable-2"),
    case(ONE, "gke", k.GKE_POOL, {"upgradeSettings": {"maxSurge": 1, "maxUnavailable": 1, "strategy": "SURGE"}},
         "upgrades replace 2 nodes at a time (maxSurge 1 + maxUnavailable 1); at most 1, strategy SURGE",
         label="gke-surge-1-unavailable-1"),
    case(ONE, "gke", k.GKE_POOL, {"upgradeSettings": {"maxSurge": 1, "maxUnavailable": 1, "strategy": "SURGE"}},
         config={ONE: {"max_nodes_at_a_time": 2}}, label="gke-2-limit-2"),
    case(ONE, "gke", k.GKE_POOL, {"upgradeSettings.strategy": "BLUE_GREEN"},
         "upgrades replace 1 nodes at a time (maxSurge 1 + maxUnavailable 0); at most 1, strategy SURGE",
         label="gke-blue-green"),
    case(ONE, "aks", k.AKS_POOL, {"upgradeSettings": {"maxSurge": "0", "maxUnavailable": "1"}},
         label="aks-unavailable-1"),
    case(ONE, "aks", k.AKS_POOL, {"upgradeSettings": {"maxSurge": "1", "maxUnavailable": "1"}},
         "upgrades drain maxSurge 1 + maxUnavailable 1 nodes at a time; set upgradeSettings.maxSurge to '1' (or "
         "maxSurge '0' and maxUnavailable '1')", label="aks-surge-1-unavailable-1"),
    case(ONE, "aks", k.AKS_POOL, {"upgradeSettings": DROP},
         "upgrades drain maxSurge 10% (the default) + maxUnavailable 0 nodes at a time; set upgradeSettings.maxSurge "
         "to '1' (or maxSurge '0' and maxUnavailable '1')", label="aks-default-surge"),
    # AKS takes a percentage of the pool's nodes, rounded up: 1% of a 200-node pool is 2 nodes, of either setting
    case(ONE, "aks", k.AKS_POOL, {"count": 200, "upgradeSettings": {"maxSurge": "1%"}},
         "upgrades drain maxSurge 1% + maxUnavailable 0 nodes at a time (1% of 200 nodes is 2, rounded up); set "
         "upgradeSettings.maxSurge to '1' (or maxSurge '0' and maxUnavailable '1')", label="aks-surge-1-percent"),
    case(ONE, "aks", k.AKS_POOL, {"count": 200, "upgradeSettings": {"maxSurge": "0", "maxUnavailable": "1%"}},
         "upgrades drain maxSurge 0 + maxUnavailable 1% nodes at a time (1% of 200 nodes is 2, rounded up); set "
         "upgradeSettings.maxSurge to '1' (or maxSurge '0' and maxUnavailable '1')", label="aks-unavailable-1-percent"),
    case(ONE, "aks", k.AKS_POOL, {"count": 200, "upgradeSettings": {"maxSurge": "1"}}, label="aks-200-surge-1"),
    # GPU cap: the stack's GPUs at max nodes (aws-train: 16 x 8 H100 + 4 x 8 A100 = 160)
    case("stack-gpu-cap", "aws-train", k.NG_H100, {}, config={"stack-gpu-cap": {"max_gpus": 160}}, on=None,
         label="cap-at-total"),
    case("stack-gpu-cap", "aws-train", k.NG_H100, {},
         "the stack asks for up to 160 GPUs (every pool at its max nodes); the cap is 159",
         config={"stack-gpu-cap": {"max_gpus": 159}}, on=None, label="cap-below-total"),
    # interconnect placement: from 2 nodes; an AWS reservation (not a capacity block) still needs the group;
    # GKE: compact, a specific reservation or queued provisioning each place the pool
    Case(IP, "aws-train", ((k.LT_A100, {"placement": DROP}), eks_max(2)),
         [(k.LT_A100, NOT_PLACED_EKS.format(2))], label="eks-2-nodes"),
    Case(IP, "aws-train", ((k.LT_A100, {"placement": DROP}), eks_max(1)), [], label="eks-1-node"),
    case(IP, "aws-train", k.LT_A100, RESERVED_TEMPLATE, NOT_PLACED_EKS.format(4), label="eks-reservation-unplaced"),
    case(IP, "aws-train", k.LT_A100, {"placement": DROP, "instanceMarketOptions.marketType": "capacity-block"},
         label="eks-capacity-block-unplaced"),
    case(IP, "gke", k.GKE_POOL, gke_unplaced(2), NOT_PLACED_GKE.format(2), label="gke-2-nodes"),
    case(IP, "gke", k.GKE_POOL, gke_unplaced(1), label="gke-1-node"),
    case(IP, "gke", k.GKE_POOL, gke_unplaced(8, **{"nodeConfig.reservationAffinity": {
        "consumeReservationType": "SPECIFIC_RESERVATION", "key": "compute.googleapis.com/reservation-name",
        "values": ["resv"]}}), label="gke-specific-reservation"),
    case(IP, "gke", k.GKE_POOL, gke_unplaced(8, **{"nodeConfig.reservationAffinity": {
        "consumeReservationType": "ANY_RESERVATION"}}), NOT_PLACED_GKE.format(8), label="gke-any-reservation"),
    case(IP, "gke", k.GKE_POOL, gke_unplaced(8, **{"queuedProvisioning.enabled": True}), label="gke-queued"),
    case(IP, "gke", k.GKE_POOL, gke_unplaced(8, **{"nodeConfig.flexStart": True}), label="gke-flex-start"),
    # spot: the pool id or its bare name may be allowed
    case("spot-only-where-allowed", "aws-train", k.NG_A100, {"capacityType": "SPOT"},
         config={"spot-only-where-allowed": {"spot_pools": ["a100-eval"]}}, label="spot-bare-name"),
    case("spot-only-where-allowed", "aws-train", k.NG_A100, {"capacityType": "SPOT"},
         config={"spot-only-where-allowed": {"spot_pools": ["*"]}}, label="spot-any"),
]

# allow-lists, tags, Lustre protection and bucket versioning: each branch, the exact match at the edge
AMT, REG, TAGS, LUS, VER = ("allowed-machine-types", "allowed-regions", "cost-tags-present", "lustre-data-protected",
                            "checkpoint-buckets-versioned")
NOT_ALLOWED = "machine type {!r} is not in the allow-list {}"
MISSING = "missing cost tags {}: finance cannot allocate this resource's spend"
FSX_UNPROTECTED = ("neither automatic backups (automaticBackupRetentionDays) nor an automatic export to S3 (a "
                   "DataRepositoryAssociation with s3.autoExportPolicy): checkpoints written to Lustre can be lost")
NO_DRA = ((k.DRA_CHECKPOINTS, DROP), (k.DRA_DATASETS, DROP))
NO_EXPORT = {"s3.autoExportPolicy": {"events": []}}


def allow(*names: str) -> dict:
    return {AMT: {"allowed_machine_types": list(names)}}


def regions(*names: str) -> dict:
    return {REG: {"allowed_regions": list(names)}}


BOUNDARY_LISTS_TAGS_DATA = [
    case(AMT, "aws-train", k.NG_H100, {"instanceTypes": ["p5e.48xlarge"]}, config=allow(), label="empty-list"),
    case(AMT, "aws-train", k.NG_H100, {}, config=allow("p5.48xlarge", "p4d.24xlarge"), label="listed"),
    case(AMT, "aws-train", k.NG_H100, {"instanceTypes": ["p5.48xlarg"]},
         NOT_ALLOWED.format("p5.48xlarg", "['p5.48xlarge']"), config=allow("p5.48xlarge"), label="prefix-not-a-match"),
    case(AMT, "aws-train", k.NG_H100, {"instanceTypes": ["P5.48xlarge"]},
         NOT_ALLOWED.format("P5.48xlarge", "['p5.48xlarge']"), config=allow("p5.48xlarge"), label="case-sensitive"),
    case(AMT, "gke", k.GKE_POOL, {}, config=allow("a3-highgpu-8g"), label="gke-listed"),
    case(AMT, "gke", k.GKE_POOL, {}, NOT_ALLOWED.format("a3-highgpu-8g", "['a3-megagpu-8g']"),
         config=allow("a3-megagpu-8g"), label="gke-not-listed"),
    case(AMT, "aks", k.AKS_POOL, {}, NOT_ALLOWED.format("Standard_ND96isr_H100_v5", "['Standard_ND96isr_H200_v5']"),
         config=allow("Standard_ND96isr_H200_v5"), label="aks-not-listed"),
    case(REG, "aws-train", k.AWS_PROVIDER, {"region": "us-east-1"}, config=regions("us-east-1"), label="aws-listed"),
    case(REG, "aws-train", k.AWS_PROVIDER, {"region": "us-east-2"},
         "region 'us-east-2' is not allowed; allowed: us-east-1", config=regions("us-east-1"), label="aws-neighbour"),
    case(REG, "gke", k.GCP_LUSTRE, {"location": "us-central1-a"}, config=regions("us-central1"),
         label="gcp-zone-of-allowed-region"),
    case(REG, "gke", k.GKE, {"location": "us-central1"}, "region 'us-central1' is not allowed; allowed: us-east4",
         config=regions("us-east4"), label="gcp-configured-list-replaces-default"),
    case(REG, "gke", k.GKE, {"location": "us-central1"}, label="gcp-default-catalogue-region"),
    case(REG, "gke", k.GKE, {"location": DROP}, label="gcp-no-location"),
    case(REG, "aks", k.AKS, {"location": "eastus2"}, config=regions("eastus", "eastus2"), label="aks-listed"),
    case(TAGS, "aws-train", k.NG_H100, {"tags.team": ""}, MISSING.format("team"), label="empty-value"),
    case(TAGS, "aws-train", k.NG_H100, {"tags.cost-center": DROP}, config={TAGS: {"required_tags": ["team"]}},
         label="configured-tags"),
    case(TAGS, "aws-train", k.NG_H100, {"tags": {"Team": "ml", "cost_center": "cc"}},
         MISSING.format("team, cost-center"), label="near-miss-keys"),
    case(TAGS, "aws-train", k.AWS_PROVIDER, {"defaultTags": DROP}, label="provider-without-default-tags"),
    case(TAGS, "aws-train", k.NODE_ROLE, {"tags": DROP}, label="not-taggable"),
    case(TAGS, "gke", k.GKE_POOL, {"nodeConfig.resourceLabels.cost-center": DROP}, MISSING.format("cost-center"),
         label="gke-node-labels"),
    Case(LUS, "aws-train", (*NO_DRA, (k.FSX, {"automaticBackupRetentionDays": 1})), [], label="fsx-backup-1-day"),
    Case(LUS, "aws-train", (*NO_DRA, (k.FSX, {"automaticBackupRetentionDays": 0})), [(k.FSX, FSX_UNPROTECTED)],
         label="fsx-backup-0-days"),
    Case(LUS, "aws-train", ((k.DRA_CHECKPOINTS, NO_EXPORT), (k.DRA_DATASETS, NO_EXPORT),
                            (k.FSX, {"automaticBackupRetentionDays": 0})), [(k.FSX, FSX_UNPROTECTED)],
         label="fsx-links-without-export"),
    case(LUS, "aws-train", k.FSX, {"automaticBackupRetentionDays": 0}, label="fsx-export-alone"),
    case(LUS, "aks", k.AML, {"hsm.settings.container": ""},
         "no blob integration (hsm.settings.container): nothing exports Lustre data to Blob storage",
         label="amlfs-empty-container"),
    case(VER, "aws-train", k.VERSIONING, {"versioningConfiguration.status": "enabled"},
         "versioning is not enabled (BucketVersioning status: Enabled): an overwritten or deleted checkpoint is gone",
         on=k.BUCKET, label="s3-lowercase-status"),
    case(VER, "aws-train", k.VERSIONING, DROP,
         "versioning is not enabled (BucketVersioning status: Enabled): an overwritten or deleted checkpoint is gone",
         on=k.BUCKET, label="s3-no-versioning-resource"),
    case(VER, "aws-train", k.VERSIONING, {}, on=None, label="s3-enabled"),
    case(VER, "gke", k.GCS, {"versioning": DROP}, "object versioning is off: set versioning.enabled: true",
         label="gcs-unset"),
    case(VER, "aks", k.BLOB, DROP, "blob versioning is off: add BlobServiceProperties with isVersioningEnabled: true",
         on=k.STORAGE, label="azure-no-blob-service"),
]
CASES += BOUNDARY_LISTS_TAGS_DATA

# taints: NoSchedule or NoExecute keep CPU pods away, PreferNoSchedule does not; one zone from 2 nodes (AKS: a
# pool without zones is regional by design and allowed)
TAINT = "GPU pool without the nvidia.com/gpu NoSchedule taint: CPU-only pods would land on (and block) GPU nodes"
SPANS = ("a pool of up to {} GPU nodes spans 2 {}: multi-node jobs then pay cross-zone latency and egress; pin the "
         "pool to one zone")
BOUNDARY_GPU = [
    case("gpu-taints-present", "aws-train", k.NG_H100,
         {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_EXECUTE"}]}, label="no-execute"),
    case("gpu-taints-present", "aws-train", k.NG_H100,
         {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "PREFER_NO_SCHEDULE"}]}, TAINT,
         label="prefer-no-schedule"),
    case("gpu-taints-present", "aws-train", k.NG_H100,
         {"taints": [{"key": "nvidia.com/gpu-x", "value": "present", "effect": "NO_SCHEDULE"}]}, TAINT,
         label="near-miss-key"),
    case("gpu-taints-present", "aks", k.AKS_POOL, {"nodeTaints": ["nvidia.com/gpu=present:NoExecute"]},
         label="aks-no-execute"),
    Case("multi-node-pool-single-zone", "aws-train", ((k.NG_A100, {"subnetIds": ["subnet-a", "subnet-b"]}),
                                                     eks_max(1)), [], label="eks-1-node-2-subnets"),
    Case("multi-node-pool-single-zone", "aws-train", ((k.NG_A100, {"subnetIds": ["subnet-a", "subnet-b"]}),
                                                     eks_max(2)), [(k.NG_A100, SPANS.format(2, "subnets"))],
         label="eks-2-nodes-2-subnets"),
    case("multi-node-pool-single-zone", "aks", k.AKS_POOL, {"availabilityZones": []}, label="aks-regional"),
    case("multi-node-pool-single-zone", "gke", k.GKE_POOL,
         {"nodeLocations": ["us-central1-a", "us-central1-b"], "autoscaling.totalMaxNodeCount": 1},
         label="gke-1-node-2-locations"),
    # no nodeLocations: every zone of the cluster (Pulumi NodePool: "If unspecified, the cluster-level node_locations
    # will be used"), the per-zone count in each; only a total of 1 node keeps a pool to one node
    case("multi-node-pool-single-zone", "gke", k.GKE_POOL, {"nodeLocations": []}, GKE_EVERY_ZONE,
         label="gke-no-locations"),
    case("multi-node-pool-single-zone", "gke", k.GKE_POOL, {"nodeLocations": DROP}, GKE_EVERY_ZONE,
         label="gke-locations-unset"),
    case("multi-node-pool-single-zone", "gke", k.GKE_POOL,
         {"nodeLocations": [], "autoscaling": {"minNodeCount": 0, "maxNodeCount": 1}}, GKE_EVERY_ZONE,
         label="gke-no-locations-1-per-zone"),
    case("multi-node-pool-single-zone", "gke", k.GKE_POOL, {"nodeLocations": [], "autoscaling.totalMaxNodeCount": 1},
         label="gke-no-locations-1-node"),
]
CASES += BOUNDARY_GPU
