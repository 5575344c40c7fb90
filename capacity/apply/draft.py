"""A new stack for a (cloud, region) the plan uses and no stack provisions.

Derived from the nearest stack of the same cloud (the region sharing the longest name prefix: same
geography first), with its GPU pools and Kueue teams removed for the proposal to fill, and marked as a
draft in its header: account, admins, zones and storage want a human look before `pulumi up`.
"""

from __future__ import annotations

from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from capacity.apply.stackdoc import StackDoc, _yaml, fleet_of, plain
from components import catalog
from components.catalog import Cloud
from components.validate import resolve

HEADER = ("# DRAFT written by `gpufleet capacity apply` for {month}, derived from {source}.\n"
          "# The plan runs {gpus} GPUs in {cloud} {region} and no stack provisions that region. Review the\n"
          "# account, admins, zones, storage and capacity ids, then remove this DRAFT header.\n")


def commented(values: dict[str, Any]) -> CommentedMap:
    return CommentedMap(values)


def commented_seq(items: list[Any]) -> CommentedSeq:
    return CommentedSeq(items)


def new_stack(docs: list[StackDoc], cloud: str, region: str, gpus: list[str], month: str) -> StackDoc | None:
    same = [d for d in docs if d.fleet.cloud.value == cloud and not d.draft
            and not any(c.spec.is_manager for c in d.fleet.clusters)]  # a fleet queue manager has no GPUs
    if not same:
        return None
    source = max(same, key=lambda d: (_shared_prefix(d.fleet.clusters[0].spec.region, region), -docs.index(d)))
    doc = _yaml().load(source.text)
    fleet = fleet_of(doc)
    clusters = fleet["clusters"]
    del clusters[1:]
    cluster = clusters[0]
    cluster["region"] = region
    zones = _zones(Cloud(cloud), region, gpus)
    if zones:
        cluster["zones"] = CommentedSeq(zones)
        cluster["zones"].fa.set_flow_style()
    cluster["node_pools"] = CommentedSeq([])
    if "addons" in cluster and "kueue_teams" in cluster["addons"]:
        del cluster["addons"]["kueue_teams"]
    cluster.pop("network_profiles", None)
    cluster.pop("multikueue", None)  # a fleet queue manager lists its workers itself (docs/fleet-queue.md)
    path = source.path.parent / f"Pulumi.{cloud}-{region}.yaml"
    text = HEADER.format(month=month, source=source.name, gpus=", ".join(gpus), cloud=cloud, region=region)
    return StackDoc(path, "", doc, resolve(plain(fleet), str(path)), draft=True, header=text)


def _shared_prefix(a: str, b: str) -> int:
    """Characters two region names share from the start: us-east-1 and us-east-2 share more than eu-west-1."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def _zones(cloud: Cloud, region: str, gpus: list[str]) -> list[str]:
    """Zones offering the most of the planned GPUs' machine types, two of them (EKS needs two)."""
    count: dict[str, int] = {}
    for machine in catalog.for_cloud(cloud):
        if machine.gpu in gpus:
            for zone in catalog.regions(cloud, machine.name).get(region, ()):
                count[zone] = count.get(zone, 0) + 1
    return sorted(count, key=lambda z: (-count[z], z))[:2]
