"""The MultiKueue manager's identity in an AKS worker (docs/fleet-queue.md "Credentials"): a user-assigned managed
identity with a federated identity credential that trusts the manager cluster's issuer for the token minter's subject
alone (https://learn.microsoft.com/entra/workload-id/workload-identity-federation). The minter signs in as it with its
projected ServiceAccount token and gets an Entra token for AKS (1 hour). AKS with Entra ID names a service principal
by its object id, and Kubernetes RBAC (the in-cluster layer) binds that id to the MultiKueue role; with Azure RBAC on,
AKS still honours Kubernetes RBAC bindings (https://learn.microsoft.com/azure/aks/manage-azure-rbac). The identity
has no Azure role at all: it needs no listClusterUserCredential, the worker's stack exports the server and CA."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_azure_native as azure
import yaml

from components.azure.federation import audience, federate
from components.k8s.fleetqueue import subject


def server_and_ca(kubeconfig: str) -> tuple[str, str]:
    """The API server and its CA (base64 PEM) from the cluster's user kubeconfig (not secret; the kubeconfig is
    marked secret as a whole)."""
    [entry] = yaml.safe_load(kubeconfig)["clusters"]
    return entry["cluster"]["server"], entry["cluster"].get("certificate-authority-data", "")


@dataclass(frozen=True)
class ManagerAccessArgs:
    cluster_name: str
    resource_group_name: pulumi.Input[str]
    location: str
    tenant_id: pulumi.Input[str]
    kubeconfig: pulumi.Input[str]
    issuer: pulumi.Input[str]  # the manager cluster's OIDC issuer URL
    tags: dict[str, str]


class ManagerAccess(pulumi.ComponentResource):
    def __init__(self, name: str, args: ManagerAccessArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:azure:MultiKueueManagerAccess", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        identity = azure.managedidentity.UserAssignedIdentity(
            f"{name}-identity", resource_group_name=args.resource_group_name, location=args.location,
            tags=args.tags, opts=child)
        federate(f"{name}-federation", identity=identity, resource_group_name=args.resource_group_name,
                 credential_name="multikueue-manager", issuer=args.issuer, subject=subject(), opts=child)
        self.principal_id = identity.principal_id
        where = pulumi.Output.unsecret(pulumi.Output.from_input(args.kubeconfig)).apply(server_and_ca)
        self.access = pulumi.Output.all(where, args.tenant_id, identity.client_id).apply(
            lambda a: {"server": a[0][0], "ca_data": a[0][1], "tenant_id": a[1], "client_id": a[2],
                       "audience": audience()})
        self.register_outputs({"access": self.access})
