"""Every rendered Kubernetes object validates: core kinds for the cluster's Kubernetes version (strict), custom
resources against the fields their CRDs define; the health-gate Job templates too."""

from __future__ import annotations

import copy

import pytest

from components.k8s.healthgate import templates
from components.k8s.inputs import AddonInputs
from components.k8s.interconnect import GpuNic, gpu_nic_names
from components.k8s.render import render
from components.k8s.storage import LustreVolume
from components.validate import resolve
from gpufleet.engine.capture import Graph
from tests.components.k8s.conftest import STACKS, as_object, clusters, kubernetes_objects
from tests.components.k8s.validation import validate
from tests.conftest import example_fleet


@pytest.mark.parametrize("stack", STACKS)
def test_every_object_in_the_preview_validates(graphs: dict[str, Graph], stack: str) -> None:
    [cluster] = clusters(stack)
    objects = kubernetes_objects(graphs[stack])
    assert len(objects) > 10
    for r in objects:
        validate(as_object(r), cluster.spec.kubernetes_version)


def gke_with_networks() -> tuple[object, AddonInputs]:
    """The GCP example with one GPU NIC network per NIC name (as the GKE translator's attachments would give)."""
    [cluster] = resolve(example_fleet("gcp-train")).clusters
    nics = tuple(GpuNic(name, f"{name}-vpc", f"{name}-subnet", mode)
                 for pool in cluster.pools for name, mode in gpu_nic_names(cluster, pool))
    lustre = LustreVolume("ml-train-prod/us-central1-c/train-lustre", {"ip": "10.0.0.2", "filesystem": "lfs"}, 36864)
    return cluster, AddonInputs(kubeconfig="{}", lustre=lustre, gpu_nics=nics)


def test_gke_gpu_networks_and_installers_validate() -> None:
    cluster, inputs = gke_with_networks()
    rendered = render(cluster, inputs)  # type: ignore[arg-type]
    kinds = [m.kind for m in rendered.manifests]
    assert kinds.count("GKENetworkParamSet") == kinds.count("Network") == 8 + 1 + 8  # TCPXO 8, host2, RoCE 8
    installers = {m.name for m in rendered.manifests if m.kind == "DaemonSet"
                  and not m.name.startswith("gpu-")}  # ours: problem detector, DCGM health, node gate
    assert installers == {"nccl-tcpxo-installer", "nccl-rdma-installer", "device-injector"}  # NRI for TCPXO
    for m in rendered.manifests:
        validate(m.obj, cluster.spec.kubernetes_version)  # type: ignore[attr-defined]


@pytest.mark.parametrize("stack", STACKS)
def test_health_gate_templates_validate(stack: str) -> None:
    for cluster in clusters(stack):
        docs = templates(render(cluster, AddonInputs(kubeconfig="{}")).manifests)
        assert {d["kind"] for d in docs} == ({"Service", "Job"} if cluster.pools else set())  # a gate per GPU node
        for doc in docs:
            validate(doc, cluster.spec.kubernetes_version)


def test_the_validator_rejects_unknown_fields() -> None:
    cluster, inputs = gke_with_networks()
    flavor = next(m.obj for m in render(cluster, inputs).manifests if m.kind == "ResourceFlavor")  # type: ignore[arg-type]
    bad = copy.deepcopy(flavor)
    bad["spec"]["nodeSelector"] = {"a": "b"}  # ResourceFlavor calls it nodeLabels
    with pytest.raises(AssertionError, match="nodeSelector"):
        validate(bad, "1.33")
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"}, "spec": {"clusterIp": "None"}}
    with pytest.raises(Exception, match="clusterIp"):
        validate(service, "1.33")
