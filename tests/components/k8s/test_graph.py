"""Every example stack's preview shows its add-ons, wired to that cluster's Kubernetes provider."""

from __future__ import annotations

import pytest

from gpufleet.engine.capture import Graph
from tests.components.k8s.conftest import STACKS, clusters, kubernetes_objects
from tests.conftest import of_type, one


def ancestors(graph: Graph, key: str) -> list[str]:
    by_key, chain = graph.by_key(), []
    while key in by_key and by_key[key].parent:
        key = by_key[key].parent  # type: ignore[assignment]
        chain.append(key)
    return chain


@pytest.mark.parametrize("stack", STACKS)
def test_addons_use_their_clusters_provider(graphs: dict[str, Graph], stack: str) -> None:
    graph = graphs[stack]
    for cluster in clusters(stack):
        provider = one(graph, "pulumi:providers:kubernetes", f"{cluster.name}-k8s")
        assert provider.inputs["kubeconfig"] == "[secret]"  # built from the cluster component's secret kubeconfig
        addons = one(graph, "gpufleet:k8s:ClusterAddons", f"{cluster.name}-addons")
        mine = [r for r in graph.resources if addons.key in ancestors(graph, r.key)]
        assert {r.type for r in mine} >= {"kubernetes:helm.sh/v3:Release", "kubernetes:core/v1:Namespace"}
        kube = [r for r in mine if not r.type.startswith(("random:", "pulumi:providers:random"))]
        assert all(r.provider == provider.key for r in kube), {r.key: r.provider for r in kube}
        # the Grafana admin password: generated through the layer's own random provider (no default providers)
        password = one(graph, "random:index/randomPassword:RandomPassword", f"{cluster.name}-addons-grafana-admin")
        assert password.provider == f"pulumi:providers:random::{cluster.name}-addons-random"
    assert all(r.provider is not None for r in kubernetes_objects(graph) + of_type(graph, "helm.sh/v3:Release"))


@pytest.mark.parametrize("stack", STACKS)
def test_every_cluster_gets_the_core_addons(graphs: dict[str, Graph], stack: str) -> None:
    releases = {r.inputs["name"] for r in of_type(graphs[stack], "helm.sh/v3:Release")}
    gpus = any(c.pools for c in clusters(stack))  # the fleet queue's manager has none: no GPU operator
    assert {*(("gpu-operator",) if gpus else ()), "kueue", "kube-prometheus-stack"} <= releases
    for release in of_type(graphs[stack], "helm.sh/v3:Release"):
        assert release.inputs["version"], f"{release.name}: chart version must be pinned"


def test_efa_plugin_only_on_efa_pools(graphs: dict[str, Graph]) -> None:
    for stack in STACKS:
        efa = [r for r in of_type(graphs[stack], "helm.sh/v3:Release") if r.inputs["name"] == "efa-device-plugin"]
        has_efa = any(p.fabric.value == "efa" for c in clusters(stack) for p in c.pools)
        assert bool(efa) == has_efa, stack
        for release in efa:
            assert release.inputs["values"]["nodeSelector"] == {"gpufleet.io/fabric": "efa"}
    assert not any(r.inputs["name"] == "efa-device-plugin" for r in of_type(graphs["dev"], "helm.sh/v3:Release"))


def test_network_operator_only_on_infiniband_clusters(graphs: dict[str, Graph]) -> None:
    for stack in STACKS:
        ib = any(p.fabric.value == "infiniband" for c in clusters(stack) for p in c.pools)
        releases = {r.inputs["name"] for r in of_type(graphs[stack], "helm.sh/v3:Release")}
        assert ("network-operator" in releases) == ib, stack
        assert bool(of_type(graphs[stack], ":NicClusterPolicy")) == ib, stack
    assert "network-operator" in {r.inputs["name"] for r in of_type(graphs["azure-train"], "helm.sh/v3:Release")}
