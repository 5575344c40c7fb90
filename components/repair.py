"""Node repair per pool, cloud-neutral: whether the cloud's own repair may replace a pool's broken nodes, and how
many of a pool's nodes may be unhealthy before every repair stops (docs/addons.md "Self-healing GPU nodes").

The cloud translators turn this into their repair settings (EKS nodeRepairConfig, GKE node pool management; AKS
repairs every agent pool and has no switch); the in-cluster layer (components/k8s/selfheal.py) reboots what the
cloud does not repair."""

from __future__ import annotations

from dataclasses import dataclass

from components.catalog import Cloud
from components.fleet import Pool
from components.spec import CapacityType, SelfHealingSpec


@dataclass(frozen=True)
class CloudRepair:
    enabled: bool
    why: str  # shown in docs and tests: the rule that decided


def cloud_repair(cloud: Cloud, capacity: CapacityType) -> CloudRepair:
    """May the cloud replace a broken node of a pool of this capacity type?"""
    if cloud is Cloud.AWS and capacity is CapacityType.CAPACITY_BLOCK:
        # A block is bought for exactly the pool's instances and ends at a fixed time: a replacement launches only
        # into the block's own slots, so EKS repair could strand the pool short; the in-cluster reboot and a
        # person (docs/addons.md) decide instead.
        return CloudRepair(False, "AWS capacity block: replacements must come from the block itself")
    if cloud is Cloud.GCP and capacity is CapacityType.FLEX_START:
        # Queued provisioning hands out a node set for a bounded time and needs auto-repair off:
        # https://cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest
        return CloudRepair(False, "GKE flex-start (queued provisioning): node auto-repair must be off")
    if cloud is Cloud.GCP and capacity is CapacityType.RESERVATION:
        # Auto-repair recreates the VM under the same name and reservation affinity: the broken VM's slot in the
        # specific reservation is what the new one consumes.
        return CloudRepair(True, "GKE reservation: auto-repair recreates the node in its reservation")
    if cloud is Cloud.AZURE:
        # https://learn.microsoft.com/azure/aks/node-auto-repair: on for every agent pool, no setting
        return CloudRepair(True, "AKS node auto-repair is built in")
    return CloudRepair(True, f"{cloud.value} node repair, rate limited per pool")


def repairs(cloud: Cloud, pool: Pool, healing: SelfHealingSpec) -> bool:
    """Whether the cloud's repair is turned on for this pool (self-healing off turns it off too)."""
    return healing.enabled and cloud_repair(cloud, pool.capacity).enabled


def max_unhealthy_nodes(pool: Pool, healing: SelfHealingSpec) -> int:
    """Nodes of the pool that may be unhealthy at once while repairs continue: the configured share of the pool's
    largest size, rounded down, but at least one (a pool must be able to repair its first broken node)."""
    return max(1, pool.spec.nodes.max * healing.max_unhealthy_pct // 100)
