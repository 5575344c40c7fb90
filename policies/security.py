"""Security: private control planes and nodes, customer-managed encryption keys, IMDSv2, private buckets,
least-privilege IAM, no AKS local accounts, workload identity, TLS."""

from __future__ import annotations

import json
from collections.abc import Iterable

from policies.props import (
    AKS_AGENT_POOL,
    AKS_CLUSTER,
    AZURE_LUSTRE,
    AZURE_STORAGE,
    EKS_CLUSTER,
    FSX_LUSTRE,
    GCP_LUSTRE,
    GCS_BUCKET,
    GKE_CLUSTER,
    GKE_NODE_POOL,
    LAUNCH_TEMPLATE,
    S3_BUCKET,
    S3_ENCRYPTION,
    S3_POLICY,
    S3_PUBLIC_ACCESS,
    get,
    items,
    records,
    truthy,
)
from policies.rule import MANDATORY, Config, Node, Stack, resource_policy, stack_policy

OPEN = "0.0.0.0/0"
IAM_TYPES = ("aws:iam/policy:Policy", "aws:iam/rolePolicy:RolePolicy", "aws:iam/role:Role",
             "gcp:projects/iAMMember:IAMMember", "gcp:projects/iAMBinding:IAMBinding",
             "azure-native:authorization:RoleAssignment")


def private_endpoint(r: Node, config: Config) -> Iterable[str]:
    if r.type == EKS_CLUSTER and truthy(get(r.props, "vpcConfig.endpointPublicAccess")):
        cidrs = items(get(r.props, "vpcConfig.publicAccessCidrs"))
        if not cidrs or OPEN in cidrs:
            yield f"the EKS API endpoint is public to {cidrs or 'the internet'}: set endpoint: private, or list " \
                  "the office / CI CIDRs in public_access_cidrs"
    if r.type == GKE_CLUSTER and not truthy(get(r.props, "privateClusterConfig.enablePrivateEndpoint")):
        blocks = [b.get("cidrBlock") for b in records(get(r.props, "masterAuthorizedNetworksConfig.cidrBlocks"))]
        if not blocks or OPEN in blocks:
            yield "the GKE control plane has a public endpoint open to any address: set " \
                  "privateClusterConfig.enablePrivateEndpoint, or masterAuthorizedNetworksConfig.cidrBlocks"
    if r.type == AKS_CLUSTER and not truthy(get(r.props, "apiServerAccessProfile.enablePrivateCluster")):
        ranges = items(get(r.props, "apiServerAccessProfile.authorizedIPRanges"))
        if not ranges or OPEN in ranges:
            yield "the AKS API server is public to any address: set apiServerAccessProfile.enablePrivateCluster, " \
                  "or authorizedIPRanges"


def no_public_node_ips(r: Node, config: Config) -> Iterable[str]:
    if r.type == LAUNCH_TEMPLATE:
        for nic in records(get(r.props, "networkInterfaces")):
            if truthy(nic.get("associatePublicIpAddress")):
                yield f"network interface on card {int(nic.get('networkCardIndex', 0))} gets a public IP " \
                      "(associatePublicIpAddress: true); nodes reach the internet through the NAT gateway"
    if r.type == GKE_CLUSTER and not truthy(get(r.props, "privateClusterConfig.enablePrivateNodes")):
        yield "GKE nodes get public IPs: set privateClusterConfig.enablePrivateNodes: true"
    if r.type == GKE_NODE_POOL and get(r.props, "networkConfig.enablePrivateNodes") is False:
        yield "this node pool turns private nodes off (networkConfig.enablePrivateNodes: false)"
    if r.type == AKS_AGENT_POOL and truthy(get(r.props, "enableNodePublicIP")):
        yield "AKS nodes get public IPs (enableNodePublicIP: true)"
    if r.type == AKS_CLUSTER:
        for pool in records(get(r.props, "agentPoolProfiles")):
            if truthy(pool.get("enableNodePublicIP")):
                yield f"agent pool profile {pool.get('name')!r} gives nodes public IPs (enableNodePublicIP: true)"


def _s3_sse_uses_kms(stack: Stack, bucket: Node) -> bool:
    for sse in stack.dependents(bucket, S3_ENCRYPTION):
        for rule in records(get(sse.props, "rules")):
            default = rule.get("applyServerSideEncryptionByDefault") or {}
            if default.get("sseAlgorithm") in ("aws:kms", "aws:kms:dsse") and default.get("kmsMasterKeyId"):
                return True
    return False


