"""GKE node pools: the CPU system pool and GPU pools with accelerators, GPUDirect networks, compact placement,
reservation affinity, spot / flex-start (queued provisioning), local NVMe and GPU-topology kubelet settings."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

from components.capabilities import capabilities
from components.catalog import Cloud, MachineType
from components.fleet import GPU_TAINT, Pool
from components.repair import repairs
from components.spec import Capacity, CapacityType, Nodes, SelfHealingSpec, Taint

IMAGE = "COS_CONTAINERD"
# The GPU operator's own driver manager supports only Ubuntu with containerd on GKE (COS needs Google's installer):
# https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/google-gke.html
OPERATOR_DRIVER_IMAGE = "UBUNTU_CONTAINERD"
LOCAL_SSD_GIB = 375  # GPU machines carry their local NVMe as 375 GiB disks
HYPERDISK_ONLY = ("a3-ultragpu-", "a4-highgpu-")  # Titanium machines boot only from Hyperdisk
DRIVER = {"cloud": "LATEST", "operator": "INSTALLATION_DISABLED"}  # never both installers on one node
RESERVATION_KEY = "compute.googleapis.com/reservation-name"
KUBELET = {"cpu_manager_policy": "static",  # exclusive cores for guaranteed pods (data loaders, NCCL proxies)
           "topology_manager": {"policy": "best-effort", "scope": "pod"},  # GPUs, NICs and CPUs on one NUMA node
           "insecure_kubelet_readonly_port_enabled": "FALSE"}
SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]  # IAM on the node account decides, not scopes


@dataclass(frozen=True)
class NodePoolArgs:
    cluster: pulumi.Input[str]  # the cluster's id
    location: str  # the cluster's region
    service_account: pulumi.Input[str]  # node service account email
    resource_labels: dict[str, str]
    boot_disk_kms_key: pulumi.Input[str]
    key_ready: list[pulumi.Resource]  # the disk key's grant to the Compute Engine service agent


@dataclass(frozen=True)
class GpuNodePoolArgs(NodePoolArgs):
    pool: Pool
    gpu_driver: str  # spec addons.gpu_driver: cloud | operator
    extra_networks: list[dict[str, pulumi.Input[str]]]  # additional_node_network_configs, NIC order
    self_healing: SelfHealingSpec = field(default_factory=SelfHealingSpec)


def effect(kubernetes_effect: str) -> str:
    """NoSchedule -> NO_SCHEDULE, as the GKE API spells taint effects."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", kubernetes_effect).upper()


def reservation_value(capacity: Capacity) -> str:
    """The reservation (or one block of it) as GKE's reservation affinity names it: `name`, or
    `projects/<owner>/reservations/<name>` for a shared one, plus `/reservationBlocks/<block>`."""
    assert capacity.id is not None
    match = re.match(capabilities(Cloud.GCP).reservation_id_pattern, capacity.id)
    assert match is not None, "validated in components.validate"
    value = f"projects/{match['project']}/reservations/{match['name']}" if match["project"] else match["name"]
    return f"{value}/reservationBlocks/{capacity.block}" if capacity.block else value


def reservation_affinity(pool: Pool) -> dict[str, object] | None:
    if pool.capacity is CapacityType.RESERVATION:
        return {"consume_reservation_type": "SPECIFIC_RESERVATION", "key": RESERVATION_KEY,
                "values": [reservation_value(pool.spec.capacity)]}
    if pool.capacity in (CapacityType.FLEX_START, CapacityType.SPOT):
        return {"consume_reservation_type": "NO_RESERVATION"}
    return None  # on demand: GCE's default, any matching open reservation first


def local_nvme(machine: MachineType, raid0: bool) -> dict[str, object]:
    """All local SSDs either striped (by GKE) into ephemeral storage, or left as raw block devices."""
    count = machine.local_nvme_gib // LOCAL_SSD_GIB
    if not count:
        return {}
    if raid0:
        return {"ephemeral_storage_local_ssd_config": {"local_ssd_count": count}}
    return {"local_nvme_ssd_block_config": {"local_ssd_count": count}}


def image_type(gpu_driver: str) -> str:
    return OPERATOR_DRIVER_IMAGE if gpu_driver == "operator" else IMAGE


def _node_config(args: NodePoolArgs, machine: MachineType, disk_gib: int, labels: dict[str, str],
                 taints: list[Taint], *, secure_boot: bool = True, image: str = IMAGE,
                 **extra: object) -> dict[str, object]:
    config = {
        "machine_type": machine.name, "image_type": image, "disk_size_gb": disk_gib,
        "disk_type": "hyperdisk-balanced" if machine.name.startswith(HYPERDISK_ONLY) else "pd-balanced",
        "boot_disk_kms_key": args.boot_disk_kms_key,
        "service_account": args.service_account, "oauth_scopes": SCOPES,
        "workload_metadata_config": {"mode": "GKE_METADATA"},
        "shielded_instance_config": {"enable_secure_boot": secure_boot, "enable_integrity_monitoring": True},
        "gvnic": {"enabled": True}, "labels": labels, "resource_labels": args.resource_labels,
        "taints": [{"key": t.key, "value": t.value, "effect": effect(t.effect)} for t in taints],
        **extra,
    }
    return {k: v for k, v in config.items() if v is not None}


