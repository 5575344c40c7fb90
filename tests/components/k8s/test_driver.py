"""The NVIDIA driver is installed exactly once on every GPU node: by the cloud (node image / managed installer) or by
the GPU operator, never both and never neither, for every example stack and either addons.gpu_driver."""

from __future__ import annotations

from typing import Any

import pytest

from gpufleet.engine.capture import Graph, Resource
from tests.components.k8s.conftest import POOL_STACKS
from tests.conftest import Capture, example_fleet, of_type


def cloud_installs(r: Resource) -> bool:
    """Does this GPU node pool's cloud resource install (or bake in) the NVIDIA driver?"""
    if r.type == "aws:eks/nodeGroup:NodeGroup":
        return "NVIDIA" in r.inputs["amiType"]
    if r.type == "gcp:container/nodePool:NodePool":
        [accelerator] = r.inputs["nodeConfig"]["guestAccelerators"]
        return accelerator["gpuDriverInstallationConfig"]["gpuDriverVersion"] != "INSTALLATION_DISABLED"
    assert r.type == "azure-native:containerservice:AgentPool"
    return r.inputs["gpuProfile"]["driver"] == "Install"


POOL_TYPES = ("aws:eks/nodeGroup:NodeGroup", "gcp:container/nodePool:NodePool",
              "azure-native:containerservice:AgentPool")


def gpu_pools(graph: Graph) -> list[Resource]:
    return [r for r in graph.resources if r.type in POOL_TYPES and "-system-" not in r.name]


def operator_installs(graph: Graph) -> bool:
    [release] = [r for r in of_type(graph, "helm.sh/v3:Release") if r.inputs["name"] == "gpu-operator"]
    values: dict[str, Any] = release.inputs["values"]
    return bool(values["driver"]["enabled"])


@pytest.mark.parametrize("owner", ["cloud", "operator"])
@pytest.mark.parametrize("stack", POOL_STACKS)  # the fleet queue's manager has no GPU node
def test_driver_has_exactly_one_owner(capture: Capture, stack: str, owner: str) -> None:
    fleet = example_fleet(stack)
    if owner == "operator" and fleet["cloud"] == "aws":
        pytest.skip("AWS refuses gpu_driver: operator at validation (the NVIDIA AMI owns the driver)")
    for cluster in fleet["clusters"]:
        cluster.setdefault("addons", {})["gpu_driver"] = owner
    graph = capture(fleet)
    pools = gpu_pools(graph)
    assert pools
    by_operator = operator_installs(graph)
    for pool in pools:
        assert cloud_installs(pool) != by_operator, f"{stack} {pool.name}: cloud={cloud_installs(pool)} " \
                                                     f"operator={by_operator}"