def buckets_customer_key(stack: Stack, config: Config) -> Iterable[tuple[str, Node]]:
    for b in stack.of_type(S3_BUCKET):
        if not _s3_sse_uses_kms(stack, b):
            yield "no server-side encryption configuration with aws:kms and a customer key (kmsMasterKeyId)", b
    for b in stack.of_type(GCS_BUCKET):
        if not get(b.props, "encryption.defaultKmsKeyName"):
            yield "no customer-managed key: set encryption.defaultKmsKeyName", b
    for b in stack.of_type(AZURE_STORAGE):
        if get(b.props, "encryption.keySource") != "Microsoft.Keyvault":
            yield "encrypted with Microsoft-managed keys: set encryption.keySource: Microsoft.Keyvault " \
                  "with keyVaultProperties", b


def lustre_customer_key(r: Node, config: Config) -> Iterable[str]:
    path = {FSX_LUSTRE: "kmsKeyId", GCP_LUSTRE: "kmsKey", AZURE_LUSTRE: "encryptionSettings.keyEncryptionKey.keyUrl"}
    if not get(r.props, path[r.type]):
        yield f"Lustre data is encrypted with a provider-managed key: set {path[r.type]}"


def secrets_encrypted(r: Node, config: Config) -> Iterable[str]:
    if r.type == EKS_CLUSTER:
        ok = any("secrets" in items(c.get("resources")) and get(c, "provider.keyArn")
                 for c in records(get(r.props, "encryptionConfig")) or [get(r.props, "encryptionConfig", {})])
        if not ok:
            yield "Kubernetes secrets are not envelope-encrypted: set encryptionConfig with a KMS key for secrets"
    if r.type == GKE_CLUSTER and not (get(r.props, "databaseEncryption.state") == "ENCRYPTED"
                                      and get(r.props, "databaseEncryption.keyName")):
        yield "etcd is not encrypted with a Cloud KMS key: set databaseEncryption {state: ENCRYPTED, keyName}"
    if r.type == AKS_CLUSTER and not truthy(get(r.props, "securityProfile.azureKeyVaultKms.enabled")):
        yield "secrets are not encrypted with a Key Vault key: set securityProfile.azureKeyVaultKms.enabled"


def node_disks_encrypted(r: Node, config: Config) -> Iterable[str]:
    if r.type == LAUNCH_TEMPLATE:
        for mapping in records(get(r.props, "blockDeviceMappings")):
            if not truthy(get(mapping, "ebs.encrypted")):
                yield f"EBS volume {mapping.get('deviceName')} is not encrypted (ebs.encrypted: true)"
    if r.type == GKE_NODE_POOL and not get(r.props, "nodeConfig.bootDiskKmsKey"):
        yield "boot disks use Google-managed keys: set nodeConfig.bootDiskKmsKey"
    if r.type == AKS_AGENT_POOL and not truthy(get(r.props, "enableEncryptionAtHost")):
        yield "node disks and caches are not encrypted at host: set enableEncryptionAtHost: true"


def imdsv2(r: Node, config: Config) -> Iterable[str]:
    tokens = get(r.props, "metadataOptions.httpTokens")
    if tokens != "required":
        yield f"IMDSv1 is allowed (metadataOptions.httpTokens: {tokens!r}): set it to 'required'"
    hops = get(r.props, "metadataOptions.httpPutResponseHopLimit")
    if hops is not None and int(hops) > int(config["max_hop_limit"]):
        yield f"metadata hop limit {int(hops)} lets pods reach node credentials; at most {int(config['max_hop_limit'])}"


_BLOCKS = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")


def buckets_private(stack: Stack, config: Config) -> Iterable[tuple[str, Node]]:
    for b in stack.of_type(S3_BUCKET):
        blocks = stack.dependents(b, S3_PUBLIC_ACCESS)
        missing = [k for k in _BLOCKS if not any(truthy(get(p.props, k)) for p in blocks)]
        if missing:
            yield f"public access is not fully blocked: {', '.join(missing)} not set on a BucketPublicAccessBlock", b
    for b in stack.of_type(GCS_BUCKET):
        if get(b.props, "publicAccessPrevention") != "enforced" or not truthy(get(b.props, "uniformBucketLevelAccess")):
            yield "set publicAccessPrevention: enforced and uniformBucketLevelAccess: true", b
    for b in stack.of_type(AZURE_STORAGE):
        if get(b.props, "allowBlobPublicAccess") is not False:
            yield "anonymous blob access is not disabled: set allowBlobPublicAccess: false", b


