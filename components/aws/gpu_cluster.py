"""One EKS GPU cluster from a resolved neutral Cluster: network, control plane, node groups, storage."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from components import checkpoint_tools, fleetlinks, multikueue
from components.aws.checkpoints import CheckpointIdentity, CheckpointIdentityArgs
from components.aws.cluster import EksCluster, EksClusterArgs
from components.aws.iam import NODE_POLICIES, role
from components.aws.multikueue import ManagerAccess, ManagerAccessArgs
from components.aws.network import GpuVpc, NetworkArgs
from components.aws.nodegroup import GpuNodeGroup, GpuNodeGroupArgs, NodeGroupArgs, SystemNodeGroup
from components.aws.storage import BucketArgs, CheckpointBucket, LustreArgs, LustreFileSystem
from components.catalog import Cloud, Fabric
from components.fleet import Cluster
from components.k8s.fleetqueue import manager_subject


class AwsGpuCluster(pulumi.ComponentResource):
    def __init__(self, name: str, cluster: Cluster, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:aws:GpuCluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        spec, tags = cluster.spec, cluster.tags
        partition = aws.get_partition_output(opts=pulumi.InvokeOptions(parent=self)).partition
        vpc_id, subnets = _network(name, cluster, child)
        self.eks = EksCluster(name, EksClusterArgs(
            cluster_name=spec.name, kubernetes_version=spec.kubernetes_version, subnet_ids=list(subnets.values()),
            public_endpoint=spec.endpoint == "public", public_access_cidrs=spec.public_access_cidrs,
            admins=spec.admins, partition=partition, tags=tags, runner_cidrs=spec.deploy.runner_cidrs,
            manager_cidrs=multikueue.manager_cidrs(spec)), child)
        self.oidc_issuer = self.eks.oidc_issuer
        if multikueue.is_worker(spec):
            access = ManagerAccess(f"{name}-multikueue", ManagerAccessArgs(
                cluster_name=self.eks.name, region=spec.region, endpoint=self.eks.endpoint,
                ca_data=self.eks.cluster.certificate_authority.data, issuer=fleetlinks.manager_issuer(spec),
                tags=tags), child)
            self.multikueue_access = access.access
            self.multikueue_manager = manager_subject(Cloud.AWS, None)
        node_role = role(f"{name}-nodes", "ec2.amazonaws.com", NODE_POLICIES, tags, child, partition)
        efa_group = _efa_security_group(name, cluster, vpc_id, child)
        base = dict(cluster_name=self.eks.name, node_role_arn=node_role.arn,
                    cluster_security_group_id=self.eks.security_group_id, tags=tags,
                    instance_tags=cluster.cost_tags)
        SystemNodeGroup(f"{name}-system", NodeGroupArgs(subnet_ids=[subnets[z] for z in spec.zones], **base),
                        cluster.system_machine, spec.system_pool.nodes, child)
        self.node_groups = {
            pool.name: GpuNodeGroup(f"{name}-{pool.name}", GpuNodeGroupArgs(
                subnet_ids=[subnets[pool.zone]], pool=pool, efa_security_group_id=efa_group and efa_group.id,
                self_healing=spec.addons.self_healing, **base),
                child)
            for pool in cluster.pools}
        self._storage(name, cluster, vpc_id, subnets, efa_group, child)
        self.kubeconfig = self.eks.kubeconfig
        self.register_outputs({"cluster_name": self.eks.name, "endpoint": self.eks.endpoint,
                               "kubeconfig": self.kubeconfig})

    def _storage(self, name: str, cluster: Cluster, vpc_id: pulumi.Input[str], subnets: dict[str, pulumi.Input[str]],
                 efa_group: aws.ec2.SecurityGroup | None, opts: pulumi.ResourceOptions) -> None:
        storage = cluster.spec.storage
        if not storage.buckets:
            return
        key = aws.kms.Key(f"{name}-data", description=f"Checkpoint and dataset key for {name}",
                          enable_key_rotation=True, deletion_window_in_days=30, tags=cluster.tags, opts=opts)
        self.data_key = key
        self.buckets = {b.name: CheckpointBucket(f"{name}-{b.name}", BucketArgs(b, key.arn, cluster.tags), opts)
                        for b in storage.buckets}
        if storage.lustre is None:
            return
        zone = cluster.pools[0].zone if cluster.pools else cluster.spec.zones[0]
        self.lustre = LustreFileSystem(f"{name}-lustre", LustreArgs(
            spec=storage.lustre, vpc_id=vpc_id, subnet_id=subnets[zone],
            client_security_group_id=self.eks.security_group_id,
            efa_security_group_id=efa_group.id if efa_group else None,
            bucket_name=self.buckets[storage.lustre.bucket].bucket_name, kms_key_arn=key.arn, tags=cluster.tags),
            opts)
        self.checkpoint_identity = CheckpointIdentity(f"{name}-checkpoint-tools", CheckpointIdentityArgs(
            cluster_name=self.eks.name, bucket_arn=self.buckets[storage.lustre.bucket].arn, key_arn=key.arn,
            prefixes=checkpoint_tools.prefixes(cluster.spec), region=cluster.spec.region, tags=cluster.tags), opts)


Subnets = dict[str, pulumi.Input[str]]


def _network(name: str, cluster: Cluster, opts: pulumi.ResourceOptions) -> tuple[pulumi.Input[str], Subnets]:
    spec = cluster.spec
    if spec.existing_network is None:
        vpc = GpuVpc(f"{name}-net", NetworkArgs(zones=spec.zones, tags=cluster.tags, cluster_name=spec.name), opts)
        return vpc.vpc_id, dict(vpc.private_subnet_ids)
    invoke = pulumi.InvokeOptions(parent=opts.parent)
    subnets = {
        zone: aws.ec2.get_subnets_output(filters=[
            {"name": "vpc-id", "values": [spec.existing_network]},
            {"name": "availability-zone-id", "values": [zone]},
            {"name": "tag:kubernetes.io/role/internal-elb", "values": ["1"]}], opts=invoke).ids[0]
        for zone in spec.zones}
    return spec.existing_network, subnets


def _efa_security_group(name: str, cluster: Cluster, vpc_id: pulumi.Input[str],
                        opts: pulumi.ResourceOptions) -> aws.ec2.SecurityGroup | None:
    """EFA needs all traffic allowed to and from the same security group (and nothing wider)."""
    if not any(p.fabric is Fabric.EFA for p in cluster.pools):
        return None
    group = aws.ec2.SecurityGroup(f"{name}-efa", vpc_id=vpc_id, description="EFA: all traffic within the group",
                                  tags=cluster.tags, opts=opts)
    aws.vpc.SecurityGroupIngressRule(f"{name}-efa-in", security_group_id=group.id, ip_protocol="-1",
                                     referenced_security_group_id=group.id, opts=opts)
    aws.vpc.SecurityGroupEgressRule(f"{name}-efa-out", security_group_id=group.id, ip_protocol="-1",
                                    referenced_security_group_id=group.id, opts=opts)
    return group
