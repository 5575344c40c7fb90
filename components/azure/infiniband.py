"""InfiniBand on AKS: the subscription feature ``Microsoft.ContainerService/AKSInfinibandSupport`` makes AKS
place a pool's ND VMs on one InfiniBand network. Registered declaratively (Microsoft.Features
subscriptionFeatureRegistrations); never for sizes that refuse it (GB200 / GB300, see capabilities)."""

from __future__ import annotations

import pulumi
import pulumi_azure_native as azure

from components.capabilities import capabilities
from components.catalog import Cloud
from components.fleet import Cluster, Pool

PROPAGATE = ("az feature show --namespace Microsoft.ContainerService --name AKSInfinibandSupport "
             "--query properties.state  # wait for Registered, then: "
             "az provider register --namespace Microsoft.ContainerService")


def feature() -> tuple[str, str]:
    """(provider namespace, feature name) from the declared Azure capabilities."""
    namespace, _, name = capabilities(Cloud.AZURE).fabric_feature.partition("/")
    return namespace, name


def needs_feature(pool: Pool) -> bool:
    return capabilities(Cloud.AZURE).needs_fabric_feature(pool.machine.name, pool.fabric.value)


def register(name: str, cluster: Cluster,
             opts: pulumi.ResourceOptions) -> azure.features.SubscriptionFeatureRegistration | None:
    """The feature registration the cluster's InfiniBand pools depend on, or None when no pool needs it.

    Kept on delete: the feature is subscription-wide and other clusters may rely on it."""
    pools = [p.name for p in cluster.pools if needs_feature(p)]
    if not pools:
        return None
    namespace, feature_name = feature()
    pulumi.log.warn(f"{cluster.name}: pools {', '.join(pools)} need the subscription feature "
                    f"{namespace}/{feature_name}; this stack registers it. Registration can take minutes and "
                    f"reaches AKS only after the resource provider is re-registered: {PROPAGATE}")
    return azure.features.SubscriptionFeatureRegistration(
        name, provider_namespace=namespace, feature_name=feature_name,
        properties={"description": f"InfiniBand placement for AKS pools {', '.join(pools)} of {cluster.name}"},
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(retain_on_delete=True)))
