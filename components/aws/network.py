"""The cluster's VPC: private subnets per zone for nodes, public subnets only for the NAT gateways."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

VPC_CIDR = "10.0.0.0/16"


@dataclass(frozen=True)
class NetworkArgs:
    zones: list[str]
    tags: dict[str, str]
    cluster_name: str


def _cidrs(count: int) -> tuple[list[str], list[str]]:
    """Large private subnets (/19: VPC CNI gives every pod a VPC address) and small public ones (/24)."""
    vpc = ipaddress.ip_network(VPC_CIDR)
    private = [str(s) for s in list(vpc.subnets(new_prefix=19))[:count]]
    public_pool = list(vpc.subnets(new_prefix=19))[-1]
    public = [str(s) for s in list(public_pool.subnets(new_prefix=24))[:count]]
    return private, public


class GpuVpc(pulumi.ComponentResource):
    """A VPC whose nodes have no public addresses; egress through one NAT gateway per zone."""

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:aws:GpuVpc", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.vpc = aws.ec2.Vpc(f"{name}-vpc", cidr_block=VPC_CIDR, enable_dns_hostnames=True,
                               enable_dns_support=True, tags={**args.tags, "Name": name}, opts=child)
        igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=self.vpc.id, tags=args.tags, opts=child)
        private_cidrs, public_cidrs = _cidrs(len(args.zones))
        self.private_subnet_ids: dict[str, pulumi.Output[str]] = {}
        for zone, private_cidr, public_cidr in zip(args.zones, private_cidrs, public_cidrs, strict=True):
            nat = _public_subnet_with_nat(name, zone, public_cidr, self.vpc, igw, args, child)
            self.private_subnet_ids[zone] = _private_subnet(name, zone, private_cidr, self.vpc, nat, args, child)
        self.vpc_id = self.vpc.id
        self.cidr_block = self.vpc.cidr_block
        self.register_outputs({"vpc_id": self.vpc_id, "private_subnet_ids": self.private_subnet_ids})


def _public_subnet_with_nat(name: str, zone: str, cidr: str, vpc: aws.ec2.Vpc, igw: aws.ec2.InternetGateway,
                            args: NetworkArgs, opts: pulumi.ResourceOptions) -> aws.ec2.NatGateway:
    subnet = aws.ec2.Subnet(f"{name}-public-{zone}", vpc_id=vpc.id, cidr_block=cidr, availability_zone_id=zone,
                            map_public_ip_on_launch=False,
                            tags={**args.tags, "kubernetes.io/role/elb": "1"}, opts=opts)
    table = aws.ec2.RouteTable(f"{name}-public-{zone}", vpc_id=vpc.id, tags=args.tags,
                               routes=[{"cidr_block": "0.0.0.0/0", "gateway_id": igw.id}], opts=opts)
    aws.ec2.RouteTableAssociation(f"{name}-public-{zone}", subnet_id=subnet.id, route_table_id=table.id, opts=opts)
    eip = aws.ec2.Eip(f"{name}-nat-{zone}", domain="vpc", tags=args.tags, opts=opts)
    return aws.ec2.NatGateway(f"{name}-nat-{zone}", allocation_id=eip.id, subnet_id=subnet.id, tags=args.tags,
                              opts=opts)


def _private_subnet(name: str, zone: str, cidr: str, vpc: aws.ec2.Vpc, nat: aws.ec2.NatGateway,
                    args: NetworkArgs, opts: pulumi.ResourceOptions) -> pulumi.Output[str]:
    subnet = aws.ec2.Subnet(f"{name}-private-{zone}", vpc_id=vpc.id, cidr_block=cidr, availability_zone_id=zone,
                            tags={**args.tags, "kubernetes.io/role/internal-elb": "1",
                                  f"kubernetes.io/cluster/{args.cluster_name}": "shared"}, opts=opts)
    table = aws.ec2.RouteTable(f"{name}-private-{zone}", vpc_id=vpc.id, tags=args.tags,
                               routes=[{"cidr_block": "0.0.0.0/0", "nat_gateway_id": nat.id}], opts=opts)
    aws.ec2.RouteTableAssociation(f"{name}-private-{zone}", subnet_id=subnet.id, route_table_id=table.id, opts=opts)
    return subnet.id