def _upgrade(capacity: CapacityType) -> dict[str, object]:
    """One node at a time: surge into spare capacity where it exists; reserved and queued capacity has none,
    so there a node is drained first."""
    if capacity in (CapacityType.RESERVATION, CapacityType.FLEX_START):
        return {"strategy": "SURGE", "max_surge": 0, "max_unavailable": 1}
    return {"strategy": "SURGE", "max_surge": 1, "max_unavailable": 0}


def _node_pool(name: str, args: NodePoolArgs, node_name: str, zones: list[str], node_config: dict[str, object],
               opts: pulumi.ResourceOptions, **settings: object) -> gcp.container.NodePool:
    return gcp.container.NodePool(
        f"{name}-np", name=node_name, cluster=args.cluster, location=args.location, node_locations=zones,
        node_config=node_config, **settings,
        # The cluster autoscaler (and Kueue's ProvisioningRequests) own the node count once the pool exists.
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
            depends_on=args.key_ready, ignore_changes=["initialNodeCount", "nodeCount"])))


class SystemNodePool(pulumi.ComponentResource):
    def __init__(self, name: str, args: NodePoolArgs, machine: MachineType, nodes: Nodes, zones: list[str],
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:gcp:SystemNodePool", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        config = _node_config(args, machine, 100, {"gpufleet.io/pool": "system"}, [])
        self.node_pool = _node_pool(
            name, args, "system", zones, config, child,
            initial_node_count=math.ceil(nodes.initial / len(zones)),  # per zone
            autoscaling={"total_min_node_count": nodes.min, "total_max_node_count": nodes.max,
                         "location_policy": "BALANCED"},
            management={"auto_repair": True, "auto_upgrade": True}, upgrade_settings=_upgrade(CapacityType.ON_DEMAND))
        self.register_outputs({"node_pool": self.node_pool.name})


class GpuNodePool(pulumi.ComponentResource):
    def __init__(self, name: str, args: GpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:gcp:GpuNodePool", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        pool = args.pool
        flex = pool.capacity is CapacityType.FLEX_START
        config = _node_config(
            args, pool.machine, pool.spec.disk_gib, pool.labels,
            pool.taints([Taint(key=GPU_TAINT, value="present")]),
            secure_boot=args.gpu_driver == "cloud",  # operator-built drivers are unsigned kernel modules
            image=image_type(args.gpu_driver),
            guest_accelerators=[{"type": pool.machine.accelerator_type, "count": pool.machine.gpus,
                                 "gpu_driver_installation_config": {"gpu_driver_version": DRIVER[args.gpu_driver]}}],
            kubelet_config=KUBELET, reservation_affinity=reservation_affinity(pool),
            spot=pool.capacity is CapacityType.SPOT or None, flex_start=flex or None,
            **local_nvme(pool.machine, pool.spec.local_nvme_raid0))
        nodes = pool.spec.nodes
        self.node_pool = _node_pool(
            name, args, pool.name, [pool.zone], config, child,
            initial_node_count=0 if flex else nodes.initial,
            autoscaling={"total_min_node_count": nodes.min, "total_max_node_count": nodes.max,
                         "location_policy": "ANY"},
            placement_policy=_placement(pool),
            queued_provisioning={"enabled": True} if flex else None,
            network_config=_network_config(args.extra_networks),
            # off where the pool's capacity forbids it (flex-start) or self-healing is off: components/repair.py
            management={"auto_repair": repairs(Cloud.GCP, pool, args.self_healing), "auto_upgrade": True},
            upgrade_settings=_upgrade(pool.capacity))
        self.register_outputs({"node_pool": self.node_pool.name})


def _network_config(extra_networks: list[dict[str, pulumi.Input[str]]]) -> dict[str, object]:
    config: dict[str, object] = {"enable_private_nodes": True}
    if extra_networks:
        config["additional_node_network_configs"] = extra_networks
    return config


def _placement(pool: Pool) -> dict[str, str] | None:
    """COMPACT for interconnect pools on on-demand or spot capacity. A reservation places its VMs itself (its
    own placement policy or blocks; a second policy would stop the nodes from matching it), and queued
    provisioning obtains a request's nodes together."""
    if pool.compact and pool.capacity in (CapacityType.ON_DEMAND, CapacityType.SPOT):
        return {"type": "COMPACT"}
    return None
