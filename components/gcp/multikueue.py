"""The MultiKueue manager's identity in a GKE worker (docs/fleet-queue.md "Credentials"): a workload identity pool
whose OIDC provider trusts the manager cluster's issuer for the token minter's subject alone
(https://cloud.google.com/iam/docs/workload-identity-federation-with-kubernetes), a Google service account the pool's
principal may impersonate (roles/iam.workloadIdentityUser on that account only), and, for that account, exactly
``container.clusters.connect`` in the worker's project, which GKE's DNS-based endpoint checks before any request
(components/reach.py). Kubernetes RBAC (the in-cluster layer) binds the account's email to the MultiKueue role.
The minter exchanges its projected token for an access token of the account (1 hour) and nothing longer lives."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from components.k8s.fleetqueue import subject

PROVIDER_ID = "multikueue-manager"
CONNECT = "container.clusters.connect"


def pool_id(cluster_name: str) -> str:
    """4-32 characters, lower case, not starting with gcp-."""
    return f"gpufleet-mk-{cluster_name}"[:32].rstrip("-")


def account_id(cluster_name: str) -> str:
    """6-30 characters: the node account's pattern (iam.node_account_id)."""
    return f"{cluster_name[:20].rstrip('-')}-multikueue"


def custom_role_id(cluster_name: str) -> str:
    """Custom role ids allow letters, digits, underscores and periods."""
    return "gpufleetMultikueueConnect_" + cluster_name.replace("-", "_")


@dataclass(frozen=True)
class ManagerAccessArgs:
    cluster_name: str
    project: pulumi.Input[str]
    server: pulumi.Input[str]  # https://<the endpoint the manager reaches>
    ca_data: pulumi.Input[str]  # "" over the DNS endpoint: its certificate is publicly trusted
    issuer: pulumi.Input[str]  # the manager cluster's OIDC issuer URL


class ManagerAccess(pulumi.ComponentResource):
    def __init__(self, name: str, args: ManagerAccessArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:gcp:MultiKueueManagerAccess", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        audience = pulumi.Output.concat("gpufleet-multikueue:", args.project, ":", args.cluster_name)
        pool = gcp.iam.WorkloadIdentityPool(f"{name}-pool", workload_identity_pool_id=pool_id(args.cluster_name),
                                            project=args.project, display_name="gpufleet MultiKueue manager",
                                            opts=child)
        provider = gcp.iam.WorkloadIdentityPoolProvider(
            f"{name}-provider", project=args.project, workload_identity_pool_id=pool.workload_identity_pool_id,
            workload_identity_pool_provider_id=PROVIDER_ID, attribute_mapping={"google.subject": "assertion.sub"},
            attribute_condition=f"assertion.sub == '{subject()}'",
            oidc={"issuer_uri": args.issuer, "allowed_audiences": [audience]}, opts=child)
        account = gcp.serviceaccount.Account(f"{name}-account", account_id=account_id(args.cluster_name),
                                             project=args.project,
                                             display_name=f"MultiKueue manager on {args.cluster_name}", opts=child)
        gcp.serviceaccount.IAMMember(f"{name}-impersonate", service_account_id=account.name,
                                     role="roles/iam.workloadIdentityUser",
                                     member=pool.name.apply(lambda p: f"principal://iam.googleapis.com/{p}/subject/"
                                                                      f"{subject()}"), opts=child)
        role = gcp.projects.IAMCustomRole(f"{name}-connect", role_id=custom_role_id(args.cluster_name),
                                          project=args.project, title="gpufleet MultiKueue manager: connect",
                                          permissions=[CONNECT], opts=child)
        gcp.projects.IAMMember(f"{name}-connect", project=args.project, role=role.name, member=account.member,
                               opts=child)
        self.email = account.email
        self.access = pulumi.Output.all(args.server, args.ca_data, provider.name, account.email, audience).apply(
            lambda a: {"server": a[0], "ca_data": a[1], "provider": a[2], "service_account": a[3],
                       "audience": a[4]})
        self.register_outputs({"access": self.access})
