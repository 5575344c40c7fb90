"""AKS GPU agent pools: VM size from the catalogue, driver ownership, OS SKU, capacity reservation group or
spot, taints and labels, autoscaling bounds, and upgrades that surge one GPU node at a time."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_azure_native as azure

from components.catalog import Fabric
from components.fleet import GPU_TAINT, Pool
from components.spec import CapacityType, Taint

SPOT_TAINT = Taint(key="kubernetes.azure.com/scalesetpriority", value="spot")  # AKS adds it to every spot pool
SPOT_UP_TO_ON_DEMAND = -1  # spotMaxPrice -1: pay up to the on-demand price, never evicted for price
GPU_MAX_SURGE = "1"  # one extra GPU node during upgrades: a reservation needs one VM of headroom for it


@dataclass(frozen=True)
class GpuAgentPoolArgs:
    pool: Pool
    cluster_name: pulumi.Input[str]
    resource_group_name: pulumi.Input[str]
    nodes_subnet_id: pulumi.Input[str]
    kubernetes_version: str
    gpu_driver: str  # "cloud": AKS installs the NVIDIA driver; "operator": the GPU operator does
    tags: dict[str, str]


def gpu_profile(gpu_driver: str) -> dict[str, str]:
    """Exactly one owner of the NVIDIA driver: AKS ("Install", the API default) or the GPU operator ("None")."""
    return {"driver": "Install" if gpu_driver == "cloud" else "None"}


# The GPUs the Azure Linux container host supports ("Azure Linux Container Host supported GPU SKUs"):
# https://learn.microsoft.com/azure/azure-linux/intro-azure-linux (NC A100 v4 and newer sizes are not on the list)
AZURE_LINUX_GPUS = frozenset({"V100", "T4"})


def os_sku(pool: Pool, gpu_driver: str) -> str:
    """Azure Linux only for a GPU it supports, with the driver AKS installs and no InfiniBand (ND sizes ship their
    IB stack for Ubuntu); Ubuntu otherwise (NC H100 v5, every ND size, operator-managed drivers)."""
    azure_linux = (pool.machine.gpu in AZURE_LINUX_GPUS and pool.fabric is not Fabric.INFINIBAND
                   and gpu_driver == "cloud")
    return "AzureLinux" if azure_linux else "Ubuntu"


def capacity_settings(pool: Pool) -> dict[str, object]:
    """Spot priority with its eviction policy and price cap, or the capacity reservation group to draw from."""
    cap = pool.spec.capacity
    if cap.type is CapacityType.SPOT:
        price = cap.max_usd_per_hour if cap.max_usd_per_hour is not None else SPOT_UP_TO_ON_DEMAND
        return {"scale_set_priority": "Spot", "scale_set_eviction_policy": "Delete", "spot_max_price": price}
    settings: dict[str, object] = {"scale_set_priority": "Regular"}
    if cap.type is CapacityType.RESERVATION:
        settings["capacity_reservation_group_id"] = cap.id
    return settings


def node_taints(pool: Pool) -> list[str]:
    """GPU nodes repel pods that do not ask for GPUs; spot pools carry AKS's own spot taint explicitly."""
    required = [Taint(key=GPU_TAINT, value="true")]
    if pool.capacity is CapacityType.SPOT:
        required.append(SPOT_TAINT)
    return [f"{t.key}={t.value}:{t.effect}" for t in pool.taints(required)]


def upgrade_settings(pool: Pool) -> dict[str, str] | None:
    """Surge one node at a time; spot pools cannot surge (AKS rejects maxSurge on them)."""
    return None if pool.capacity is CapacityType.SPOT else {"max_surge": GPU_MAX_SURGE}


class GpuAgentPool(pulumi.ComponentResource):
    def __init__(self, name: str, args: GpuAgentPoolArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:azure:GpuAgentPool", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        pool, nodes = args.pool, args.pool.spec.nodes
        self.agent_pool = azure.containerservice.AgentPool(
            f"{name}-pool",
            agent_pool_name=pool.name,
            resource_name_=args.cluster_name,
            resource_group_name=args.resource_group_name,
            mode="User",
            type="VirtualMachineScaleSets",
            vm_size=pool.machine.name,
            orchestrator_version=args.kubernetes_version,
            os_type="Linux",
            os_sku=os_sku(pool, args.gpu_driver),
            os_disk_size_gb=pool.spec.disk_gib,
            os_disk_type="Managed",
            availability_zones=[pool.zone],
            vnet_subnet_id=args.nodes_subnet_id,
            enable_node_public_ip=False,
            enable_encryption_at_host=True,  # OS disk and caches encrypted on the host
            enable_auto_scaling=True,
            count=nodes.initial,
            min_count=nodes.min,
            max_count=nodes.max,
            gpu_profile=gpu_profile(args.gpu_driver),
            node_labels=pool.labels,
            node_taints=node_taints(pool),
            upgrade_settings=upgrade_settings(pool),
            tags=args.tags,
            **capacity_settings(pool),
            # The cluster autoscaler / Kueue own the node count once the pool exists.
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=["count"])),
        )
        self.register_outputs({"agent_pool_id": self.agent_pool.id})
