"""AWS: EKS GPU clusters. ``deploy`` is the translator entry point the stack program calls."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from components.aws.gpu_cluster import AwsGpuCluster
from components.fleet import Cluster


def deploy(cluster: Cluster) -> AwsGpuCluster:
    """An explicit provider for the cluster's region (default providers stay disabled), then the cluster."""
    # Tags go on each resource rather than the provider's default_tags, so the policy pack sees them.
    provider = aws.Provider(f"{cluster.name}-aws", region=cluster.spec.region)
    return AwsGpuCluster(cluster.name, cluster, pulumi.ResourceOptions(providers={"aws": provider}))
