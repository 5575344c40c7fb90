"""Customer-managed keys: one Key Vault per cluster, one key per use (AKS KMS, storage, Lustre) with a rotation
policy, and, for the services that unwrap a key with an identity of their own, a user-assigned identity holding
Key Vault Crypto Service Encryption User on that one key.

The vault authorizes data-plane access with Azure RBAC only, keeps deleted keys 90 days (soft delete) and cannot
be purged early (purge protection). Public network access is disabled: the cluster reaches it through a private
endpoint in the endpoints subnet (privatelink.vaultcore.azure.net), AKS KMS through its own private link, and the
firewall lets trusted Azure services (Azure Storage's customer-managed keys) through."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pulumi
import pulumi_azure_native as azure

from components.azure.naming import globally_unique
from components.azure.private_link import VAULT, EndpointArgs, dns_zone, private_endpoint
from components.azure.roles import KEY_VAULT_CRYPTO_SERVICE_ENCRYPTION_USER, KEY_VAULT_CRYPTO_USER, grant

KEY_TYPE, KEY_SIZE_BITS = "RSA", 2048  # RSA 2048 is accepted by AKS KMS, Azure Storage and Managed Lustre alike
ROTATE_AFTER = "P1Y"  # Key Vault adds a new key version a year after the current one was made
NEW_VERSION_EXPIRES_AFTER = "P2Y"  # a rotated version expires two years after it is made ...
NOTIFY_BEFORE_EXPIRY = "P30D"  # ... and Event Grid is told 30 days ahead
SOFT_DELETE_RETENTION_DAYS = 90  # the maximum


@dataclass(frozen=True)
class KeyUse:
    """What one key is for: its name in the vault, the operations it allows, the role its consumer gets on it, and
    whether this component creates the consumer's identity (AKS brings its control-plane identity)."""

    name: str
    operations: tuple[str, ...]
    role: str
    purpose: str
    own_identity: bool


AKS_KMS = KeyUse("aks-kms", ("encrypt", "decrypt"), KEY_VAULT_CRYPTO_USER, "AKS KMS etcd encryption", False)
STORAGE = KeyUse("storage", ("wrapKey", "unwrapKey"), KEY_VAULT_CRYPTO_SERVICE_ENCRYPTION_USER,
                 "storage account encryption", True)
LUSTRE = KeyUse("lustre", ("wrapKey", "unwrapKey"), KEY_VAULT_CRYPTO_SERVICE_ENCRYPTION_USER,
                "Managed Lustre encryption", True)


@dataclass(frozen=True)
class KeyRef:
    """Everything a consumer needs to use one key."""

    use: KeyUse
    key_name: str
    key_id: pulumi.Output[str]  # ARM resource id of the key: the scope of its role assignment
    key_url: pulumi.Output[str]  # https://<vault>.vault.azure.net/keys/<name>/<version>
    vault_id: pulumi.Output[str]
    vault_uri: pulumi.Output[str]  # https://<vault>.vault.azure.net/
    identity_id: pulumi.Output[str] | None = None  # the consumer's user-assigned identity (own_identity uses)
    grants: tuple[pulumi.Resource, ...] = field(default=())  # the consumer's roles, to depend on before first use


@dataclass(frozen=True)
class KeysArgs:
    cluster_name: str
    resource_group_name: pulumi.Input[str]
    location: str
    tenant_id: pulumi.Input[str]
    subscription_id: pulumi.Input[str]
    endpoints_subnet_id: pulumi.Input[str]
    vnet_id: pulumi.Input[str]
    uses: tuple[KeyUse, ...]
    tags: dict[str, str]


