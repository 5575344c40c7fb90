"""Private Link plumbing shared by every private service of a cluster (blob storage, Key Vault): a private DNS
zone linked to the VNet, and a private endpoint in the endpoints subnet registered in that zone."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_azure_native as azure


@dataclass(frozen=True)
class PrivateService:
    """One Private Link sub-resource: its label in child names, its group id, and its privatelink DNS zone."""

    label: str
    group_id: str
    zone: str


BLOB = PrivateService(label="blob", group_id="blob", zone="privatelink.blob.core.windows.net")
VAULT = PrivateService(label="vault", group_id="vault", zone="privatelink.vaultcore.azure.net")


def dns_zone(name: str, service: PrivateService, resource_group_name: pulumi.Input[str],
             vnet_id: pulumi.Input[str], tags: dict[str, str],
             opts: pulumi.ResourceOptions) -> azure.privatedns.PrivateZone:
    """The service's privatelink zone linked to the VNet, so nodes and Lustre resolve its private endpoints."""
    zone = azure.privatedns.PrivateZone(f"{name}-{service.label}-dns", private_zone_name=service.zone,
                                        location="Global", resource_group_name=resource_group_name, tags=tags,
                                        opts=opts)
    azure.privatedns.VirtualNetworkLink(f"{name}-{service.label}-dns-link", private_zone_name=zone.name,
                                        resource_group_name=resource_group_name, location="Global",
                                        virtual_network={"id": vnet_id}, registration_enabled=False, tags=tags,
                                        opts=opts)
    return zone


@dataclass(frozen=True)
class EndpointArgs:
    service: PrivateService
    target_id: pulumi.Input[str]  # the resource the endpoint connects to
    subnet_id: pulumi.Input[str]
    dns_zone_id: pulumi.Input[str]
    resource_group_name: pulumi.Input[str]
    location: str
    tags: dict[str, str]


def private_endpoint(name: str, args: EndpointArgs, opts: pulumi.ResourceOptions) -> azure.network.PrivateEndpoint:
    """``<name>-<label>-pe`` with its A record registered in the zone (``<name>-<label>-pe-dns``)."""
    label = args.service.label
    endpoint = azure.network.PrivateEndpoint(
        f"{name}-{label}-pe", resource_group_name=args.resource_group_name, location=args.location,
        subnet={"id": args.subnet_id},
        private_link_service_connections=[{"name": label, "private_link_service_id": args.target_id,
                                           "group_ids": [args.service.group_id]}],
        tags=args.tags, opts=opts)
    azure.network.PrivateDnsZoneGroup(
        f"{name}-{label}-pe-dns", private_dns_zone_group_name="default", private_endpoint_name=endpoint.name,
        resource_group_name=args.resource_group_name,
        private_dns_zone_configs=[{"name": label, "private_dns_zone_id": args.dns_zone_id}], opts=opts)
    return endpoint
