"""Who can reach a cluster's Kubernetes API server, and how: declared per cloud with sources, decided from the spec.

A client of an API server is an Origin: the deployer (the `pulumi up` that installs the in-cluster layer), a user's
kubectl, or another cluster (a manager cluster reaching a worker's API server). ``reach`` says which route it takes
or why it cannot get there, before anything is built. ``components.deploy_path`` builds the deploy path of each
cluster on it. Pure data and functions: importing this never imports a cloud SDK.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from enum import StrEnum

from components.catalog import Cloud
from components.spec import ClusterSpec


class Where(StrEnum):
    OUTSIDE = "outside"  # the internet: a hosted CI runner, a laptop, another cloud
    NETWORK = "network"  # inside the cluster's VPC / VNet, or a network peered / connected to it


class Route(StrEnum):
    PUBLIC_ENDPOINT = "public-endpoint"  # the public endpoint, open only to the origin's fixed addresses
    DNS_ENDPOINT = "dns-endpoint"  # GKE's DNS-based control-plane endpoint, authorised by IAM, from anywhere
    IN_NETWORK = "in-network"  # the private endpoint, from inside the network


@dataclass(frozen=True)
class ApiReach:
    """How this cloud's API server can be reached; each fact with its source."""

    service: str  # EKS / GKE / AKS
    network: str  # what the cloud calls the network: VPC / VNet
    private_from_outside: str  # how a private endpoint is reached from outside ("": it cannot), with the source
    private_unreachable_why: str  # why it cannot, with the source
    private_default: Where  # where the deployer of a private cluster runs unless the spec says
    runner_cidrs_used: str  # where deploy.runner_cidrs are let in ("": not used)
    runner_cidrs_unused_why: str = ""
    exec_plugin: str = ""  # the kubeconfig's credential plugin


REACH: dict[Cloud, ApiReach] = {
    Cloud.AWS: ApiReach(
        service="EKS", network="VPC",
        private_from_outside="",
        private_unreachable_why="with public access off, the EKS API server endpoint is reachable only from "
                                "within the VPC or a connected network "
                                "(https://docs.aws.amazon.com/eks/latest/userguide/cluster-endpoint.html)",
        private_default=Where.NETWORK,
        runner_cidrs_used="HTTPS from them into the cluster security group",
        exec_plugin="aws eks get-token"),
    Cloud.GCP: ApiReach(
        service="GKE", network="VPC",
        # reachable from any network that reaches Google APIs, each request authorised by IAM before RBAC:
        # https://cloud.google.com/kubernetes-engine/docs/concepts/network-isolation
        private_from_outside="GKE's DNS-based control-plane endpoint, authorised by IAM (container.clusters.connect)",
        private_unreachable_why="",
        private_default=Where.OUTSIDE,
        runner_cidrs_used="the control plane's authorized networks",
        exec_plugin="gke-gcloud-auth-plugin"),
    Cloud.AZURE: ApiReach(
        service="AKS", network="VNet",
        private_from_outside="",
        private_unreachable_why="a private AKS API server has no public address and its name resolves only in "
                                "the cluster's VNet and networks linked to its private DNS zone "
                                "(https://learn.microsoft.com/azure/aks/private-clusters)",
        private_default=Where.NETWORK,
        runner_cidrs_used="",
        runner_cidrs_unused_why="a private AKS API server (VNet integration: an internal load balancer in its "
                                "delegated subnet) has no IP allow list; anything in the VNet or a peered VNet "
                                "linked to its private DNS zone reaches it "
                                "(https://learn.microsoft.com/azure/aks/api-server-vnet-integration)",
        exec_plugin="kubelogin"),
}


@dataclass(frozen=True)
class Origin:
    """A client of an API server: where it runs and, where it matters, its source addresses."""

    where: Where
    cidrs: tuple[str, ...] = ()  # outside: its fixed egress addresses; network: its subnet(s)
    what: str = "the deployer"


@dataclass(frozen=True)
class Reach:
    route: Route | None  # None: it cannot get there
    how: str = ""  # one line: the way in
    refused: str = ""  # why not, and what would work


def covered(cidr: str, allowed: list[str]) -> bool:
    """Is every address of ``cidr`` inside one of ``allowed`` (invalid entries never cover)?"""
    try:
        net = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return False
    for entry in allowed:
        try:
            if net.version == (outer := ipaddress.ip_network(entry, strict=False)).version and net.subnet_of(outer):
                return True
        except ValueError:
            continue
    return False


def reach(cloud: Cloud, c: ClusterSpec, origin: Origin) -> Reach:
    api = REACH[cloud]
    if origin.where is Where.NETWORK:
        return Reach(Route.IN_NETWORK, f"the {c.endpoint} {api.service} endpoint from inside the {api.network}")
    if c.endpoint == "public":
        if not origin.cidrs:
            return Reach(None, refused=f"the {api.service} endpoint is open only to public_access_cidrs, and "
                         f"{origin.what}'s fixed egress addresses are not declared (GitHub-hosted runners have none)")
        outside = [x for x in origin.cidrs if not covered(x, c.public_access_cidrs)]
        if outside:
            return Reach(None, refused=f"{', '.join(outside)} (of {origin.what}) is not inside public_access_cidrs "
                         f"({', '.join(c.public_access_cidrs) or 'none'}), so the {api.service} endpoint refuses it")
        return Reach(Route.PUBLIC_ENDPOINT, f"the public {api.service} endpoint, open to {', '.join(origin.cidrs)}")
    if api.private_from_outside:
        return Reach(Route.DNS_ENDPOINT, api.private_from_outside)
    return Reach(None, refused=f"{origin.what} runs outside the network, but {api.private_unreachable_why}")
