"""Checkpoint storage: one hardened StorageV2 account per bucket (no public network access, TLS 1.2,
infrastructure encryption under a customer-managed Key Vault key, HTTPS only, no anonymous blobs, versioning with
a lifecycle policy), a data container and a separate logging container, reached from the VNet through a blob
private endpoint."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_azure_native as azure

from components.azure.keys import KeyRef
from components.azure.naming import globally_unique
from components.azure.private_link import BLOB, EndpointArgs, private_endpoint
from components.checkpoint_tools import PROBE_NONCURRENT_DAYS, PROBE_PREFIX
from components.spec import BucketSpec

LOGS_CONTAINER = "lustre-logs"  # AMLFS wants its HSM logs in a container apart from the data
# Managed Lustre auto-import reads the change feed, kept >= 7 days:
# https://learn.microsoft.com/azure/azure-managed-lustre/auto-import
CHANGE_FEED_DAYS = 7


@dataclass(frozen=True)
class BucketArgs:
    spec: BucketSpec
    cluster_name: str
    resource_group_name: pulumi.Input[str]
    location: str
    endpoints_subnet_id: pulumi.Input[str]
    blob_dns_zone_id: pulumi.Input[str]
    lustre_linked: bool  # AMLFS blob integration needs shared-key access (it signs SAS tokens)
    key: KeyRef  # the customer-managed key and the identity that unwraps it
    tags: dict[str, str]


class CheckpointStorage(pulumi.ComponentResource):
    def __init__(self, name: str, args: BucketArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:azure:CheckpointStorage", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        base = {"resource_group_name": args.resource_group_name}
        self.account = _account(name, args, child)
        account = {"account_name": self.account.name, **base}
        blob_service = azure.storage.BlobServiceProperties(
            f"{name}-blob-service", blob_services_name="default", is_versioning_enabled=args.spec.versioning,
            delete_retention_policy={"enabled": True, "days": 7},
            change_feed={"enabled": True, "retention_in_days": CHANGE_FEED_DAYS} if args.lustre_linked else None,
            container_delete_retention_policy={"enabled": True, "days": 7}, **account, opts=child)
        azure.storage.ManagementPolicy(f"{name}-lifecycle", management_policy_name="default",
                                       policy={"rules": lifecycle_rules(args.spec)}, **account,
                                       opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(
                                           depends_on=[blob_service])))
        self.container = azure.storage.BlobContainer(f"{name}-data", container_name=args.spec.name,
                                                     public_access="None", **account, opts=child)
        self.logs_container = azure.storage.BlobContainer(f"{name}-logs", container_name=LOGS_CONTAINER,
                                                          public_access="None", **account, opts=child)
        private_endpoint(name, EndpointArgs(
            service=BLOB, target_id=self.account.id, subnet_id=args.endpoints_subnet_id,
            dns_zone_id=args.blob_dns_zone_id, resource_group_name=args.resource_group_name, location=args.location,
            tags=args.tags), child)
        self.account_id = self.account.id
        self.container_id = self.container.id
        self.logs_container_id = self.logs_container.id
        self.register_outputs({"account_id": self.account_id, "container_id": self.container_id,
                               "logs_container_id": self.logs_container_id})


def _account(name: str, args: BucketArgs, opts: pulumi.ResourceOptions) -> azure.storage.StorageAccount:
    return azure.storage.StorageAccount(
        f"{name}-account",
        account_name=globally_unique(args.cluster_name, args.spec.name),
        resource_group_name=args.resource_group_name,
        location=args.location,
        kind="StorageV2",
        sku={"name": "Standard_ZRS"},
        access_tier="Hot",
        is_hns_enabled=False,  # blob versioning and the checkpoint lifecycle need a flat namespace
        public_network_access="Disabled",
        network_rule_set={"default_action": "Deny", "bypass": "AzureServices"},
        minimum_tls_version="TLS1_2",
        enable_https_traffic_only=True,
        allow_blob_public_access=False,
        allow_cross_tenant_replication=False,
        allow_shared_key_access=args.lustre_linked,
        default_to_o_auth_authentication=True,
        identity={"type": "UserAssigned", "user_assigned_identities": [args.key.identity_id]},
        encryption=encryption(args.key),
        tags=args.tags,
        # the identity must hold its key role before the account first wraps its key
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=list(args.key.grants))),
    )


def encryption(key: KeyRef) -> dict:
    """Infrastructure (double) encryption under the Key Vault key. No key version: Azure Storage follows the key's
    rotations by itself. The user-assigned identity unwraps the key (a new account cannot use a system identity)."""
    return {"require_infrastructure_encryption": True, "key_source": "Microsoft.Keyvault",
            "key_vault_properties": {"key_name": key.key_name, "key_vault_uri": key.vault_uri},
            "encryption_identity": {"encryption_user_assigned_identity": key.identity_id},
            "services": {"blob": {"enabled": True, "key_type": "Account"},
                         "file": {"enabled": True, "key_type": "Account"}}}


def lifecycle_rules(spec: BucketSpec) -> list[dict]:
    """Old checkpoint versions expire after ``noncurrent_days``; current blobs go cold after ``archive_after_days``."""
    actions: dict[str, dict] = {"version": {"delete": {"days_after_creation_greater_than": spec.noncurrent_days}}}
    if spec.archive_after_days:
        actions["base_blob"] = {"tier_to_cold": {"days_after_modification_greater_than": spec.archive_after_days}}
    # the checkpoint probe writes and deletes a test blob per run: drop its old versions after a day (a prefix
    # match starts with the container's name)
    probe = {"version": {"delete": {"days_after_creation_greater_than": PROBE_NONCURRENT_DAYS}}}
    return [{"name": "checkpoints", "enabled": True, "type": "Lifecycle",
             "definition": {"filters": {"blob_types": ["blockBlob"]}, "actions": actions}},
            {"name": "probe-objects", "enabled": True, "type": "Lifecycle",
             "definition": {"filters": {"blob_types": ["blockBlob"], "prefix_match": [f"{spec.name}/{PROBE_PREFIX}"]},
                            "actions": probe}}]
