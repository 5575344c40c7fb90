"""The cluster's virtual network: a nodes subnet behind a NAT gateway, a subnet for private endpoints, a small
subnet delegated to AKS for the API server (VNet integration) and, when the cluster has Managed Lustre, a subnet
of its own for the file system (AMLFS owns its subnet)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

import pulumi
import pulumi_azure_native as azure

VNET_CIDR = "10.20.0.0/16"
NODES_CIDR = "10.20.0.0/18"  # node addresses only: pods live in the CNI overlay's own range
ENDPOINTS_CIDR = "10.20.64.0/24"
APISERVER_CIDR = "10.20.65.0/28"  # the smallest subnet API server VNet integration accepts
APISERVER_DELEGATION = "Microsoft.ContainerService/managedClusters"
LUSTRE_RANGE = "10.20.72.0/21"  # the Lustre subnet is carved from here, sized by capacity
# Recommended AMLFS subnet prefix by file system size (TiB, prefix):
# https://learn.microsoft.com/azure/azure-managed-lustre/amlfs-prerequisites
_LUSTRE_PREFIX_BY_TIB = ((16, 27), (40, 26), (92, 25), (196, 24), (400, 23))


def lustre_subnet_cidr(capacity_tib: float) -> str:
    """The smallest recommended subnet for a file system of this size (a /22 above 400 TiB)."""
    prefix = next((p for limit, p in _LUSTRE_PREFIX_BY_TIB if capacity_tib <= limit), 22)
    return str(next(ipaddress.ip_network(LUSTRE_RANGE).subnets(new_prefix=prefix)))


@dataclass(frozen=True)
class NetworkArgs:
    resource_group_name: pulumi.Input[str]
    location: str
    lustre_capacity_tib: float | None  # None: no Lustre subnet
    tags: dict[str, str]
    existing_vnet_id: str | None = None  # add our subnets to this VNet (10.20.0.0/16 must be free in it)


class GpuVnet(pulumi.ComponentResource):
    """Nodes have no public addresses; egress goes through one NAT gateway with a static public IP."""

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:azure:GpuVnet", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.vnet_id: pulumi.Input[str]
        base: dict[str, pulumi.Input[str]] = {"resource_group_name": args.resource_group_name}
        nat = _nat_gateway(name, args, child)
        vnet_name: pulumi.Input[str]
        if args.existing_vnet_id:  # /subscriptions/<s>/resourceGroups/<rg>/providers/.../virtualNetworks/<name>
            parts = args.existing_vnet_id.split("/")
            base, vnet_name, self.vnet_id = {"resource_group_name": parts[4]}, parts[-1], args.existing_vnet_id
        else:
            vnet = azure.network.VirtualNetwork(
                f"{name}-vnet", location=args.location, address_space={"address_prefixes": [VNET_CIDR]},
                tags=args.tags, **base, opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(
                    ignore_changes=["subnets"])))  # subnets are their own resources below
            vnet_name, self.vnet_id = vnet.name, vnet.id
        nodes = azure.network.Subnet(f"{name}-nodes", virtual_network_name=vnet_name, address_prefix=NODES_CIDR,
                                     nat_gateway={"id": nat.id}, default_outbound_access=False, **base, opts=child)
        endpoints = azure.network.Subnet(
            f"{name}-endpoints", virtual_network_name=vnet_name, address_prefix=ENDPOINTS_CIDR,
            private_endpoint_network_policies="Enabled", default_outbound_access=False, **base,
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[nodes])))
        apiserver = azure.network.Subnet(
            f"{name}-apiserver", virtual_network_name=vnet_name, address_prefix=APISERVER_CIDR,
            delegations=[{"name": "aks-apiserver", "service_name": APISERVER_DELEGATION}],
            default_outbound_access=False, **base,
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[endpoints])))
        self.nodes_subnet_id = nodes.id
        self.endpoints_subnet_id = endpoints.id
        self.apiserver_subnet_id = apiserver.id
        self.lustre_subnet_id: pulumi.Output[str] | None = None
        if args.lustre_capacity_tib is not None:
            lustre = azure.network.Subnet(
                f"{name}-lustre", virtual_network_name=vnet_name,
                address_prefix=lustre_subnet_cidr(args.lustre_capacity_tib), default_outbound_access=False,
                **base, opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[apiserver])))
            self.lustre_subnet_id = lustre.id
        self.register_outputs({"vnet_id": self.vnet_id, "nodes_subnet_id": self.nodes_subnet_id,
                               "endpoints_subnet_id": self.endpoints_subnet_id,
                               "apiserver_subnet_id": self.apiserver_subnet_id})


def _nat_gateway(name: str, args: NetworkArgs, opts: pulumi.ResourceOptions) -> azure.network.NatGateway:
    ip = azure.network.PublicIPAddress(
        f"{name}-nat-ip", resource_group_name=args.resource_group_name, location=args.location,
        sku={"name": "Standard", "tier": "Regional"}, public_ip_allocation_method="Static",
        public_ip_address_version="IPv4", tags=args.tags, opts=opts)
    return azure.network.NatGateway(
        f"{name}-nat", resource_group_name=args.resource_group_name, location=args.location,
        sku={"name": "Standard"}, public_ip_addresses=[{"id": ip.id}], idle_timeout_in_minutes=10,
        tags=args.tags, opts=opts)
