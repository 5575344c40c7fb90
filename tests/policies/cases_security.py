"""Crafted violations of the security policies: one mutation of a captured (AWS) or crafted (GKE, AKS) resource."""

import json

from tests.policies import keys as k
from tests.policies.helpers import DROP, case

ADMIN = json.dumps({"Version": "2012-10-17", "Statement": [
    {"Sid": "Admin", "Effect": "Allow", "Action": "*", "Resource": "*"}]})

CASES = [
    case("private-cluster-endpoint", "aws-train", k.EKS, {"vpcConfig.endpointPublicAccess": True},
         "the EKS API endpoint is public to the internet: set endpoint: private, or list the office / CI CIDRs "
         "in public_access_cidrs"),
    case("private-cluster-endpoint", "gke", k.GKE, {"privateClusterConfig.enablePrivateEndpoint": False},
         "the GKE control plane has a public endpoint open to any address: set "
         "privateClusterConfig.enablePrivateEndpoint, or masterAuthorizedNetworksConfig.cidrBlocks"),
    case("private-cluster-endpoint", "aks", k.AKS, {"apiServerAccessProfile.enablePrivateCluster": False},
         "the AKS API server is public to any address: set apiServerAccessProfile.enablePrivateCluster, "
         "or authorizedIPRanges"),
    case("no-public-node-ips", "aws-train", k.LT_H100, {"networkInterfaces.0.associatePublicIpAddress": "true"},
         "network interface on card 0 gets a public IP (associatePublicIpAddress: true); nodes reach the "
         "internet through the NAT gateway"),
    case("no-public-node-ips", "gke", k.GKE_POOL, {"networkConfig.enablePrivateNodes": False},
         "this node pool turns private nodes off (networkConfig.enablePrivateNodes: false)"),
    case("no-public-node-ips", "aks", k.AKS_POOL, {"enableNodePublicIP": True},
         "AKS nodes get public IPs (enableNodePublicIP: true)"),
    case("bucket-customer-managed-key", "aws-train", k.SSE,
         {"rules.0.applyServerSideEncryptionByDefault": {"sseAlgorithm": "AES256"}},
         "no server-side encryption configuration with aws:kms and a customer key (kmsMasterKeyId)", on=k.BUCKET),
    case("bucket-customer-managed-key", "gke", k.GCS, {"encryption": DROP},
         "no customer-managed key: set encryption.defaultKmsKeyName"),
    case("bucket-customer-managed-key", "aks", k.STORAGE, {"encryption.keySource": "Microsoft.Storage"},
         "encrypted with Microsoft-managed keys: set encryption.keySource: Microsoft.Keyvault with "
         "keyVaultProperties"),
    case("lustre-customer-managed-key", "aws-train", k.FSX, {"kmsKeyId": DROP},
         "Lustre data is encrypted with a provider-managed key: set kmsKeyId"),
    case("lustre-customer-managed-key", "gke", k.GCP_LUSTRE, {"kmsKey": DROP},
         "Lustre data is encrypted with a provider-managed key: set kmsKey"),
    case("lustre-customer-managed-key", "aks", k.AML, {"encryptionSettings": DROP},
         "Lustre data is encrypted with a provider-managed key: set encryptionSettings.keyEncryptionKey.keyUrl"),
    case("cluster-secrets-encrypted", "aws-train", k.EKS, {"encryptionConfig": DROP},
         "Kubernetes secrets are not envelope-encrypted: set encryptionConfig with a KMS key for secrets"),
    case("cluster-secrets-encrypted", "gke", k.GKE, {"databaseEncryption.state": "DECRYPTED"},
         "etcd is not encrypted with a Cloud KMS key: set databaseEncryption {state: ENCRYPTED, keyName}"),
    case("cluster-secrets-encrypted", "aks", k.AKS, {"securityProfile.azureKeyVaultKms.enabled": False},
         "secrets are not encrypted with a Key Vault key: set securityProfile.azureKeyVaultKms.enabled"),
    case("node-disks-encrypted", "aws-train", k.LT_H100, {"blockDeviceMappings.0.ebs.encrypted": "false"},
         "EBS volume /dev/xvda is not encrypted (ebs.encrypted: true)"),
    case("node-disks-encrypted", "gke", k.GKE_POOL, {"nodeConfig.bootDiskKmsKey": DROP},
         "boot disks use Google-managed keys: set nodeConfig.bootDiskKmsKey"),
    case("node-disks-encrypted", "aks", k.AKS_POOL, {"enableEncryptionAtHost": DROP},
         "node disks and caches are not encrypted at host: set enableEncryptionAtHost: true"),
    case("imdsv2-required", "aws-train", k.LT_H100, {"metadataOptions.httpTokens": "optional"},
         "IMDSv1 is allowed (metadataOptions.httpTokens: 'optional'): set it to 'required'"),
    case("imdsv2-required", "dev", "aws:ec2/launchTemplate:LaunchTemplate::dev-l4-lt",
         {"metadataOptions.httpPutResponseHopLimit": 2},
         "metadata hop limit 2 lets pods reach node credentials; at most 1"),
    case("bucket-public-access-blocked", "aws-train", k.PUBLIC_ACCESS, {"restrictPublicBuckets": False},
         "public access is not fully blocked: restrictPublicBuckets not set on a BucketPublicAccessBlock",
         on=k.BUCKET),
    case("bucket-public-access-blocked", "gke", k.GCS, {"publicAccessPrevention": "inherited"},
         "set publicAccessPrevention: enforced and uniformBucketLevelAccess: true"),
    case("bucket-public-access-blocked", "aks", k.STORAGE, {"allowBlobPublicAccess": True},
         "anonymous blob access is not disabled: set allowBlobPublicAccess: false"),
    case("iam-no-wildcard-admin", "aws-train", k.NODE_ROLE, {"inlinePolicies": [{"name": "admin", "policy": ADMIN}]},
         "statement 'Admin' allows every action on every resource"),
    case("iam-no-wildcard-admin", "gke", k.GCP_IAM, {"role": "roles/editor"},
         "grants a primitive / owner role (roles/editor); grant a narrower predefined role"),
    case("no-wide-managed-policies", "aws-train", k.NODE_ATTACHMENT,
         {"policyArn": "arn:aws:iam::aws:policy/AdministratorAccess"},
         "attaches AdministratorAccess, a wide AWS-managed policy; node and service roles get only the policies "
         "their job needs (AmazonEKSWorkerNodeMinimalPolicy, AmazonEC2ContainerRegistryPullOnly)"),
    case("aks-local-accounts-disabled", "aks", k.AKS, {"disableLocalAccounts": False},
         "local accounts (the static cluster-admin kubeconfig) are enabled: set disableLocalAccounts: true"),
    case("workload-identity-enabled", "gke", k.GKE, {"workloadIdentityConfig": DROP},
         "Workload Identity is off: set workloadIdentityConfig.workloadPool to <project>.svc.id.goog"),
    case("workload-identity-enabled", "gke", k.GKE_POOL, {"nodeConfig.workloadMetadataConfig.mode": "GCE_METADATA"},
         "pods can read the node's service account: set nodeConfig.workloadMetadataConfig.mode: GKE_METADATA"),
    case("workload-identity-enabled", "aks", k.AKS, {"securityProfile.workloadIdentity.enabled": False},
         "workload identity is off: set securityProfile.workloadIdentity.enabled and oidcIssuerProfile.enabled"),
    case("tls-minimum-version", "aks", k.STORAGE, {"minimumTlsVersion": "TLS1_0"},
         "accepts TLS1_0; the minimum is TLS1_2 (minimumTlsVersion)"),
    case("bucket-tls-only", "aws-train", k.TLS_ONLY, DROP,
         "no bucket policy denies requests without TLS (aws:SecureTransport: false)", on=k.BUCKET),
]
