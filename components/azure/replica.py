"""Peers' checkpoint tools into an AKS worker's checkpoint container (docs/fleet-queue.md "Recovery across
clusters"): a user-assigned managed identity with, per peer, a federated identity credential trusting the peer
cluster's issuer for the peer's checkpoint-tools ServiceAccount alone (audience ``api://AzureADTokenExchange``), and
Storage Blob Data Contributor on the checkpoint container only, under an ABAC condition that limits it to the
export prefix: reading, writing, creating, deleting and moving a blob only where its path starts with the prefix,
listing only with a prefix that does (the documented patterns of "Read or list blobs in named containers with a
path" and "Write blobs in named containers with a path", learn.microsoft.com/azure/storage/blobs/
storage-auth-abac-examples). The account is encrypted by its own identity's key, so no key role."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_azure_native as azure

from components import checkpoint_tools
from components.azure import federation
from components.azure.roles import STORAGE_BLOB_DATA_CONTRIBUTOR, grant
from components.fleet import Cluster
from components.replicas import Source, collect, prefix, when_known

BLOBS = "Microsoft.Storage/storageAccounts/blobServices/containers/blobs"
# the data actions of Storage Blob Data Contributor that touch one blob (its list is a read with the Blob.List
# suboperation, conditioned on the request's prefix instead)
PATH_ACTIONS = ("write", "add/action", "delete", "move/action")


def condition(under: str) -> str:
    """Every blob action of the role only under ``under``; a list only with a prefix under it."""
    guarded = " AND ".join([f"!(ActionMatches{{'{BLOBS}/read'}} AND NOT SubOperationMatches{{'Blob.List'}})",
                            *(f"!(ActionMatches{{'{BLOBS}/{a}'}})" for a in PATH_ACTIONS)])
    return (f"(({guarded}) OR (@Resource[{BLOBS}:path] StringStartsWith '{under}')) AND "
            f"((!(ActionMatches{{'{BLOBS}/read'}} AND SubOperationMatches{{'Blob.List'}})) OR "
            f"(@Request[{BLOBS}:prefix] StringStartsWith '{under}'))")


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
          description="gpufleet: peers' checkpoint tools, the checkpoint container's export prefix only", opts=opts,
          condition=condition(prefix(cluster)))

    def federate(source: Source) -> pulumi.Output[Any]:
        def build(issuer: str) -> pulumi.Output[Any]:
            credential = federation.federate(f"{name}-{source.name}", identity=identity, resource_group_name=rg,
                                             credential_name=source.name, issuer=issuer,
                                             subject=checkpoint_tools.subject(), opts=opts)
            return credential.id.apply(lambda _: {"federated": True})
        return when_known(source, build)

    return collect({"bucket": storage.container.name, "region": cluster.spec.region, "account": storage.account.name,
                    "tenant_id": client.tenant_id, "client_id": identity.client_id},
                   {s.name: federate(s) for s in sources})