def _statements(document: object) -> list[dict]:
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except ValueError:
            return []
    statements = get(document, "Statement", [])
    return [s for s in ([statements] if isinstance(statements, dict) else items(statements)) if isinstance(s, dict)]


def _as_list(value: object) -> list:
    return items(value) if not isinstance(value, str) else [value]


def no_wildcard_iam(r: Node, config: Config) -> Iterable[str]:
    documents = [get(r.props, "policy")] + [p.get("policy") for p in records(get(r.props, "inlinePolicies"))]
    for s in (s for d in documents for s in _statements(d)):
        actions, resources = _as_list(s.get("Action")), _as_list(s.get("Resource"))
        if s.get("Effect") == "Allow" and ("*" in actions) and ("*" in resources or not resources):
            yield f"statement {s.get('Sid', '(no Sid)')!r} allows every action on every resource"
    role = str(get(r.props, "role", "")) + str(get(r.props, "roleDefinitionId", ""))
    if any(role.endswith(denied) for denied in config["denied_roles"]):
        yield f"grants a primitive / owner role ({role}); grant a narrower predefined role"


def managed_policies(r: Node, config: Config) -> Iterable[str]:
    arn = str(get(r.props, "policyArn", ""))
    name = arn.rsplit("/", 1)[-1]
    if name in config["denied_managed_policies"]:
        yield f"attaches {name}, a wide AWS-managed policy; node and service roles get only the " \
              "policies their job needs (AmazonEKSWorkerNodeMinimalPolicy, AmazonEC2ContainerRegistryPullOnly)"


def aks_local_accounts(r: Node, config: Config) -> Iterable[str]:
    if not truthy(get(r.props, "disableLocalAccounts")):
        yield "local accounts (the static cluster-admin kubeconfig) are enabled: set disableLocalAccounts: true"


def workload_identity(r: Node, config: Config) -> Iterable[str]:
    if r.type == GKE_CLUSTER and not get(r.props, "workloadIdentityConfig.workloadPool"):
        yield "Workload Identity is off: set workloadIdentityConfig.workloadPool to <project>.svc.id.goog"
    if r.type == GKE_NODE_POOL and get(r.props, "nodeConfig.workloadMetadataConfig.mode", "GKE_METADATA") \
            != "GKE_METADATA":
        yield "pods can read the node's service account: set nodeConfig.workloadMetadataConfig.mode: GKE_METADATA"
    if r.type == AKS_CLUSTER and not (truthy(get(r.props, "securityProfile.workloadIdentity.enabled"))
                                      and truthy(get(r.props, "oidcIssuerProfile.enabled"))):
        yield "workload identity is off: set securityProfile.workloadIdentity.enabled and oidcIssuerProfile.enabled"


def _tls_rank(version: str) -> tuple[int, ...]:
    digits = "".join(c if c.isdigit() else " " for c in version).split()
    return tuple(int(d) for d in digits)


def tls_storage(r: Node, config: Config) -> Iterable[str]:
    minimum = str(config["minimum_tls_version"])
    version = str(get(r.props, "minimumTlsVersion", "TLS1_0"))
    if _tls_rank(version) < _tls_rank(minimum):
        yield f"accepts {version}; the minimum is {minimum} (minimumTlsVersion)"
    if get(r.props, "enableHttpsTrafficOnly") is False:
        yield "accepts plain HTTP (enableHttpsTrafficOnly: false)"


def s3_tls_only(stack: Stack, config: Config) -> Iterable[tuple[str, Node]]:
    for b in stack.of_type(S3_BUCKET):
        denies = [s for p in stack.dependents(b, S3_POLICY) for s in _statements(get(p.props, "policy"))
                  if s.get("Effect") == "Deny" and get(s, "Condition.Bool.aws:SecureTransport") in ("false", False)]
        if not denies:
            yield "no bucket policy denies requests without TLS (aws:SecureTransport: false)", b


