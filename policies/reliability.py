"""Reliability: versioned checkpoint buckets, GPU pools that update one node at a time, maintenance windows,
Lustre data that is backed up or exported to object storage, node auto-repair."""

from __future__ import annotations

import math
from collections.abc import Iterable

from policies.props import (
    AKS_AGENT_POOL,
    AKS_CLUSTER,
    AKS_MAINTENANCE,
    AZURE_BLOB_SERVICE,
    AZURE_LUSTRE,
    AZURE_STORAGE,
    EKS_NODE_GROUP,
    FSX_LINK,
    FSX_LUSTRE,
    GCP_LUSTRE,
    GCS_BUCKET,
    GKE_CLUSTER,
    GKE_NODE_POOL,
    NODE_POOLS,
    S3_BUCKET,
    S3_VERSIONING,
    get,
    items,
    node_pool,
    truthy,
)
from policies.rule import ADVISORY, MANDATORY, Config, Node, Stack, resource_policy, stack_policy


def versioned(stack: Stack, config: Config) -> Iterable[tuple[str, Node | None]]:
    for b in stack.of_type(S3_BUCKET):
        if not any(get(v.props, "versioningConfiguration.status") == "Enabled"
                   for v in stack.dependents(b, S3_VERSIONING)):
            yield "versioning is not enabled (BucketVersioning status: Enabled): an overwritten or deleted " \
                  "checkpoint is gone", b
    for b in stack.of_type(GCS_BUCKET):
        if not truthy(get(b.props, "versioning.enabled")):
            yield "object versioning is off: set versioning.enabled: true", b
    for b in stack.of_type(AZURE_STORAGE):
        if not any(truthy(get(s.props, "isVersioningEnabled")) for s in stack.dependents(b, AZURE_BLOB_SERVICE)):
            yield "blob versioning is off: add BlobServiceProperties with isVersioningEnabled: true", b


def _int(value: object, default: int) -> int:
    """A count as Pulumi carries it: 2, 2.0 (every number crosses the wire as a double) or "2"."""
    try:
        return int(float(str(value)))
    except ValueError:
        return default


def one_node_at_a_time(r: Node, config: Config) -> Iterable[str]:
    """Spot pools lose nodes at any moment by design; the rule protects the pools that run long jobs."""
    pool = node_pool(r.type, r.props)
    limit = int(config["max_nodes_at_a_time"])
    if pool is None or not pool.is_gpu or pool.spot:
        return
    if r.type == EKS_NODE_GROUP:
        if get(r.props, "updateConfig.maxUnavailablePercentage") is not None:
            yield "updateConfig.maxUnavailablePercentage takes a share of the pool down at once; use maxUnavailable"
        elif (down := _int(get(r.props, "updateConfig.maxUnavailable", 1), 1)) > limit:
            yield f"updates take {down} nodes down at once; at most {limit}"
    if r.type == GKE_NODE_POOL:
        surge = _int(get(r.props, "upgradeSettings.maxSurge", 1), 1)
        down = _int(get(r.props, "upgradeSettings.maxUnavailable", 0), 0)
        if get(r.props, "upgradeSettings.strategy", "SURGE") != "SURGE" or surge + down > limit:
            yield f"upgrades replace {surge + down} nodes at a time (maxSurge {surge} + maxUnavailable {down}); " \
                  f"at most {limit}, strategy SURGE"
    if r.type == AKS_AGENT_POOL:
        surge = get(r.props, "upgradeSettings.maxSurge")
        unavailable = get(r.props, "upgradeSettings.maxUnavailable", 0)
        shares = [_aks_share(v, pool.max_nodes) for v in (surge, unavailable) if _is_share(v)]
        if surge is None or shares or _int(surge, 99) + _int(unavailable, 99) > limit:
            yield f"upgrades drain maxSurge {surge or '10% (the default)'} + maxUnavailable {unavailable} nodes at " \
                  f"a time{''.join(shares)}; set upgradeSettings.maxSurge to '{limit}' (or maxSurge '0' and " \
                  f"maxUnavailable '{limit}')"


def _is_share(value: object) -> bool:
    return str(value).strip().endswith("%")


def _aks_share(value: object, nodes: int) -> str:
    """AKS takes a percentage of the pool's node count at upgrade time, fractional nodes rounded up
    (maxSurge / maxUnavailable, https://learn.microsoft.com/en-us/dotnet/api/microsoft.azure.commands.aks.
    neworupdateagentpoolbase.maxunavailable): a share grows with the pool, so the rule asks for a count; the message
    says what the share is at the pool's size now."""
    try:
        percent = float(str(value).strip().rstrip("%"))
    except ValueError:
        return f" ({value} is not a count)"
    return f" ({value} of {nodes} nodes is {math.ceil(percent * nodes / 100)}, rounded up)" if nodes else ""


