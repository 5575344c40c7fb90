"""The in-cluster layer, cloud-neutral: NVIDIA runtime, interconnect plugins, Lustre volumes, Kueue, observability
and the health gate, installed through a Kubernetes provider built from the cluster component's kubeconfig."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components.fleet import Cluster
from components.k8s.addons import ClusterAddons
from components.k8s.fleetqueue import WorkerLink
from components.k8s.inputs import AddonInputs, addon_inputs
from components.k8s.replicate import PeerLink

__all__ = ["AddonInputs", "ClusterAddons", "addon_inputs", "deploy_addons"]


def deploy_addons(cluster: Cluster, built: pulumi.ComponentResource,
                  opts: pulumi.ResourceOptions | None = None, workers: tuple[WorkerLink, ...] = (),
                  peers: tuple[PeerLink, ...] = ()) -> ClusterAddons:
    """The cluster's Kubernetes provider (its kubeconfig, server-side apply), then every add-on through it."""
    inputs = addon_inputs(cluster, built, workers, peers)
    provider = k8s.Provider(f"{cluster.name}-k8s", kubeconfig=inputs.kubeconfig, enable_server_side_apply=True,
                            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[built])))
    return ClusterAddons(f"{cluster.name}-addons", cluster, inputs,
                         pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(providers={"kubernetes": provider})))