POLICIES = [
    resource_policy("private-cluster-endpoint", "Cluster API servers must not be reachable from the whole internet: "
                    "a leaked credential is then enough to take the cluster.", MANDATORY,
                    (EKS_CLUSTER, GKE_CLUSTER, AKS_CLUSTER), private_endpoint),
    resource_policy("no-public-node-ips", "GPU and system nodes must have no public IPs: every open port on a node "
                    "is then reachable by anyone.", MANDATORY,
                    (LAUNCH_TEMPLATE, GKE_CLUSTER, GKE_NODE_POOL, AKS_AGENT_POOL, AKS_CLUSTER), no_public_node_ips),
    stack_policy("bucket-customer-managed-key", "Checkpoint and dataset buckets must be encrypted with a customer-"
                 "managed key, so access can be revoked and audited by key.", MANDATORY, buckets_customer_key),
    resource_policy("lustre-customer-managed-key", "Lustre file systems must be encrypted with a customer-managed "
                    "key, like the buckets they mirror.", MANDATORY, (FSX_LUSTRE, GCP_LUSTRE, AZURE_LUSTRE),
                    lustre_customer_key),
    resource_policy("cluster-secrets-encrypted", "Kubernetes secrets must be envelope-encrypted with a customer-"
                    "managed key: etcd backups otherwise hold them in the clear.", MANDATORY,
                    (EKS_CLUSTER, GKE_CLUSTER, AKS_CLUSTER), secrets_encrypted),
    resource_policy("node-disks-encrypted", "Node disks hold datasets, checkpoints and credentials in caches: they "
                    "must be encrypted, with customer keys where the cloud offers them.", MANDATORY,
                    (LAUNCH_TEMPLATE, GKE_NODE_POOL, AKS_AGENT_POOL), node_disks_encrypted),
    resource_policy("imdsv2-required", "EC2 metadata must require IMDSv2 tokens with hop limit 1, so pods and SSRF "
                    "bugs cannot read the node role's credentials.", MANDATORY, (LAUNCH_TEMPLATE,), imdsv2,
                    config={"max_hop_limit": {"type": "integer", "minimum": 1, "default": 1,
                                              "description": "largest httpPutResponseHopLimit allowed"}}),
    stack_policy("bucket-public-access-blocked", "Buckets must block every form of public access: one public "
                 "object ACL leaks a model or a dataset.", MANDATORY, buckets_private),
    resource_policy("iam-no-wildcard-admin", "IAM must not grant every action on every resource, nor primitive owner/"
                    "editor roles: one compromised pod would own the account.", MANDATORY,
                    IAM_TYPES,
                    no_wildcard_iam,
                    config={"denied_roles": {"type": "array", "items": {"type": "string"},
                                             "default": ["roles/owner", "roles/editor",
                                                         "8e3af657-a8ff-443c-a75c-2fe8c4bcb635",
                                                         "b24988ac-6180-42a0-ab88-20f7382dd24c"],
                                             "description": "GCP roles and Azure role definition ids (Owner, "
                                                            "Contributor) never granted"}}),
    resource_policy("no-wide-managed-policies", "Roles (node roles above all) must not carry wide AWS-managed "
                    "policies: every pod on a node can use the node role.", MANDATORY,
                    ("aws:iam/rolePolicyAttachment:RolePolicyAttachment",), managed_policies,
                    config={"denied_managed_policies": {
                        "type": "array", "items": {"type": "string"},
                        "default": ["AdministratorAccess", "PowerUserAccess", "IAMFullAccess", "AmazonEC2FullAccess",
                                    "AmazonS3FullAccess", "AmazonEKSWorkerNodePolicy"],
                        "description": "AWS-managed policy names never attached"}}),
    resource_policy("aks-local-accounts-disabled", "AKS local accounts give a static, unaudited cluster-admin "
                    "credential; only Entra ID identities may reach the API.", MANDATORY, (AKS_CLUSTER,),
                    aks_local_accounts),
    resource_policy("workload-identity-enabled", "Pods must get cloud credentials through workload identity, never "
                    "through the node's service account.", MANDATORY, (GKE_CLUSTER, GKE_NODE_POOL, AKS_CLUSTER),
                    workload_identity),
    resource_policy("tls-minimum-version", "Storage endpoints must refuse old TLS versions and plain HTTP.",
                    MANDATORY, (AZURE_STORAGE,), tls_storage,
                    config={"minimum_tls_version": {"type": "string", "enum": ["TLS1_2", "TLS1_3"],
                                                    "default": "TLS1_2"}}),
    stack_policy("bucket-tls-only", "S3 buckets must deny requests made without TLS, which S3 otherwise accepts.",
                 MANDATORY, s3_tls_only),
]
