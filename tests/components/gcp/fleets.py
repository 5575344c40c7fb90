"""GCP fleets for the GKE translator's tests, and their captured graphs (each captured once per session).

Few captures on purpose: one "zoo" cluster holds a pool of every kind the tests look at, so a graph serves many
assertions.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from gpufleet.engine.capture import Graph, run_program
from stacks.config import CONFIG_KEY

PROJECT = "ml-train-prod"
STORAGE = {"buckets": [{"name": "checkpoints"}],
           "lustre": {"capacity_tib": 36, "throughput_mbps_per_tib": 500, "bucket": "checkpoints"}}


def gcp_fleet(*pools: dict[str, Any], **cluster: Any) -> dict[str, Any]:
    """A valid GCP fleet around ``pools``; ``cluster`` overrides cluster keys (zones, endpoint, storage, ...)."""
    return {
        "cloud": "gcp", "account": PROJECT, "monthly_budget_usd": 100000,
        "tags": {"team": "ml-platform", "cost_center": "cc-4100"},
        "clusters": [{"name": "train", "region": "us-central1", "zones": ["us-central1-b"],
                      "node_pools": list(pools), **cluster}],
    }


def gpu_pool(machine_type: str, name: str = "gpu", **settings: Any) -> dict[str, Any]:
    """A pool of ``machine_type`` in us-central1-b (where every A3/A4 type is offered); spot by default, which
    every GPU machine is sold as."""
    return {"name": name, "machine_type": machine_type, "nodes": {"min": 0, "max": 2}, "zone": "us-central1-b",
            "capacity": {"type": "spot"}, **settings}


def _reserved(machine: str, name: str, **capacity: str) -> dict[str, Any]:
    return gpu_pool(machine, name, capacity={"type": "reservation", **capacity})


ZOO = gcp_fleet(
    gpu_pool("a3-highgpu-8g", "high"),  # TCPX, spot
    gpu_pool("a3-megagpu-8g", "mega", capacity={"type": "on_demand"}),  # TCPXO, on demand
    _reserved("a3-megagpu-8g", "megares", id="a3mega-train"),
    # one node: an interconnect pool of 2+ nodes must keep compact placement on spot (validation refuses it)
    gpu_pool("a3-megagpu-8g", "loose", compact_placement=False, local_nvme_raid0=False, nodes={"min": 0, "max": 1}),
    gpu_pool("a3-ultragpu-8g", "ultra", capacity={"type": "flex_start"}, nodes={"max": 4}),  # RDMA
    _reserved("a4-highgpu-8g", "a4", id="a4-resv", block="a4-resv-block-0001") | {
        "labels": {"workload": "pretraining"},
        "taints": [{"key": "team", "value": "a"}, {"key": "nvidia.com/gpu", "value": "mine"}]},
    _reserved("a4-highgpu-8g", "a4shared", id="projects/shared-capacity/zones/us-central1-b/reservations/a4-resv",
              block="b1"),
    _reserved("a4-highgpu-8g", "a4proj", id="projects/shared-capacity/reservations/a4-resv"),
    gpu_pool("g2-standard-48", "l4"),  # no interconnect
    zones=["us-central1-b", "us-central1-c"], storage=STORAGE, addons={"gpu_driver": "cloud"},
    admins=["ml-admins@example.com", "user:ana@example.com"])

# The other settings of the cluster: GPU operator, public endpoint, a pre-1.33 version, no GPUDirect pools.
VARIANT = gcp_fleet(gpu_pool("g2-standard-96"), addons={"gpu_driver": "operator"}, endpoint="public",
                    public_access_cidrs=["203.0.113.0/24"], deploy={"egress_cidrs": ["203.0.113.7/32"]},
                    kubernetes_version="1.32")


@cache
def _graph(fleet_json: str) -> Graph:
    return run_program("test", {CONFIG_KEY: json.loads(fleet_json)})


def graph_of(fleet: dict[str, Any]) -> Graph:
    """The captured graph of ``fleet``, shared by every test that asks for the same fleet (do not mutate it)."""
    return _graph(json.dumps(fleet, sort_keys=True))
