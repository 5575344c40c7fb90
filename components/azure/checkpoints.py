"""The checkpoint tools' Azure identity: a user-assigned managed identity that AKS workload identity hands to the
tools' ServiceAccount (a federated identity credential trusting the cluster's OIDC issuer for that one subject), with
Storage Blob Data Contributor on the checkpoint container only (not the account, not the logs container).

The ServiceAccount carries the identity's client id and the pods the webhook's label; the names come from the
azure-workload-identity pin's digest (pkg/webhook/consts.go). rclone's azureblob remote with env_auth builds
azidentity's DefaultAzureCredential, which reads the env the webhook injects (backend/azureblob/auth/auth.go and
docs/content/azureblob.md "Workload Identity" at the rclone pin). The account is encrypted by its own identity's key
(``components.azure.storage``), so the tools need no key role."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_azure_native as azure

from components import checkpoint_tools
from components.azure.federation import federate
from components.azure.roles import STORAGE_BLOB_DATA_CONTRIBUTOR, grant


@dataclass(frozen=True)
class CheckpointIdentityArgs:
    resource_group_name: pulumi.Input[str]
    location: str
    oidc_issuer: pulumi.Input[str]
    container_id: pulumi.Input[str]
    subscription_id: pulumi.Input[str]
    tags: dict[str, str]


class CheckpointIdentity(pulumi.ComponentResource):
    def __init__(self, name: str, args: CheckpointIdentityArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:azure:CheckpointIdentity", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.identity = azure.managedidentity.UserAssignedIdentity(
            f"{name}-identity", resource_group_name=args.resource_group_name, location=args.location, tags=args.tags,
            opts=child)
        federate(f"{name}-federation", identity=self.identity, resource_group_name=args.resource_group_name,
                 credential_name=checkpoint_tools.SERVICE_ACCOUNT, issuer=args.oidc_issuer,
                 subject=checkpoint_tools.subject(), opts=child)
        grant(f"{name}-blob-data", scope=args.container_id, principal_id=self.identity.principal_id,
              role=STORAGE_BLOB_DATA_CONTRIBUTOR, subscription_id=args.subscription_id,
              description="gpufleet checkpoint tools: the checkpoint container only", opts=child)
        self.client_id = self.identity.client_id
        self.register_outputs({"client_id": self.client_id})
