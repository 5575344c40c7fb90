"""Where add-ons and jobs land: GPU node selectors and tolerations per pool, and each cloud's topology labels.

The taints mirror what the translators put on GPU nodes (components/aws/nodegroup.py gpu_taints,
components/gcp/nodepool.py, components/azure/agentpool.py node_taints); tolerations use ``Exists`` so the
taint's value (``true`` / ``present``) does not matter.
"""

from __future__ import annotations

from components.catalog import Cloud, Fabric
from components.fleet import GATE_TAINT, GPU_TAINT, Cluster, Pool
from components.k8s.model import Obj
from components.spec import CapacityType

POOL_LABEL = "gpufleet.io/pool"
FABRIC_LABEL = "gpufleet.io/fabric"
EFA_TAINT = "vpc.amazonaws.com/efa"  # AWS: EFA node groups (components/aws/nodegroup.py)
AZURE_SPOT_TAINT = "kubernetes.azure.com/scalesetpriority"  # AKS spot pools

# Node labels from the outermost network domain down to the host, as each cloud sets them on GPU nodes; Kueue's
# Topology uses them so a gang lands in one interconnect domain.
TOPOLOGY_LABELS: dict[Cloud, tuple[str, ...]] = {
    # EKS labels nodes from EC2 instance topology, layer 1 the top of the network, 3 the closest to the instance:
    # https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-topology.html
    Cloud.AWS: ("topology.k8s.aws/network-node-layer-1", "topology.k8s.aws/network-node-layer-2",
                "topology.k8s.aws/network-node-layer-3", "kubernetes.io/hostname"),
    # https://cloud.google.com/kubernetes-engine/docs/concepts/about-topology-aware-scheduling (block, sub-block, host)
    Cloud.GCP: ("cloud.google.com/gce-topology-block", "cloud.google.com/gce-topology-subblock",
                "cloud.google.com/gce-topology-host", "kubernetes.io/hostname"),
    # AKS sets no fabric labels; with AKSInfinibandSupport one pool is one InfiniBand network, so the pool is the
    # domain: https://learn.microsoft.com/azure/aks/use-infiniband
    Cloud.AZURE: (POOL_LABEL, "kubernetes.io/hostname"),
}


def taint_keys(cloud: Cloud, pool: Pool) -> list[str]:
    """Every taint key the pool's nodes carry: the GPU taint, fabric / spot taints of its cloud, the health gate's
    startup taint on a gated pool, the user's."""
    keys = [GPU_TAINT]
    if pool.fabric is Fabric.EFA:
        keys.append(EFA_TAINT)
    if cloud is Cloud.AZURE and pool.capacity is CapacityType.SPOT:
        keys.append(AZURE_SPOT_TAINT)
    if pool.gated:
        keys.append(GATE_TAINT)
    return keys + [t.key for t in pool.spec.taints if t.key not in keys]


def tolerations(cloud: Cloud, pools: tuple[Pool, ...] | list[Pool], admitted_work: bool = False) -> list[Obj]:
    """Tolerations for every taint of these pools, each key once, in a stable order. No ``effect``: an empty
    effect matches every effect (NoSchedule, PreferNoSchedule, NoExecute), so a user's NoExecute taint cannot
    evict the driver, device plugin or DCGM exporter from the pool. ``admitted_work`` (Kueue's flavors): all but
    the health gate's startup taint, so no admitted pod lands on a node before its gate passed."""
    keys: list[str] = []
    for pool in pools:
        keys += [k for k in taint_keys(cloud, pool) if k not in keys and not (admitted_work and k == GATE_TAINT)]
    return [{"key": k, "operator": "Exists"} for k in keys]


def gpu_pools(cluster: Cluster, fabric: Fabric | None = None) -> list[Pool]:
    return [p for p in cluster.pools if fabric is None or p.fabric is fabric]


def on_pools(pools: list[Pool]) -> Obj:
    """A required node affinity onto exactly these pools (by the gpufleet.io/pool label every translator sets)."""
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": POOL_LABEL, "operator": "In", "values": sorted(p.name for p in pools)}]}]}}}
