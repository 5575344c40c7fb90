"""One GKE GPU cluster from a resolved neutral Cluster: networks, control plane, node pools, storage."""

from __future__ import annotations

import re

import pulumi

from components import fleetlinks, multikueue
from components.catalog import Cloud
from components.fleet import Cluster
from components.gcp.checkpoints import grant_bucket
from components.gcp.cluster import GkeCluster, GkeClusterArgs, api_server, issuer, legacy_lustre_port, manager_via_dns
from components.gcp.iam import grant_admins, node_service_account
from components.gcp.kms import ClusterKeys, KeysArgs
from components.gcp.multikueue import ManagerAccess, ManagerAccessArgs
from components.gcp.network import (
    PODS_RANGE,
    SERVICES_RANGE,
    GkeNetwork,
    GpuNetworks,
    GpuNetworksArgs,
    NetworkArgs,
)
from components.gcp.nodepool import GpuNodePool, GpuNodePoolArgs, NodePoolArgs, SystemNodePool
from components.gcp.storage import BucketArgs, CheckpointBucket, LustreArgs, ManagedLustre
from components.k8s.fleetqueue import manager_subject


def gcp_labels(tags: dict[str, str]) -> dict[str, str]:
    """Tags as GCP labels: lowercase letters, digits, dashes and underscores, at most 63 characters."""
    def clean(text: str) -> str:
        return re.sub(r"[^a-z0-9_-]", "_", text.lower())[:63]
    return {clean(k): clean(v) for k, v in tags.items()}


class GcpGpuCluster(pulumi.ComponentResource):
    def __init__(self, name: str, cluster: Cluster, project: pulumi.Input[str],
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:gcp:GpuCluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.project = project
        spec, labels = cluster.spec, gcp_labels(cluster.tags)
        network = GkeNetwork(f"{name}-net", NetworkArgs(region=spec.region, existing_network=spec.existing_network),
                             child)
        gpu_networks = GpuNetworks(f"{name}-gpunet", GpuNetworksArgs(region=spec.region, project=project,
                                                                      pools=cluster.pools), child)
        self.gpu_networks = gpu_networks  # the in-cluster layer names them in GKENetworkParamSet / Network objects
        self.node_account = node_service_account(name, spec.name, project, child)
        self.keys = ClusterKeys(f"{name}-keys", KeysArgs(cluster_name=spec.name, region=spec.region, project=project,
                                                         labels=labels, data=bool(spec.storage.buckets)), child)
        self.gke = GkeCluster(name, GkeClusterArgs(
            spec=spec, project=project, network_id=network.network_id, subnet_id=network.subnet.id,
            pods_range=PODS_RANGE, services_range=SERVICES_RANGE, node_service_account=self.node_account.email,
            labels=labels, multi_networking=any(gpu_networks.attachments(p) for p in cluster.pools),
            secrets_key=self.keys.key("secrets"), key_ready=self.keys.ready("secrets")), child)
        grant_admins(name, spec.admins, project, child)
        self.oidc_issuer = issuer(project, spec.region, spec.name)
        if multikueue.is_worker(spec):
            server, ca = api_server(self.gke.cluster, manager_via_dns(spec))
            access = ManagerAccess(f"{name}-multikueue", ManagerAccessArgs(
                cluster_name=spec.name, project=project, server=server, ca_data=ca,
                issuer=fleetlinks.manager_issuer(spec)), child)
            self.multikueue_access = access.access
            self.multikueue_manager = manager_subject(Cloud.GCP, access.email)
        base = dict(cluster=self.gke.cluster.id, location=spec.region, service_account=self.node_account.email,
                    resource_labels=labels, boot_disk_kms_key=self.keys.key("disks"),
                    key_ready=self.keys.ready("disks"))
        SystemNodePool(f"{name}-system", NodePoolArgs(**base), cluster.system_machine, spec.system_pool.nodes,
                       spec.zones, child)
        self.node_pools = {
            pool.name: GpuNodePool(f"{name}-{pool.name}", GpuNodePoolArgs(
                pool=pool, gpu_driver=spec.addons.gpu_driver, extra_networks=gpu_networks.attachments(pool),
                self_healing=spec.addons.self_healing, **base),
                child)
            for pool in cluster.pools}
        self.lustre = self._storage(name, cluster, labels, project, network.network_id, child)
        self.kubeconfig = self.gke.kubeconfig
        self.register_outputs({"cluster_name": self.gke.name, "endpoint": self.gke.endpoint,
                               "kubeconfig": self.kubeconfig})

    def _storage(self, name: str, cluster: Cluster, labels: dict[str, str], project: pulumi.Input[str],
                 network_id: pulumi.Input[str], opts: pulumi.ResourceOptions) -> ManagedLustre | None:
        spec = cluster.spec
        self.buckets = {b.name: CheckpointBucket(f"{name}-{b.name}", BucketArgs(
            b, spec.region, labels, self.keys.key("data"), self.keys.ready("data")), opts)
                        for b in spec.storage.buckets}
        lustre = spec.storage.lustre
        if lustre is None:
            return None
        self.checkpoint_access = grant_bucket(name, self.buckets[lustre.bucket].bucket_name, self.keys.project_number,
                                              project, opts)
        zone = cluster.pools[0].zone if cluster.pools else spec.zones[0]  # next to the GPUs that read it
        return ManagedLustre(f"{name}-lustre", LustreArgs(
            spec=lustre, cluster_name=spec.name, zone=zone, project=project, network_id=network_id,
            node_service_account=self.node_account.email, bucket_name=self.buckets[lustre.bucket].bucket_name,
            legacy_port=legacy_lustre_port(spec.kubernetes_version), labels=labels, kms_key=self.keys.key("data")),
            opts)
