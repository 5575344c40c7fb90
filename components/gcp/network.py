"""The cluster's networks: the primary VPC (nodes, pods, services, Cloud NAT) and the extra VPCs that A3/A4 GPU
NICs need, derived from the catalogue's fabric and GPU NIC count.

- GPUDirect-TCPX (a3-highgpu-8g) / TCPXO (a3-megagpu-8g): one VPC + subnet per GPU NIC, MTU 8244, shared by
  every TCPX(O) pool of the cluster (a pool attaches the first ``gpu_nics`` of them).
- GPUDirect-RDMA (a3-ultragpu-8g, a4-highgpu-8g): a second host-NIC (gVNIC) VPC, and per zone one RoCE VPC built
  from the zone's ``<zone>-vpc-roce`` network profile (MTU 8896) with one subnet per GPU NIC.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

from components.catalog import Fabric
from components.fleet import Pool

NODES_CIDR = "10.0.0.0/20"
PODS_RANGE, PODS_CIDR = "pods", "10.64.0.0/14"
SERVICES_RANGE, SERVICES_CIDR = "services", "10.68.0.0/20"
PRIMARY_MTU = 8896  # jumbo frames for Managed Lustre and GCS traffic on the host NIC
TCPX_MTU = 8244  # GPUDirect-TCPX/TCPXO networks (GKE "Maximize GPU network bandwidth" guide)
RDMA_MTU = 8896  # RoCE networks and the A3 Ultra / A4 second host NIC
GPU_SUBNETS = list(ipaddress.ip_network("10.128.0.0/12").subnets(new_prefix=20))  # one /20 per extra subnet
HOST2_BLOCK, TCPX_BLOCK, RDMA_BLOCK = 0, 1, 16  # where each kind of extra subnet starts in GPU_SUBNETS
TCPX_FABRICS = (Fabric.TCPX, Fabric.TCPXO)


@dataclass(frozen=True)
class NetworkArgs:
    region: str
    existing_network: str | None  # projects/<p>/global/networks/<name>: build our subnet and NAT inside it


class GkeNetwork(pulumi.ComponentResource):
    """Primary VPC: a private node subnet with pod/service secondary ranges and Private Google Access; Cloud NAT
    for egress (nodes have no external addresses)."""

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:gcp:Network", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        if args.existing_network is None:
            vpc = gcp.compute.Network(f"{name}-vpc", auto_create_subnetworks=False, routing_mode="REGIONAL",
                                      mtu=PRIMARY_MTU, opts=child)
            self.network_id: pulumi.Input[str] = vpc.id
            self.network_name: pulumi.Input[str] = vpc.name
        else:
            self.network_id, self.network_name = args.existing_network, args.existing_network.rsplit("/", 1)[1]
        self.subnet = gcp.compute.Subnetwork(
            f"{name}-nodes", network=self.network_id, region=args.region, ip_cidr_range=NODES_CIDR,
            private_ip_google_access=True,
            secondary_ip_ranges=[{"range_name": PODS_RANGE, "ip_cidr_range": PODS_CIDR},
                                 {"range_name": SERVICES_RANGE, "ip_cidr_range": SERVICES_CIDR}],
            log_config={"aggregation_interval": "INTERVAL_5_MIN", "flow_sampling": 0.1}, opts=child)
        router = gcp.compute.Router(f"{name}-router", network=self.network_id, region=args.region, opts=child)
        gcp.compute.RouterNat(
            f"{name}-nat", router=router.name, region=args.region, nat_ip_allocate_option="AUTO_ONLY",
            source_subnetwork_ip_ranges_to_nat="LIST_OF_SUBNETWORKS",
            subnetworks=[{"name": self.subnet.id, "source_ip_ranges_to_nats": ["ALL_IP_RANGES"]}],
            log_config={"enable": True, "filter": "ERRORS_ONLY"}, opts=child)
        self.register_outputs({"network_id": self.network_id, "subnet_id": self.subnet.id})


@dataclass(frozen=True)
class GpuNetworksArgs:
    region: str
    project: pulumi.Input[str]
    pools: tuple[Pool, ...]


@dataclass
class _Net:
    network: gcp.compute.Network
    subnets: list[gcp.compute.Subnetwork] = field(default_factory=list)


class GpuNetworks(pulumi.ComponentResource):
    """The extra VPCs of every GPUDirect pool; ``attachments(pool)`` is that pool's additional node networks."""

    def __init__(self, name: str, args: GpuNetworksArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:gcp:GpuNetworks", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tcpx_nics = max((p.machine.gpu_nics for p in args.pools if p.fabric in TCPX_FABRICS), default=0)
        self.tcpx = [_gvnic_net(f"{name}-gpu-{i}", str(GPU_SUBNETS[TCPX_BLOCK + i]), TCPX_MTU, args.region, child)
                     for i in range(tcpx_nics)]
        rdma_pools = [p for p in args.pools if p.fabric is Fabric.RDMA]
        self.host2 = (_gvnic_net(f"{name}-host2", str(GPU_SUBNETS[HOST2_BLOCK]), RDMA_MTU, args.region, child)
                      if rdma_pools else None)
        zones = sorted({p.zone for p in rdma_pools})
        self.rdma = {zone: _roce_net(f"{name}-rdma-{zone}", zone, k,
                                     max(p.machine.gpu_nics for p in rdma_pools if p.zone == zone), args, child)
                     for k, zone in enumerate(zones)}
        self.register_outputs({"networks": [n.network.name for n in self._all()]})

    def _all(self) -> list[_Net]:
        return [*self.tcpx, *([self.host2] if self.host2 else []), *self.rdma.values()]

    def attachments(self, pool: Pool) -> list[dict[str, pulumi.Input[str]]]:
        """additional_node_network_configs for one pool, in NIC order; [] for pools without GPUDirect."""
        nics = pool.machine.gpu_nics
        if pool.fabric in TCPX_FABRICS:
            return [_attach(net.network, net.subnets[0]) for net in self.tcpx[:nics]]
        if pool.fabric is Fabric.RDMA and self.host2 is not None:
            roce = self.rdma[pool.zone]
            return [_attach(self.host2.network, self.host2.subnets[0]),
                    *(_attach(roce.network, subnet) for subnet in roce.subnets[:nics])]
        return []


def _attach(network: gcp.compute.Network, subnet: gcp.compute.Subnetwork) -> dict[str, pulumi.Input[str]]:
    return {"network": network.name, "subnetwork": subnet.name}


def _gvnic_net(name: str, cidr: str, mtu: int, region: str, opts: pulumi.ResourceOptions) -> _Net:
    """One VPC with one subnet; ingress allowed only from that subnet (peer NICs of the same rail)."""
    network = gcp.compute.Network(f"{name}-vpc", auto_create_subnetworks=False, mtu=mtu, opts=opts)
    subnet = gcp.compute.Subnetwork(f"{name}-subnet", network=network.id, region=region, ip_cidr_range=cidr,
                                    opts=opts)
    gcp.compute.Firewall(f"{name}-internal", network=network.id, direction="INGRESS", source_ranges=[cidr],
                         allows=[{"protocol": "tcp"}, {"protocol": "udp"}, {"protocol": "icmp"}],
                         description="GPU NIC traffic between nodes on this network only", opts=opts)
    return _Net(network, [subnet])


def _roce_net(name: str, zone: str, index: int, nics: int, args: GpuNetworksArgs,
              opts: pulumi.ResourceOptions) -> _Net:
    """A RoCE VPC for one zone. RDMA networks carry implicit allow rules and take no VPC firewall rules."""
    profile = pulumi.Output.concat("projects/", args.project, f"/global/networkProfiles/{zone}-vpc-roce")
    network = gcp.compute.Network(f"{name}-vpc", auto_create_subnetworks=False, mtu=RDMA_MTU,
                                  network_profile=profile, opts=opts)
    subnets = [gcp.compute.Subnetwork(f"{name}-subnet-{j}", network=network.id, region=args.region,
                                      ip_cidr_range=str(GPU_SUBNETS[RDMA_BLOCK + index * 8 + j]), opts=opts)
               for j in range(nics)]
    return _Net(network, subnets)
