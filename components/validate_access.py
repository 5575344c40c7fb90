"""Cluster checks about who and where: the API endpoint's exposure, the admins' form (and whether a cluster
without admins could be used at all), and the zones the control plane needs."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator

from components.capabilities import CloudCapabilities
from components.errors import SpecProblem, unknown_name
from components.spec import ClusterSpec

Problems = Iterator[SpecProblem]


def check_endpoint(c: ClusterSpec, path: str) -> Problems:
    where = f"{path}.public_access_cidrs"
    if c.endpoint == "private" and c.public_access_cidrs:
        yield SpecProblem(where, "is set but the endpoint is private.",
                          "Remove it, or set endpoint: public to open the API server to these ranges.")
    if c.endpoint == "public" and not c.public_access_cidrs:
        yield SpecProblem(where, "is empty: a public endpoint would be open to the whole internet.",
                          "List the office/VPN CIDRs that may reach the API server.")
    yield from cidr_problems(c.public_access_cidrs, where, "203.0.113.0/24", "opens the API server to everyone.",
                             "Use narrower ranges, or keep the endpoint private.")


def cidr_problems(values: list[str], where: str, example: str, everyone: str, narrower: str) -> Problems:
    """A problem per entry that is not a CIDR, or is every address (``everyone`` says what that would do)."""
    for k, cidr in enumerate(values):
        try:
            net = ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            yield SpecProblem(f"{where}[{k}]", f"{cidr!r} is not a CIDR.", f"Write it like {example}.")
            continue
        if net.prefixlen == 0:
            yield SpecProblem(f"{where}[{k}]", f"{cidr!r} {everyone}", narrower)


def check_admins(caps: CloudCapabilities, c: ClusterSpec, path: str) -> Problems:
    title = caps.cloud.title
    if not c.admins and caps.admins_required:
        yield SpecProblem(f"{path}.admins", f"is empty, but on {title} {caps.admins_required}.",
                          f"List at least one admin, like {caps.admin_example!r}.")
    for k, admin in enumerate(c.admins):
        if caps.admin_pattern and not re.match(caps.admin_pattern, admin):
            yield SpecProblem(f"{path}.admins[{k}]", f"{admin!r} is not a {title} cluster admin principal.",
                              f"Use the form {caps.admin_example!r}.")


def zone_name(caps: CloudCapabilities, region: str, zone: str, where: str) -> SpecProblem | None:
    """A zone name where the cloud wants a zone id (AWS: use1-az6, not us-east-1a), with the command to find it."""
    if not (caps.zone_name_pattern and re.match(caps.zone_name_pattern, zone)):
        return None
    return SpecProblem(where, f"{zone!r} is a zone name; {caps.cloud.title} maps zone names to physical zones "
                       "differently in every account, so zones are given by zone id "
                       f"(like {caps.zone_id_example!r}).", "Find the id with: aws ec2 describe-availability-"
                       f"zones --region {region} --query \"AvailabilityZones[?ZoneName=='{zone}'].ZoneId\"")


def check_zones(caps: CloudCapabilities, c: ClusterSpec, path: str, known: set[str] | None) -> Problems:
    """Zones of the region (``known``: every zone the catalogue has for it; None when the region is unknown)."""
    for j, zone in enumerate(c.zones):
        named = zone_name(caps, c.region, zone, f"{path}.zones[{j}]")
        if named:
            yield named
        elif known is not None and zone not in known:
            yield unknown_name(f"{path}.zones[{j}]", f"zone of {c.region}", zone, sorted(known))
    distinct = list(dict.fromkeys(c.zones))
    if len(distinct) != len(c.zones):
        yield SpecProblem(f"{path}.zones", f"lists a zone twice: {', '.join(c.zones)}.", "List each zone once.")
    if len(distinct) < caps.min_zones:
        yield SpecProblem(f"{path}.zones", f"has {len(distinct)} zone(s) ({', '.join(distinct)}), but "
                          f"{caps.min_zones_why}.",
                          f"List at least {caps.min_zones} zones of {c.region}; GPU pools still run in the zone "
                          "their `zone` names.")
