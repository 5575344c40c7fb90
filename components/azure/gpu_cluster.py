"""One AKS GPU cluster from a resolved neutral Cluster: resource group, network, customer-managed keys, control
plane, GPU agent pools (with the InfiniBand feature they need), checkpoint storage and Managed Lustre."""

from __future__ import annotations

import pulumi
import pulumi_azure_native as azure

from components import fleetlinks, multikueue
from components.azure import infiniband
from components.azure.agentpool import GpuAgentPool, GpuAgentPoolArgs
from components.azure.aks import AksCluster, AksClusterArgs
from components.azure.checkpoints import CheckpointIdentity, CheckpointIdentityArgs
from components.azure.keys import AKS_KMS, LUSTRE, STORAGE, EncryptionKeys, KeysArgs, KeyUse
from components.azure.lustre import LustreArgs, ManagedLustre
from components.azure.multikueue import ManagerAccess, ManagerAccessArgs
from components.azure.network import GpuVnet, NetworkArgs
from components.azure.private_link import BLOB, dns_zone
from components.azure.storage import BucketArgs, CheckpointStorage
from components.catalog import Cloud
from components.fleet import Cluster
from components.k8s.fleetqueue import manager_subject


def key_uses(cluster: Cluster) -> tuple[KeyUse, ...]:
    """A key for every encrypting service the cluster has: always AKS KMS, storage with buckets, Lustre with Lustre."""
    storage = cluster.spec.storage
    return (AKS_KMS, *((STORAGE,) if storage.buckets else ()), *((LUSTRE,) if storage.lustre else ()))


class AzureGpuCluster(pulumi.ComponentResource):
    def __init__(self, name: str, cluster: Cluster, opts: pulumi.ResourceOptions | None = None, *,
                 storage_principal_id: pulumi.Input[str] | None = None):
        super().__init__("gpufleet:azure:GpuCluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        spec, tags, location = cluster.spec, cluster.tags, cluster.spec.region
        client = azure.authorization.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=self))
        self.resource_group = azure.resources.ResourceGroup(f"{name}-rg", location=location, tags=tags, opts=child)
        rg = self.resource_group.name
        lustre = spec.storage.lustre
        self.network = GpuVnet(f"{name}-net", NetworkArgs(
            resource_group_name=rg, location=location, lustre_capacity_tib=lustre.capacity_tib if lustre else None,
            tags=tags, existing_vnet_id=spec.existing_network), child)
        self.keys = EncryptionKeys(f"{name}-keys", KeysArgs(
            cluster_name=spec.name, resource_group_name=rg, location=location, tenant_id=client.tenant_id,
            subscription_id=client.subscription_id, endpoints_subnet_id=self.network.endpoints_subnet_id,
            vnet_id=self.network.vnet_id, uses=key_uses(cluster), tags=tags), child)
        self.aks = AksCluster(name, AksClusterArgs(
            cluster_name=spec.name, resource_group_name=rg, location=location,
            kubernetes_version=spec.kubernetes_version, zones=spec.zones,
            nodes_subnet_id=self.network.nodes_subnet_id, apiserver_subnet_id=self.network.apiserver_subnet_id,
            kms_key=self.keys.keys[AKS_KMS.name], public_endpoint=spec.endpoint == "public",
            public_access_cidrs=spec.public_access_cidrs, admin_group_ids=spec.admins,
            monitoring=spec.addons.monitoring, system_machine=cluster.system_machine,
            system_nodes=spec.system_pool.nodes, subscription_id=client.subscription_id, tags=tags), child)
        self.oidc_issuer = self.aks.oidc_issuer
        if multikueue.is_worker(spec):
            access = ManagerAccess(f"{name}-multikueue", ManagerAccessArgs(
                cluster_name=spec.name, resource_group_name=rg, location=location, tenant_id=client.tenant_id,
                kubeconfig=self.aks.kubeconfig, issuer=fleetlinks.manager_issuer(spec), tags=tags), child)
            self.multikueue_access = access.access
            self.multikueue_manager = manager_subject(Cloud.AZURE, access.principal_id)
        feature = infiniband.register(f"{name}-infiniband", cluster, child)
        self.agent_pools = {
            pool.name: GpuAgentPool(f"{name}-{pool.name}", GpuAgentPoolArgs(
                pool=pool, cluster_name=self.aks.name, resource_group_name=rg,
                nodes_subnet_id=self.network.nodes_subnet_id, kubernetes_version=spec.kubernetes_version,
                gpu_driver=spec.addons.gpu_driver, tags=tags),
                pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(
                    depends_on=[feature] if feature and infiniband.needs_feature(pool) else [])))
            for pool in cluster.pools}
        self._storage(name, cluster, client.subscription_id, storage_principal_id, child)
        self.kubeconfig = self.aks.kubeconfig
        self.register_outputs({"cluster_name": self.aks.name, "resource_group": rg, "fqdn": self.aks.fqdn,
                               "oidc_issuer": self.aks.oidc_issuer, "kubeconfig": self.kubeconfig})

    def _storage(self, name: str, cluster: Cluster, subscription_id: pulumi.Input[str],
                 storage_principal_id: pulumi.Input[str] | None, opts: pulumi.ResourceOptions) -> None:
        storage, spec = cluster.spec.storage, cluster.spec
        if not storage.buckets:
            return
        rg = self.resource_group.name
        zone = dns_zone(name, BLOB, rg, self.network.vnet_id, cluster.tags, opts)
        linked = storage.lustre.bucket if storage.lustre else None
        self.buckets = {b.name: CheckpointStorage(f"{name}-{b.name}", BucketArgs(
            spec=b, cluster_name=spec.name, resource_group_name=rg, location=spec.region,
            endpoints_subnet_id=self.network.endpoints_subnet_id, blob_dns_zone_id=zone.id,
            lustre_linked=b.name == linked, key=self.keys.keys[STORAGE.name], tags=cluster.tags), opts)
            for b in storage.buckets}
        if storage.lustre is None or self.network.lustre_subnet_id is None:
            return
        bucket = self.buckets[storage.lustre.bucket]
        self.checkpoint_identity = CheckpointIdentity(f"{name}-checkpoint-tools", CheckpointIdentityArgs(
            resource_group_name=rg, location=spec.region, oidc_issuer=self.aks.oidc_issuer,
            container_id=bucket.container_id, subscription_id=subscription_id, tags=cluster.tags), opts)
        self.lustre = ManagedLustre(f"{name}-lustre", LustreArgs(
            spec=storage.lustre, file_system_name=f"{spec.name}-lustre", resource_group_name=rg,
            location=spec.region, zone=cluster.pools[0].zone if cluster.pools else spec.zones[0],
            subnet_id=self.network.lustre_subnet_id, account_id=bucket.account_id,
            container_id=bucket.container_id, logs_container_id=bucket.logs_container_id,
            subscription_id=subscription_id, storage_principal_id=storage_principal_id,
            key=self.keys.keys[LUSTRE.name], tags=cluster.tags), opts)
