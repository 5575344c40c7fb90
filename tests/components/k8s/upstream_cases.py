"""The clusters the upstream tests render: every example stack, and fleets a user would write from the README
(p5en, p6-b200 spot, a3-highgpu-8g, a3-megagpu-8g, a4-highgpu-8g, ND H200 v5, NC H100 v5, the examples'
reservation pools, taints of every effect). Rendering is pure (no Pulumi program), so these stay cheap."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from components import multikueue
from components.catalog import machine_types
from components.errors import SpecError
from components.fleet import Cluster
from components.fleetlinks import access_output
from components.k8s.fleetqueue import WorkerLink
from components.k8s.inputs import AddonInputs
from components.k8s.interconnect import GpuNic, gpu_nic_names
from components.k8s.model import Rendered
from components.k8s.render import render
from components.k8s.storage import LustreVolume
from components.validate import resolve
from gpufleet.engine.fakes import stackrefs
from stacks.config import load_stack_file, stack_file
from tests.components.k8s.conftest import STACKS
from tests.conftest import example_fleet
from tests.readme_fleets import NAMES as README_FLEETS
from tests.readme_fleets import readme_fleet

EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TAINTS = [{"key": f"example.com/{e.lower()}", "value": "x", "effect": e} for e in EFFECTS]


def _with_pool(stack: str, machine_type: str, **extra: Any) -> dict[str, Any]:
    fleet = example_fleet(stack)
    [cluster] = fleet["clusters"]
    pool = copy.deepcopy(cluster["node_pools"][0])
    pool.pop("accelerator", None)
    pool.pop("gpus", None)
    pool.update({"name": "user", "machine_type": machine_type, "nodes": {"min": 2, "max": 2},
                 "taints": TAINTS, **extra})
    cluster["node_pools"] = [pool]
    cluster.get("addons", {}).pop("kueue_teams", None)
    cluster.pop("network_profiles", None)  # they name the example's pools
    return fleet


def _cloud_driver(fleet: dict[str, Any]) -> dict[str, Any]:
    fleet["clusters"][0].setdefault("addons", {})["gpu_driver"] = "cloud"
    return fleet


def user_fleets() -> dict[str, dict[str, Any]]:
    return {
        "aws-p5en": _with_pool("aws-train", "p5en.48xlarge"),
        "aws-p6-b200-spot": _with_pool("aws-train", "p6-b200.48xlarge", capacity={"type": "spot"}),
        "gcp-a3-high": _with_pool("gcp-train", "a3-highgpu-8g"),
        "gcp-a3-mega": _with_pool("gcp-train", "a3-megagpu-8g"),
        "gcp-a4": _with_pool("gcp-train", "a4-highgpu-8g", zone="us-central1-b"),
        "azure-nd-h200": _with_pool("azure-train", "Standard_ND96isr_H200_v5"),
        "azure-nc-h100": _cloud_driver(_with_pool("azure-train", "Standard_NC80adis_H100_v5")),
    }


def fleets() -> dict[str, dict[str, Any]]:
    readme = {f"readme-{n}": readme_fleet(n) for n in README_FLEETS}
    return {**{s: example_fleet(s) for s in STACKS}, **user_fleets(), **readme, **catalogue_fleets()}


def inputs(cluster: Cluster) -> AddonInputs:
    """Add-on inputs as a built cluster would give them: a Lustre volume when the stack has one, and (GKE) one
    GPU NIC network per NIC name."""
    nics = tuple(GpuNic(name, f"{name}-vpc", f"{name}-subnet", mode)
                 for pool in cluster.pools for name, mode in gpu_nic_names(cluster, pool))
    lustre = LustreVolume("handle", {"k": "v"}, 1024) if cluster.spec.storage.lustre else None
    return AddonInputs(kubeconfig="{}", lustre=lustre, gpu_nics=nics, workers=worker_links(cluster))


def worker_links(cluster: Cluster) -> tuple[WorkerLink, ...]:
    """A MultiKueue manager's workers from the example stacks, with the FAKE exports the offline preview gives."""
    if not cluster.spec.is_manager:
        return ()
    peers = {s: load_stack_file(stack_file(s)) for s in multikueue.peer_stacks_of(cluster.spec)}
    return tuple(WorkerLink(w, stackrefs.outputs_of(peers[w.ref.stack])[access_output(w.ref.cluster)])
                 for w in multikueue.resolve_workers(cluster.spec, peers))


@cache
def rendered() -> dict[str, tuple[Cluster, Rendered]]:
    """case/cluster -> (cluster, what the add-on layer renders for it)."""
    out = {}
    for case, fleet in fleets().items():
        for cluster in resolve(fleet).clusters:
            out[f"{case}/{cluster.name}"] = (cluster, render(cluster, inputs(cluster)))
    return out


def catalogue_fleets() -> dict[str, dict[str, Any]]:
    """Generated: one pool of every GPU machine type of the catalogue, in its cloud's example stack, in the first
    of the stack's zones that offers it (types its region does not offer are left out, counted by the test)."""
    out = {}
    example = {"aws": "aws-train", "gcp": "gcp-train", "azure": "azure-train"}
    for machine in (m for m in machine_types() if m.gpus):
        stack = example[machine.cloud.value]
        for zone in example_fleet(stack)["clusters"][0]["zones"]:
            fleet = _with_pool(stack, machine.name, zone=zone, capacity={"type": "on_demand"})
            try:
                resolve(fleet)
            except SpecError:
                continue
            out[f"catalogue-{machine.name}"] = fleet
            break
    return out
