"""Peers' checkpoint tools into an AKS worker's checkpoint container (docs/fleet-queue.md "Recovery across
clusters"): a user-assigned managed identity with, per peer, a federated identity credential trusting the peer
cluster's issuer for the peer's checkpoint-tools ServiceAccount alone (audience ``api://AzureADTokenExchange``), and
Storage Blob Data Contributor on the checkpoint container only (not the account, not the logs container).

Not limited to the export prefix: Azure can condition a role assignment on a blob's path (ABAC conditions on
``Microsoft.Storage/storageAccounts/blobServices/containers/blobs:path``), which this does not build yet, so a peer
may write anywhere in the checkpoint container (its datasets and probe prefixes too), as this worker's own tools
may. The account is encrypted by its own identity's key, so no key role."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_azure_native as azure

from components import checkpoint_tools
from components.azure.roles import STORAGE_BLOB_DATA_CONTRIBUTOR, grant
from components.fleet import Cluster
from components.k8s.checkpoints import webhook_constant
from components.replicas import Source, collect, when_known


def trust_peers(cluster: Cluster, built: Any, sources: list[Source]) -> pulumi.Output[Any]:
    assert cluster.spec.storage.lustre is not None
    storage = built.buckets[cluster.spec.storage.lustre.bucket]
    name, opts = f"{cluster.name}-checkpoint-peers", pulumi.ResourceOptions(parent=built)
    rg = built.resource_group.name
    client = azure.authorization.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=built))
    identity = azure.managedidentity.UserAssignedIdentity(name, resource_group_name=rg, location=cluster.spec.region,
                                                          tags=cluster.tags, opts=opts)
    grant(f"{name}-blob-data", scope=storage.container_id, principal_id=identity.principal_id,
          role=STORAGE_BLOB_DATA_CONTRIBUTOR, subscription_id=client.subscription_id,
          description="gpufleet: peers' checkpoint tools, the checkpoint container only", opts=opts)

    def federate(source: Source) -> pulumi.Output[Any]:
        def build(issuer: str) -> pulumi.Output[Any]:
            credential = azure.managedidentity.FederatedIdentityCredential(
                f"{name}-{source.name}", resource_group_name=rg, resource_name_=identity.name,
                federated_identity_credential_resource_name=source.name, issuer=issuer,
                subject=checkpoint_tools.subject(), audiences=[webhook_constant("DefaultAudience")], opts=opts)
            return credential.id.apply(lambda _: {"federated": True})
        return when_known(source, build)

    return collect({"bucket": storage.container.name, "region": cluster.spec.region, "account": storage.account.name,
                    "tenant_id": client.tenant_id, "client_id": identity.client_id},
                   {s.name: federate(s) for s in sources})
