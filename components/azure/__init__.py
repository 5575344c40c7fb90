"""Azure: AKS GPU clusters. ``deploy`` is the translator entry point the stack program calls."""

from __future__ import annotations

import pulumi
import pulumi_azure_native as azure
import pulumi_azuread as azuread

from components.azure.gpu_cluster import AzureGpuCluster
from components.azure.lustre import hpc_cache_principal_id
from components.fleet import Cluster


def deploy(cluster: Cluster) -> AzureGpuCluster:
    """Explicit providers (default providers stay disabled): azure-native for the cluster's region and, when the
    cluster has Managed Lustre, azuread to find the tenant's HPC Cache Resource Provider; then the cluster."""
    provider = azure.Provider(f"{cluster.name}-azure", location=cluster.spec.region,
                              subscription_id=cluster.account)  # None: the Azure CLI's subscription
    principal_id = None
    if cluster.spec.storage.lustre is not None:
        # tenant of the signed-in Azure CLI / ARM_* environment, like azure-native's
        principal_id = hpc_cache_principal_id(azuread.Provider(f"{cluster.name}-azuread"))
    built = AzureGpuCluster(cluster.name, cluster, pulumi.ResourceOptions(providers={"azure-native": provider}),
                            storage_principal_id=principal_id)
    if getattr(built, "lustre", None) is not None:  # checkpoints back to blob, on demand (components/azure/lustre.py)
        pulumi.export(f"{cluster.name}-lustre-export", built.lustre.export_command)
    return built