def maintenance(stack: Stack, config: Config) -> Iterable[tuple[str, Node | None]]:
    for c in stack.of_type(GKE_CLUSTER):
        policy = get(c.props, "maintenancePolicy", {})
        if not any(policy.get(k) for k in ("dailyMaintenanceWindow", "recurringWindow", "maintenanceExclusions")):
            yield "no maintenance window or exclusion: GKE may upgrade GPU nodes in the middle of a training run", c
    for c in stack.of_type(AKS_CLUSTER):
        if not stack.dependents(c, AKS_MAINTENANCE):
            yield "no MaintenanceConfiguration: AKS may upgrade GPU nodes at any time", c
    for fs in stack.of_type(FSX_LUSTRE):
        if not get(fs.props, "weeklyMaintenanceStartTime"):
            yield "no weeklyMaintenanceStartTime: FSx picks a maintenance slot that may fall in a training run", fs
    for fs in stack.of_type(GCP_LUSTRE, AZURE_LUSTRE):
        if not (get(fs.props, "maintenancePolicy") or get(fs.props, "maintenanceWindow.dayOfWeek")):
            yield "no maintenance window set", fs


def lustre_protected(stack: Stack, config: Config) -> Iterable[tuple[str, Node | None]]:
    for fs in stack.of_type(FSX_LUSTRE):
        backups = _int(get(fs.props, "automaticBackupRetentionDays", 0), 0) > 0
        links = stack.dependents(fs, FSX_LINK)
        exports = [link for link in links if items(get(link.props, "s3.autoExportPolicy.events"))]
        if not backups and not exports:
            yield "neither automatic backups (automaticBackupRetentionDays) nor an automatic export to S3 (a " \
                  "DataRepositoryAssociation with s3.autoExportPolicy): checkpoints written to Lustre can be lost", fs
    for fs in stack.of_type(AZURE_LUSTRE):
        if not get(fs.props, "hsm.settings.container"):
            yield "no blob integration (hsm.settings.container): nothing exports Lustre data to Blob storage", fs


def auto_repair(r: Node, config: Config) -> Iterable[str]:
    """Pools whose capacity cannot take a cloud replacement (an EKS capacity block, a GKE queued-provisioning pool)
    have repair off on purpose: the in-cluster reboot covers them (components/repair.py, docs/addons.md)."""
    if (r.type == EKS_NODE_GROUP and get(r.props, "capacityType") != "CAPACITY_BLOCK"
            and not truthy(get(r.props, "nodeRepairConfig.enabled"))):
        yield "node auto-repair is off (nodeRepairConfig.enabled): a node that stays NotReady is never replaced"
    if (r.type == GKE_NODE_POOL and not truthy(get(r.props, "queuedProvisioning.enabled"))
            and get(r.props, "management.autoRepair") is False):
        yield "node auto-repair is off (management.autoRepair: false)"


POLICIES = [
    stack_policy("checkpoint-buckets-versioned", "Checkpoint and dataset buckets must be versioned: a bad job that "
                 "overwrites checkpoints must not destroy weeks of training.", MANDATORY, versioned),
    resource_policy("gpu-pool-one-node-at-a-time", "GPU pool updates must take at most one node down at a time: "
                    "each node lost stops every job that spans it.", MANDATORY, NODE_POOLS, one_node_at_a_time,
                    config={"max_nodes_at_a_time": {"type": "integer", "minimum": 1, "default": 1,
                                                    "description": "nodes an update may take down at once"}}),
    stack_policy("maintenance-window-set", "Clusters and file systems need maintenance windows (or exclusions), so "
                 "provider maintenance does not land in a training run.", ADVISORY, maintenance),
    stack_policy("lustre-data-protected", "Lustre file systems must be backed up or export to object storage "
                 "(Azure: blob integration). Google Managed Lustre has no declarative export or backup, so it is "
                 "not checked.", MANDATORY, lustre_protected),
    resource_policy("node-auto-repair", "Node auto-repair replaces or reboots nodes that stay "
                    "NotReady; GPU faults are the in-cluster engine's (docs/addons.md).", ADVISORY,
                    (EKS_NODE_GROUP, GKE_NODE_POOL), auto_repair),
]
