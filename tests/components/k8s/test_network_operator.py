"""The NicClusterPolicy of InfiniBand clusters against the pinned network operator release (hack/release.yaml and its
full example CR, digested) and the RDMA shared device plugin's config schema (its Go structs, digested)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.catalog import Fabric
from components.k8s import upstream
from components.k8s.kueue import FABRIC_RESOURCES
from tests.components.k8s.upstream_cases import rendered

RENDERED = rendered()
RELEASE = upstream.digest("network-operator")["values"]["hack/release.yaml"]
EXAMPLE = json.loads(upstream.digest("network-operator")["values"][
    "example/crs/mellanox.com_v1alpha1_nicclusterpolicy_cr-full.yaml"]["spec.rdmaSharedDevicePlugin.config"])
PLUGIN = upstream.digest("k8s-rdma-shared-dev-plugin")["structs"]["pkg/types/types.go"]
# NVIDIA publishes the DOCA driver image in the NGC catalog's nvidia/mellanox team, the repository every release's
# NicClusterPolicy example in the docs names (e.g. docs.nvidia.com/networking/display/kubernetes2570/customizations/
# cr-full-example.html); the release file at the tag names the staging registry.
PUBLIC_DRIVER_REPOSITORY = "nvcr.io/nvidia/mellanox"


def policies() -> list[dict[str, Any]]:
    return [m.obj["spec"] for _, out in RENDERED.values() for m in out.manifests if m.kind == "NicClusterPolicy"]


POLICIES = policies()


def test_some_case_renders_a_policy() -> None:
    assert POLICIES, "no InfiniBand case in the upstream cases: the tests below would check nothing"


@pytest.mark.parametrize("spec", POLICIES)
def test_driver_and_plugin_are_the_releases_images(spec: dict[str, Any]) -> None:
    driver = {k: spec["ofedDriver"][k] for k in ("image", "repository", "version")}
    assert driver == {**RELEASE["Mofed"], "repository": PUBLIC_DRIVER_REPOSITORY}
    assert {k: spec["rdmaSharedDevicePlugin"][k] for k in ("image", "repository", "version")} == \
        RELEASE["RdmaSharedDevicePlugin"]


@pytest.mark.parametrize("spec", POLICIES)
def test_plugin_config_keys_are_the_plugins_own(spec: dict[str, Any]) -> None:
    config = json.loads(spec["rdmaSharedDevicePlugin"]["config"])
    assert set(config) <= set(PLUGIN["UserConfigList"]["fields"])
    for entry in config["configList"]:
        assert set(entry) <= set(PLUGIN["UserConfig"]["fields"])
        assert set(entry["selectors"]) <= set(PLUGIN["Selectors"]["fields"])


@pytest.mark.parametrize("spec", POLICIES)
def test_shared_resource_is_the_examples(spec: dict[str, Any]) -> None:
    """Name, sharing limit and vendor as upstream's example; only InfiniBand links (Azure's accelerated-networking
    VF is a Mellanox Ethernet device: netlink names an IB link's encapsulation "infiniband")."""
    [ours] = json.loads(spec["rdmaSharedDevicePlugin"]["config"])["configList"]
    [theirs] = EXAMPLE["configList"]
    assert (ours["resourceName"], ours["rdmaHcaMax"]) == (theirs["resourceName"], theirs["rdmaHcaMax"])
    assert ours["selectors"]["vendors"] == theirs["selectors"]["vendors"]
    assert ours["selectors"]["linkTypes"] == ["infiniband"]


def test_kueue_covers_the_shared_device_as_the_plugin_advertises_it() -> None:
    """Kueue's quota for IB pools names the plugin's resource with rdmaHcaMax per node (a pod asking for a resource
    no ClusterQueue covers is inadmissible)."""
    [theirs] = EXAMPLE["configList"]
    name, per_node = FABRIC_RESOURCES[Fabric.INFINIBAND]
    ib_pools = [p for cluster, _ in RENDERED.values() for p in cluster.pools if p.fabric is Fabric.INFINIBAND]
    assert ib_pools
    assert name == f"rdma/{theirs['resourceName']}"
    assert {per_node(p) for p in ib_pools} == {theirs["rdmaHcaMax"]}
