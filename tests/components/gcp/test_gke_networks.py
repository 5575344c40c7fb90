"""Per A3/A4 machine type: how many extra VPCs/subnets are built, with which MTU and profile, and how each node
pool is wired to them (additional_node_network_configs in NIC order)."""

from __future__ import annotations

import pytest

from gpufleet.engine.capture import Graph, Resource
from tests.components.gcp.fleets import PROJECT, VARIANT, ZOO, graph_of
from tests.conftest import of_type, one


def _named(graph: Graph, type_suffix: str, prefix: str) -> list[Resource]:
    return sorted((r for r in of_type(graph, type_suffix) if r.name.startswith(prefix)), key=lambda r: r.name)


def _wiring(graph: Graph, pool: str) -> list[tuple[str, str]]:
    """(network, subnetwork) per extra NIC, without the auto-name suffix."""
    config = one(graph, "container/nodePool:NodePool", f"train-{pool}-np").inputs["networkConfig"]
    return [(w["network"].rsplit("-", 1)[0], w["subnetwork"].rsplit("-", 1)[0])
            for w in config.get("additionalNodeNetworkConfigs") or []]


def _tcpx(nics: int) -> list[tuple[str, str]]:
    return [(f"train-gpunet-gpu-{i}-vpc", f"train-gpunet-gpu-{i}-subnet") for i in range(nics)]


@pytest.mark.parametrize(("pool", "wiring"), [
    ("high", _tcpx(4)),  # a3-highgpu-8g: GPUDirect-TCPX, 4 GPU NICs
    ("mega", _tcpx(8)),  # a3-megagpu-8g: GPUDirect-TCPXO, 8 GPU NICs
    *((pool, [("train-gpunet-host2-vpc", "train-gpunet-host2-subnet")]  # a3-ultragpu-8g / a4-highgpu-8g: RDMA
              + [("train-gpunet-rdma-us-central1-b-vpc", f"train-gpunet-rdma-us-central1-b-subnet-{j}")
                 for j in range(8)]) for pool in ("ultra", "a4")),
    ("l4", []),  # g2-standard-48: no fabric
])
def test_each_pool_is_wired_to_its_machine_types_gpu_networks(pool: str, wiring: list[tuple[str, str]]) -> None:
    assert _wiring(graph_of(ZOO), pool) == wiring


def test_tcpx_vpcs_one_per_gpu_nic_shared_by_tcpx_and_tcpxo_pools() -> None:
    graph = graph_of(ZOO)
    networks = _named(graph, "compute/network:Network", "train-gpunet-gpu-")
    subnets = _named(graph, "compute/subnetwork:Subnetwork", "train-gpunet-gpu-")
    firewalls = _named(graph, "compute/firewall:Firewall", "train-gpunet-gpu-")
    assert len(networks) == len(subnets) == len(firewalls) == 8  # the most any TCPX(O) pool needs
    assert {n.inputs["mtu"] for n in networks} == {8244}
    assert all(r.parent == "gpufleet:gcp:GpuNetworks::train-gpunet" for r in networks + subnets + firewalls)
    for subnet, firewall in zip(subnets, firewalls, strict=True):  # each rail open only to itself
        assert firewall.inputs["sourceRanges"] == [subnet.inputs["ipCidrRange"]]
        assert firewall.inputs["direction"] == "INGRESS"


def test_rdma_one_roce_vpc_per_zone_with_eight_subnets_and_a_second_host_nic() -> None:
    graph = graph_of(ZOO)
    [roce] = _named(graph, "compute/network:Network", "train-gpunet-rdma-")
    assert roce.inputs["networkProfile"] == f"projects/{PROJECT}/global/networkProfiles/us-central1-b-vpc-roce"
    assert roce.inputs["mtu"] == 8896
    subnets = _named(graph, "compute/subnetwork:Subnetwork", "train-gpunet-rdma-us-central1-b-subnet-")
    assert len(subnets) == 8
    assert all(s.inputs["network"].startswith("projects/gpufleet-preview/global/networks/train-gpunet-rdma-")
               for s in subnets)
    [host2] = _named(graph, "compute/network:Network", "train-gpunet-host2-")
    assert host2.inputs["mtu"] == 8896
    assert not _named(graph, "compute/firewall:Firewall", "train-gpunet-rdma")  # RoCE VPCs take no firewall rules


def test_multi_networking_and_dataplane_v2_only_with_gpudirect_pools() -> None:
    cluster = one(graph_of(ZOO), "container/cluster:Cluster", "train-gke").inputs
    assert cluster["enableMultiNetworking"] is True and cluster["datapathProvider"] == "ADVANCED_DATAPATH"
    plain = graph_of(VARIANT)
    assert "enableMultiNetworking" not in one(plain, "container/cluster:Cluster", "train-gke").inputs
    assert not _named(plain, "compute/network:Network", "train-gpunet")


def test_primary_vpc_is_private_with_nat_and_secondary_ranges() -> None:
    graph = graph_of(ZOO)
    subnet = one(graph, "compute/subnetwork:Subnetwork", "train-net-nodes").inputs
    assert subnet["privateIpGoogleAccess"] is True
    assert [r["rangeName"] for r in subnet["secondaryIpRanges"]] == ["pods", "services"]
    nat = one(graph, "compute/routerNat:RouterNat", "train-net-nat").inputs
    assert nat["sourceSubnetworkIpRangesToNat"] == "LIST_OF_SUBNETWORKS"
    cluster = one(graph, "container/cluster:Cluster", "train-gke").inputs
    assert cluster["ipAllocationPolicy"] == {"clusterSecondaryRangeName": "pods",
                                             "servicesSecondaryRangeName": "services"}
