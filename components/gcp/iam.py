"""Least-privilege identities: a dedicated node service account with Google's minimal node role, and the
cluster admins named in the spec."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

# roles/container.defaultNodeServiceAccount: logging, monitoring and metadata writes a node needs, nothing more.
# Workloads reach GCS, Lustre and other APIs through Workload Identity, never through the node's account.
NODE_ROLES = ("roles/container.defaultNodeServiceAccount", "roles/artifactregistry.reader")
ADMIN_ROLE = "roles/container.admin"
_PRINCIPAL_KINDS = ("user:", "group:", "serviceAccount:", "principal:", "principalSet:", "domain:")


def node_account_id(cluster_name: str) -> str:
    """A 6-30 character account id derived from the cluster name."""
    return f"{cluster_name[:20].rstrip('-')}-gke-nodes"


def node_service_account(name: str, cluster_name: str, project: pulumi.Input[str],
                         opts: pulumi.ResourceOptions) -> gcp.serviceaccount.Account:
    account = gcp.serviceaccount.Account(f"{name}-nodes", account_id=node_account_id(cluster_name),
                                         display_name=f"GKE nodes of {cluster_name}", opts=opts)
    for role in NODE_ROLES:
        suffix = role.split("/")[1].replace(".", "-")
        gcp.projects.IAMMember(f"{name}-nodes-{suffix}", project=project, role=role, member=account.member,
                               opts=opts)
    return account


def admin_member(principal: str) -> str:
    """An IAM member from the spec's admins: kind-prefixed members pass through, bare emails are groups."""
    return principal if principal.startswith(_PRINCIPAL_KINDS) else f"group:{principal}"


def grant_admins(name: str, admins: list[str], project: pulumi.Input[str], opts: pulumi.ResourceOptions) -> None:
    """Kubernetes Engine Admin for each admin (GKE maps it to cluster-admin in RBAC)."""
    for i, principal in enumerate(admins):
        gcp.projects.IAMMember(f"{name}-admin-{i}", project=project, role=ADMIN_ROLE,
                               member=admin_member(principal), opts=opts)
