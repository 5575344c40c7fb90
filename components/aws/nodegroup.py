"""EKS managed node groups: the CPU system group and GPU groups with EFA, placement and capacity settings."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from components.catalog import Cloud, Fabric, MachineType
from components.fleet import GPU_TAINT, Pool
from components.repair import repairs
from components.spec import CapacityType, Nodes, SelfHealingSpec, Taint

EFA_TAINT = "vpc.amazonaws.com/efa"
GPU_AMI = "AL2023_x86_64_NVIDIA"  # NVIDIA driver, container toolkit and EFA installer baked in
CPU_AMI = "AL2023_x86_64_STANDARD"
_EFFECT = {"NoSchedule": "NO_SCHEDULE", "PreferNoSchedule": "PREFER_NO_SCHEDULE", "NoExecute": "NO_EXECUTE"}
_RAID0 = """MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="GPUFLEET"

--GPUFLEET
Content-Type: application/node.eks.aws

---
apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  instance:
    localStorage:
      strategy: RAID0

--GPUFLEET--
"""


@dataclass(frozen=True)
class NodeGroupArgs:
    cluster_name: pulumi.Input[str]
    node_role_arn: pulumi.Input[str]
    subnet_ids: list[pulumi.Input[str]]  # the system group spreads over every cluster zone; a GPU group has one
    cluster_security_group_id: pulumi.Input[str]
    tags: dict[str, str]
    instance_tags: dict[str, str]  # baked into template versions: a change rolls the nodes


@dataclass(frozen=True)
class GpuNodeGroupArgs(NodeGroupArgs):
    pool: Pool
    efa_security_group_id: pulumi.Input[str] | None = None
    self_healing: SelfHealingSpec = field(default_factory=SelfHealingSpec)


def node_repair(pool: Pool, healing: SelfHealingSpec) -> dict[str, object]:
    """EKS node repair for a GPU group: replace unhealthy nodes one (``max_parallel_repairs``) at a time, and stop
    when more than ``max_unhealthy_pct`` of the group is unhealthy (a fleet-wide event, not a broken node). Off
    where the pool's capacity cannot take a replacement (components/repair.py)."""
    if not repairs(Cloud.AWS, pool, healing):
        return {"enabled": False}
    return {"enabled": True, "max_unhealthy_node_threshold_percentage": healing.max_unhealthy_pct,
            "max_parallel_nodes_repaired_count": healing.max_parallel_repairs}


def network_interfaces(machine: MachineType, security_groups: list[pulumi.Input[str]]) -> list[dict]:
    """One interface per EFA-capable network card: card 0 carries IP traffic (`efa`, device 0); the rest
    are `efa-only` on device 1 so they take no VPC addresses. No interface gets a public IP."""
    return [{"network_card_index": card, "device_index": 0 if card == 0 else 1,
             "interface_type": "efa" if card == 0 else "efa-only",
             "associate_public_ip_address": "false", "delete_on_termination": "true",
             "security_groups": security_groups}
            for card in range(machine.efa_interfaces)]


def _capacity(pool: Pool) -> dict:
    """Launch template settings that point instances at a reservation or capacity block."""
    cap = pool.spec.capacity
    if cap.type is CapacityType.CAPACITY_BLOCK:
        return {"instance_market_options": {"market_type": "capacity-block"},
                "capacity_reservation_specification": {"capacity_reservation_target": {
                    "capacity_reservation_id": cap.id}}}
    if cap.type is CapacityType.RESERVATION:
        return {"capacity_reservation_specification": {"capacity_reservation_target": {
            "capacity_reservation_id": cap.id}}}
    return {}


def node_group_capacity_type(capacity: CapacityType) -> str:
    return {CapacityType.SPOT: "SPOT", CapacityType.CAPACITY_BLOCK: "CAPACITY_BLOCK"}.get(capacity, "ON_DEMAND")


def launch_template(name: str, disk_gib: int, args: NodeGroupArgs, opts: pulumi.ResourceOptions,
                    **settings: object) -> aws.ec2.LaunchTemplate:
    """IMDSv2 only (hop limit 1 keeps pods away from the node's credentials) and an encrypted root disk."""
    return aws.ec2.LaunchTemplate(
        f"{name}-lt",
        metadata_options={"http_endpoint": "enabled", "http_tokens": "required", "http_put_response_hop_limit": 1},
        block_device_mappings=[{"device_name": "/dev/xvda", "ebs": {
            "volume_size": disk_gib, "volume_type": "gp3", "encrypted": "true", "delete_on_termination": "true"}}],
        tag_specifications=[{"resource_type": t, "tags": args.instance_tags}
                            for t in ("instance", "volume", "network-interface")],
        update_default_version=True, tags=args.tags, opts=opts, **settings)


