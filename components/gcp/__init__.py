"""GCP: GKE GPU clusters. ``deploy`` is the translator entry point the stack program calls."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from components.fleet import Cluster
from components.gcp.gpu_cluster import GcpGpuCluster, gcp_labels


def deploy(cluster: Cluster) -> GcpGpuCluster:
    """An explicit provider for the cluster's project and region (default providers stay disabled), the cluster,
    and the Managed Lustre transfer commands as stack outputs."""
    provider = gcp.Provider(f"{cluster.name}-gcp", project=cluster.account, region=cluster.spec.region,
                            default_labels=gcp_labels(cluster.tags))
    # Without an account in the spec the provider takes the project from the environment; read it back.
    project = cluster.account or gcp.organizations.get_client_config_output(
        opts=pulumi.InvokeOptions(provider=provider)).project
    built = GcpGpuCluster(cluster.name, cluster, project, pulumi.ResourceOptions(providers={"gcp": provider}))
    if built.lustre is not None:
        pulumi.export(f"{cluster.name}-lustre-import", built.lustre.import_command)
        pulumi.export(f"{cluster.name}-lustre-export", built.lustre.export_command)
    return built