class EncryptionKeys(pulumi.ComponentResource):
    def __init__(self, name: str, args: KeysArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:azure:EncryptionKeys", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.vault = _vault(name, args, child)
        zone = dns_zone(name, VAULT, args.resource_group_name, args.vnet_id, args.tags, child)
        private_endpoint(name, EndpointArgs(
            service=VAULT, target_id=self.vault.id, subnet_id=args.endpoints_subnet_id, dns_zone_id=zone.id,
            resource_group_name=args.resource_group_name, location=args.location, tags=args.tags), child)
        vault_uri = self.vault.properties.apply(lambda p: p.vault_uri)
        self.keys = {use.name: self._key(name, use, args, vault_uri, child) for use in args.uses}
        self.register_outputs({"vault_id": self.vault.id, "vault_uri": vault_uri,
                               **{f"{n}_key_url": k.key_url for n, k in self.keys.items()}})

    def _key(self, name: str, use: KeyUse, args: KeysArgs, vault_uri: pulumi.Output[str],
             opts: pulumi.ResourceOptions) -> KeyRef:
        key = azure.keyvault.Key(
            f"{name}-{use.name}", key_name=use.name, vault_name=self.vault.name,
            resource_group_name=args.resource_group_name, properties=key_properties(use), tags=args.tags, opts=opts)
        ref = KeyRef(use=use, key_name=use.name, key_id=key.id, key_url=key.key_uri_with_version,
                     vault_id=self.vault.id, vault_uri=vault_uri)
        if not use.own_identity:
            return ref
        identity = azure.managedidentity.UserAssignedIdentity(
            f"{name}-{use.name}-identity", resource_group_name=args.resource_group_name, location=args.location,
            tags=args.tags, opts=opts)
        role = grant_key(f"{name}-{use.name}-key-user", ref, identity.principal_id, args.subscription_id, opts)
        return replace(ref, identity_id=identity.id, grants=(role,))


def grant_key(name: str, key: KeyRef, principal_id: pulumi.Input[str], subscription_id: pulumi.Input[str],
              opts: pulumi.ResourceOptions) -> azure.authorization.RoleAssignment:
    """The key's role for its consumer, scoped to that one key (not the vault)."""
    return grant(name, scope=key.key_id, principal_id=principal_id, role=key.use.role,
                 subscription_id=subscription_id, description=f"{key.use.purpose} with key {key.key_name}",
                 opts=opts)


def key_properties(use: KeyUse) -> dict:
    """An RSA key limited to its use's operations, rotated yearly; rotated versions expire, the first does not
    (consumers pinned to a version - AKS KMS, Lustre - move on with `pulumi refresh` then `pulumi up`)."""
    return {"kty": KEY_TYPE, "key_size": KEY_SIZE_BITS, "key_ops": list(use.operations),
            "attributes": {"enabled": True, "exportable": False},
            "rotation_policy": {
                "attributes": {"expiry_time": NEW_VERSION_EXPIRES_AFTER},
                "lifetime_actions": [
                    {"action": {"type": "rotate"}, "trigger": {"time_after_create": ROTATE_AFTER}},
                    {"action": {"type": "notify"}, "trigger": {"time_before_expiry": NOTIFY_BEFORE_EXPIRY}}]}}


def vault_name(cluster_name: str) -> str:
    return globally_unique(cluster_name, "keys")


def _vault(name: str, args: KeysArgs, opts: pulumi.ResourceOptions) -> azure.keyvault.Vault:
    return azure.keyvault.Vault(
        f"{name}-vault",
        vault_name=vault_name(args.cluster_name),
        resource_group_name=args.resource_group_name,
        location=args.location,
        properties={
            "tenant_id": args.tenant_id,
            "sku": {"family": "A", "name": "standard"},
            "enable_rbac_authorization": True,  # no access policies: roles per key, in the activity log
            "enable_soft_delete": True,
            "soft_delete_retention_in_days": SOFT_DELETE_RETENTION_DAYS,
            "enable_purge_protection": True,  # irreversible: a deleted key stays recoverable for the retention
            "public_network_access": "Disabled",
            "network_acls": {"default_action": "Deny", "bypass": "AzureServices", "ip_rules": [],
                             "virtual_network_rules": []},
            "enabled_for_deployment": False,
            "enabled_for_disk_encryption": False,
            "enabled_for_template_deployment": False,
        },
        tags=args.tags,
        opts=opts,
    )
