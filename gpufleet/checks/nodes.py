"""The GPU nodes of a previewed fleet as the scheduler will see them: one node per GPU pool, with the labels and taints
the cloud translator gave the pool in the captured graph (what `pulumi up` sends to EKS / GKE / AKS), plus the labels
every kubelet and cloud put on a node and those the GPU operator adds at run time (``operator_labels``).

Well-known labels (https://kubernetes.io/docs/reference/labels-annotations-taints/): ``kubernetes.io/os``,
``kubernetes.io/arch``, ``kubernetes.io/hostname``, ``node.kubernetes.io/instance-type``; AKS's
``kubernetes.azure.com/os-sku-effective`` (the image an agent pool runs, which the Azure Lustre CSI node plugin
selects on) is one of ``AKS_UBUNTU`` for an Ubuntu pool, depending on the Kubernetes version, so an Ubuntu pool gives
one node per value.
"""

from __future__ import annotations

from typing import Any

from components.catalog import Cloud
from components.fleet import Cluster, Pool
from gpufleet.checks.scheduling import Node, Taint
from gpufleet.engine.capture import Graph

# (resource type, name suffix) of the node pool resource each translator registers per GPU pool
POOL_RESOURCE = {Cloud.AWS: ("aws:eks/nodeGroup:NodeGroup", "-ng"),
                 Cloud.GCP: ("gcp:container/nodePool:NodePool", "-np"),
                 Cloud.AZURE: ("azure-native:containerservice:AgentPool", "-pool")}
# EKS and GKE spell taint effects as enums (EKS CreateNodegroup Taint.effect, GKE NodeTaint.effect)
EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}
AKS_OS_SKU = "kubernetes.azure.com/os-sku-effective"
# The Ubuntu images an AKS Ubuntu pool may run (the Azure Lustre CSI driver's node DaemonSets select these values,
# azurelustre digest: jammy Ubuntu2204 / Ubuntu2004, noble Ubuntu2404); AzureLinux pools: Azure Linux 3.
AKS_UBUNTU = ("Ubuntu2204", "Ubuntu2404")
AKS_AZURE_LINUX = "AzureLinux3"


class NodeModelError(ValueError):
    """The graph lacks what a node is built from (a pool without its node pool resource)."""


def _taint(t: Any) -> Taint:
    if isinstance(t, str):  # AKS: "key=value:Effect"
        key_value, effect = t.rsplit(":", 1)
        key, _, value = key_value.partition("=")
        return Taint(key, value, effect)
    return Taint(t["key"], str(t.get("value") or ""), EFFECTS.get(t["effect"], t["effect"]))


def _pool_inputs(by_key: dict[str, Any], cluster: Cluster,
                 pool: Pool) -> tuple[dict[str, str], list[Taint], dict[str, Any]]:
    rtype, suffix = POOL_RESOURCE[cluster.cloud]
    resource = by_key.get(f"{rtype}::{cluster.name}-{pool.name}{suffix}")
    if resource is None:
        raise NodeModelError(f"{cluster.name}/{pool.name}: no {rtype} named {cluster.name}-{pool.name}{suffix}")
    i = resource.inputs
    if cluster.cloud is Cloud.GCP:
        config = i.get("nodeConfig") or {}
        return dict(config.get("labels") or {}), [_taint(t) for t in config.get("taints") or []], i
    if cluster.cloud is Cloud.AZURE:
        return dict(i.get("nodeLabels") or {}), [_taint(t) for t in i.get("nodeTaints") or []], i
    return dict(i.get("labels") or {}), [_taint(t) for t in i.get("taints") or []], i


def pool_nodes(graph: Graph, cluster: Cluster, pool: Pool, by_key: dict[str, Any] | None = None) -> list[Node]:
    """The pool's node (one per AKS Ubuntu image it may run). ``by_key``: the graph's index, when the caller
    already built it (it is rebuilt from every resource of the graph on each call)."""
    labels, taints, inputs = _pool_inputs(graph.by_key() if by_key is None else by_key, cluster, pool)
    name = f"{cluster.name}-{pool.name}-0"
    base = {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name,
            "node.kubernetes.io/instance-type": pool.machine.name, **labels}
    if cluster.cloud is not Cloud.AZURE:
        return [Node(name, base, tuple(taints), pool.name)]
    skus = AKS_UBUNTU if inputs.get("osSKU") == "Ubuntu" else (AKS_AZURE_LINUX,)
    return [Node(name, {**base, AKS_OS_SKU: sku}, tuple(taints), pool.name) for sku in skus]


def gpu_nodes(graph: Graph, cluster: Cluster) -> list[Node]:
    by_key = graph.by_key()
    return [node for pool in cluster.pools for node in pool_nodes(graph, cluster, pool, by_key)]


def operator_labels(node: Node, labels: dict[str, str]) -> Node:
    """The node after an operator labelled it (the GPU operator's nvidia.com/gpu.deploy.<operand> labels)."""
    return Node(node.name, {**node.labels, **labels}, node.taints, node.pool)