def node_group(name: str, args: NodeGroupArgs, template: aws.ec2.LaunchTemplate, instance_type: str,
               nodes: Nodes, *, ami_type: str, capacity_type: str, labels: dict[str, str],
               taints: list[Taint], opts: pulumi.ResourceOptions,
               repair: dict[str, object] | None = None) -> aws.eks.NodeGroup:
    """A managed node group that never takes more than one node down at a time during updates."""
    return aws.eks.NodeGroup(
        f"{name}-ng",
        cluster_name=args.cluster_name, node_role_arn=args.node_role_arn, subnet_ids=args.subnet_ids,
        instance_types=[instance_type], ami_type=ami_type, capacity_type=capacity_type,
        scaling_config={"min_size": nodes.min, "max_size": nodes.max, "desired_size": nodes.initial},
        update_config={"max_unavailable": 1},
        node_repair_config=repair or {"enabled": True},
        launch_template={"id": template.id, "version": template.latest_version.apply(str)},
        labels=labels,
        taints=[{"key": t.key, "value": t.value or None, "effect": _EFFECT[t.effect]} for t in taints],
        tags=args.tags,
        # The cluster autoscaler / Kueue own the node count once the group exists.
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(ignore_changes=["scalingConfig.desiredSize"])),
    )


class SystemNodeGroup(pulumi.ComponentResource):
    def __init__(self, name: str, args: NodeGroupArgs, machine: MachineType, nodes: Nodes,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:aws:SystemNodeGroup", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        template = launch_template(name, 100, args, child,
                                   vpc_security_group_ids=[args.cluster_security_group_id])
        self.node_group = node_group(name, args, template, machine.name, nodes, ami_type=CPU_AMI,
                                     capacity_type="ON_DEMAND", labels={"gpufleet.io/pool": "system"},
                                     taints=[], opts=child)
        self.register_outputs({"node_group_arn": self.node_group.arn})


class GpuNodeGroup(pulumi.ComponentResource):
    def __init__(self, name: str, args: GpuNodeGroupArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:aws:GpuNodeGroup", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        pool = args.pool
        if pool.capacity is CapacityType.CAPACITY_BLOCK:
            pulumi.log.warn(capacity_block_upgrade_path(name, pool))
        placement = _placement_group(name, pool, args.tags, child)
        settings = _template_settings(pool, args, placement)
        template = launch_template(name, pool.spec.disk_gib, args, child, **settings)
        self.node_group = node_group(name, args, template, pool.machine.name, pool.spec.nodes, ami_type=GPU_AMI,
                                     capacity_type=node_group_capacity_type(pool.capacity),
                                     labels=pool.labels, taints=gpu_taints(pool), opts=child,
                                     repair=node_repair(pool, args.self_healing))
        self.launch_template = template
        self.register_outputs({"node_group_arn": self.node_group.arn, "launch_template_id": template.id})


def capacity_block_upgrade_path(name: str, pool: Pool) -> str:
    """A block has no spare capacity to surge into and ends at a fixed time: new templates or AMIs reach its nodes
    only by emptying the group between blocks (docs/clouds.md, "Capacity-block node groups and upgrades")."""
    return (f"{name}: capacity-block pool {pool.name}: to roll a new launch template or AMI, scale the node group "
            f"to 0 between blocks: set nodes.min: 0, run `aws eks update-nodegroup-config --cluster-name <cluster> "
            f"--nodegroup-name <node group> --scaling-config minSize=0,desiredSize=0,maxSize={pool.spec.nodes.max}`"
            f", then `pulumi up`, and scale back to {pool.spec.nodes.max} when the next block starts")


def gpu_taints(pool: Pool) -> list[Taint]:
    """Keep non-GPU pods off GPU nodes, and non-EFA pods off EFA nodes, unless they tolerate it."""
    required = [Taint(key=GPU_TAINT, value="true")]
    if pool.fabric is Fabric.EFA:
        required.append(Taint(key=EFA_TAINT, value="true"))
    return pool.taints(required)


def _placement_group(name: str, pool: Pool, tags: dict[str, str],
                     opts: pulumi.ResourceOptions) -> aws.ec2.PlacementGroup | None:
    # A capacity block is already one UltraCluster placement; EC2 rejects a placement group on top of it.
    if not pool.compact or pool.capacity is CapacityType.CAPACITY_BLOCK:
        return None
    return aws.ec2.PlacementGroup(f"{name}-pg", strategy="cluster", tags=tags, opts=opts)


def _template_settings(pool: Pool, args: GpuNodeGroupArgs,
                       placement: aws.ec2.PlacementGroup | None) -> dict[str, object]:
    settings: dict[str, object] = dict(_capacity(pool))
    groups: list[pulumi.Input[str]] = [args.cluster_security_group_id]
    if pool.fabric is Fabric.EFA and args.efa_security_group_id is not None:
        groups.append(args.efa_security_group_id)
        settings["network_interfaces"] = network_interfaces(pool.machine, groups)
    else:
        settings["vpc_security_group_ids"] = groups
    if placement is not None:
        settings["placement"] = {"group_name": placement.name}
    if pool.spec.local_nvme_raid0 and pool.machine.local_nvme_gib:
        settings["user_data"] = base64.b64encode(_RAID0.encode()).decode()
    return settings
