"""What must hold for any valid fleet: it resolves, it previews, the policy pack finds no mandatory violation, and
node pools, interconnect wiring and Kueue quotas agree with the catalogue row the pool names.

Expected values come from the raw fleet dict and the catalogue row (the single source of machine facts), never from
the translators under test. Each check returns problems (strings) so a failure lists all of them at once.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Any

from components.catalog import Cloud, Fabric, MachineType
from components.validate import resolve
from gpufleet.checks.analyzer import PolicyPack, fleet_config
from gpufleet.engine.capture import Graph, Resource, run_program
from stacks.config import CONFIG_KEY
from tests.invariants.fleets import machine_of

Problems = Iterator[str]
# The budget policy refuses machine types without a price; which catalogue rows lack one is pinned separately
# (test_fleet_invariants.test_unpriced_machine_types_are_known), so here it does not hide other verdicts.
UNPRICED = "cannot estimate the monthly cost: no price for"
EKS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
PLACEMENT_GROUP = "aws:ec2/placementGroup:PlacementGroup"
GKE_NODE_POOL = "gcp:container/nodePool:NodePool"
GCP_NETWORK = "gcp:compute/network:Network"
GCP_SUBNET = "gcp:compute/subnetwork:Subnetwork"
AKS_AGENT_POOL = "azure-native:containerservice:AgentPool"
CLUSTER_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
GPU = "nvidia.com/gpu"  # https://github.com/NVIDIA/k8s-device-plugin (the resource name it advertises)
EFA = "vpc.amazonaws.com/efa"  # https://github.com/aws/eks-charts/tree/master/stable/aws-efa-k8s-device-plugin


def preview(raw: dict[str, Any], pack: PolicyPack) -> tuple[Graph, list[str]]:
    """Resolve, run the real program under mocks, judge with the running pack: the graph and mandatory verdicts."""
    fleet = resolve(raw)  # raises SpecError if the validator refuses a valid fleet
    graph = run_program("invariants", {CONFIG_KEY: raw})
    pack.configure(fleet_config(fleet))
    mandatory = [f"{v.policy}: {v.resource}: {v.message}" for v in pack.analyze(graph)
                 if v.mandatory and not (v.policy == "stack-monthly-budget" and v.message.startswith(UNPRICED))]
    return graph, mandatory


def fabric(cloud: Cloud, p: dict[str, Any]) -> Fabric:
    return Fabric.NONE if p.get("interconnect") == "off" else machine_of(cloud, p).fabric


def compact(cloud: Cloud, p: dict[str, Any]) -> bool:
    chosen = p.get("compact_placement")
    return fabric(cloud, p) is not Fabric.NONE if chosen is None else chosen


def zone(cluster: dict[str, Any], p: dict[str, Any]) -> str:
    return p.get("zone") or cluster["zones"][0]


def _one(graph: Graph, rtype: str, name: str) -> Resource | None:
    return graph.by_key().get(f"{rtype}::{name}")


def catalogue_agreement(raw: dict[str, Any], graph: Graph) -> Problems:
    cloud = Cloud(raw["cloud"])
    check = {Cloud.AWS: _aws_pool, Cloud.GCP: _gcp_pool, Cloud.AZURE: _azure_pool}[cloud]
    for cluster in raw["clusters"]:
        for p in cluster["node_pools"]:
            yield from check(graph, cluster, p, machine_of(cloud, p))
        yield from kueue_quotas(cloud, graph, cluster)
    yield from disjoint_subnets(raw, graph)


def _initial(nodes: dict[str, Any]) -> int:
    return nodes["min"] if nodes.get("desired") is None else nodes["desired"]


def _aws_pool(graph: Graph, cluster: dict[str, Any], p: dict[str, Any], m: MachineType) -> Problems:
    name = f"{cluster['name']}-{p['name']}"
    group = _one(graph, EKS_NODE_GROUP, f"{name}-ng")
    template = _one(graph, LAUNCH_TEMPLATE, f"{name}-lt")
    if group is None or template is None:
        yield f"{name}: no node group / launch template"
        return
    if group.inputs.get("instanceTypes") != [m.name]:
        yield f"{name}: instanceTypes {group.inputs.get('instanceTypes')} != [{m.name}]"
    scaling = group.inputs.get("scalingConfig", {})
    want = {"minSize": p["nodes"]["min"], "maxSize": p["nodes"]["max"], "desiredSize": _initial(p["nodes"])}
    if scaling != want:
        yield f"{name}: scalingConfig {scaling} != {want}"
    # EKS CreateNodegroup capacityType: ON_DEMAND | SPOT | CAPACITY_BLOCK
    # (https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateNodegroup.html); reservations run ON_DEMAND.
    kind = p.get("capacity", {}).get("type", "on_demand")
    want_type = {"spot": "SPOT", "capacity_block": "CAPACITY_BLOCK"}.get(kind, "ON_DEMAND")
    if group.inputs.get("capacityType") != want_type:
        yield f"{name}: capacityType {group.inputs.get('capacityType')} != {want_type}"
    nics = template.inputs.get("networkInterfaces", [])
    efa = [n for n in nics if n.get("interfaceType") in ("efa", "efa-only")]
    want_efa = m.efa_interfaces if fabric(Cloud.AWS, p) is Fabric.EFA else 0
    if len(efa) != want_efa:
        yield f"{name}: {len(efa)} EFA interfaces, the catalogue row says {want_efa}"
    if sorted(int(n.get("networkCardIndex", 0)) for n in efa) != list(range(want_efa)):
        yield f"{name}: EFA interfaces not one per network card 0..{want_efa - 1}"
    reservation = template.inputs.get("capacityReservationSpecification", {}).get("capacityReservationTarget", {})
    if kind in ("reservation", "capacity_block") and reservation.get("capacityReservationId") != p["capacity"]["id"]:
        yield f"{name}: launch template does not target reservation {p['capacity']['id']}"
    # A capacity block is already one placement; EC2 refuses a placement group on top of it.
    want_pg = compact(Cloud.AWS, p) and kind != "capacity_block"
    pg = _one(graph, PLACEMENT_GROUP, f"{name}-pg")
    if want_pg and (pg is None or pg.inputs.get("strategy") != "cluster" or not template.inputs.get("placement")):
        yield f"{name}: compact {kind} pool is not in a cluster placement group"
    if not want_pg and pg is not None:
        yield f"{name}: has a placement group it should not have"


def _gcp_pool(graph: Graph, cluster: dict[str, Any], p: dict[str, Any], m: MachineType) -> Problems:
    name = f"{cluster['name']}-{p['name']}"
    node_pool = _one(graph, GKE_NODE_POOL, f"{name}-np")
    if node_pool is None:
        yield f"{name}: no GKE node pool"
        return
    config = node_pool.inputs.get("nodeConfig", {})
    if config.get("machineType") != m.name:
        yield f"{name}: machineType {config.get('machineType')} != {m.name}"
    accelerators = [(a.get("type"), a.get("count")) for a in config.get("guestAccelerators", [])]
    if accelerators not in ([], [(m.accelerator_type, m.gpus)]):  # A3+ machines carry their GPUs implicitly
        yield f"{name}: guestAccelerators {accelerators} != {m.gpus} x {m.accelerator_type}"
    if node_pool.inputs.get("nodeLocations") != [zone(cluster, p)]:
        yield f"{name}: nodeLocations {node_pool.inputs.get('nodeLocations')} != [{zone(cluster, p)}]"
    autoscaling = node_pool.inputs.get("autoscaling", {})
    if autoscaling.get("totalMaxNodeCount", autoscaling.get("maxNodeCount")) != p["nodes"]["max"]:
        yield f"{name}: autoscaling {autoscaling} does not reach max {p['nodes']['max']}"
    extra = node_pool.inputs.get("networkConfig", {}).get("additionalNodeNetworkConfigs", [])
    kind = fabric(Cloud.GCP, p)
    if kind is Fabric.RDMA:
        # GPUDirect-RDMA: the second gVNIC plus one RoCE subnet per GPU NIC, all in the pool's zone's RoCE VPC
        # (https://cloud.google.com/ai-hypercomputer/docs/create/gke-ai-hypercompute-custom)
        roce = f"{cluster['name']}-gpunet-rdma-{zone(cluster, p)}-"
        subnets = [n.get("subnetwork", "") for n in extra[1:]]
        if len(extra) != m.gpu_nics + 1 or not all(s.startswith(roce + "subnet-") for s in subnets):
            yield f"{name}: RDMA networks {extra} are not host2 + {m.gpu_nics} RoCE subnets of {roce}"
        vpc = _one(graph, GCP_NETWORK, f"{roce}vpc")
        if vpc is None or not str(vpc.inputs.get("networkProfile", "")).endswith(f"/{zone(cluster, p)}-vpc-roce"):
            yield f"{name}: no RoCE VPC with the {zone(cluster, p)}-vpc-roce network profile"
    elif kind in (Fabric.TCPX, Fabric.TCPXO):
        if len(extra) != m.gpu_nics:
            yield f"{name}: {len(extra)} additional networks, {m.gpu_nics} GPU NICs in the catalogue"
    elif extra:
        yield f"{name}: additional node networks without a GPUDirect fabric"


def _azure_pool(graph: Graph, cluster: dict[str, Any], p: dict[str, Any], m: MachineType) -> Problems:
    name = f"{cluster['name']}-{p['name']}-pool"
    agent = _one(graph, AKS_AGENT_POOL, name)
    if agent is None:
        yield f"{name}: no AKS agent pool"
        return
    want = {"vmSize": m.name, "minCount": p["nodes"]["min"], "maxCount": p["nodes"]["max"],
            "count": _initial(p["nodes"]), "availabilityZones": [zone(cluster, p)]}
    got = {k: agent.inputs.get(k) for k in want}
    if got != want:
        yield f"{name}: {got} != {want}"
    kind = p.get("capacity", {}).get("type", "on_demand")
    if kind == "reservation" and agent.inputs.get("capacityReservationGroupID") != p["capacity"]["id"]:
        yield f"{name}: not drawn from {p['capacity']['id']}"
    # AgentPool scaleSetPriority: Regular | Spot (https://learn.microsoft.com/rest/api/aks/agent-pools)
    if (agent.inputs.get("scaleSetPriority") == "Spot") != (kind == "spot"):
        yield f"{name}: scaleSetPriority {agent.inputs.get('scaleSetPriority')} for {kind} capacity"


# The address range input of each cloud's subnet resource (provider SDK wire names).
SUBNET_RANGES = {"aws:ec2/subnet:Subnet": "cidrBlock", GCP_SUBNET: "ipCidrRange",
                 "azure-native:network:Subnet": "addressPrefix"}


def disjoint_subnets(raw: dict[str, Any], graph: Graph) -> Problems:
    """No two subnets one cluster builds share an address: node, GPU NIC and every zone's RoCE subnets each get
    their own range (a RoCE range reused by a second zone routes the first zone's RDMA traffic nowhere)."""
    for cluster in raw["clusters"]:
        ranges = [(r.name, ipaddress.ip_network(r.inputs[field])) for r in graph.resources
                  if (field := SUBNET_RANGES.get(r.type)) and r.name.startswith(f"{cluster['name']}-")
                  and isinstance(r.inputs.get(field), str)]
        for i, (name, net) in enumerate(ranges):
            for other, other_net in ranges[i + 1:]:
                if net.overlaps(other_net):
                    yield f"{cluster['name']}: subnets {name} ({net}) and {other} ({other_net}) overlap"


def _quantity(value: str) -> int:
    return int(value[:-2]) if value.endswith("Gi") else int(value)


def kueue_quotas(cloud: Cloud, graph: Graph, cluster: dict[str, Any]) -> Problems:
    """Each team's nominal GPUs add up to its ask per GPU model; CPU, memory and EFA devices are those of the nodes
    the team's GPUs fill (GPUs / GPUs per node x the row's vCPUs, GiB, EFA interfaces)."""
    pools = {p["name"]: p for p in cluster["node_pools"]}
    nominal: dict[str, int] = {}  # GPUs every team's quota takes from each pool (flavor)
    for team in cluster.get("addons", {}).get("kueue_teams", []):
        queue = _one(graph, CLUSTER_QUEUE, f"{cluster['name']}-addons-clusterqueue-{team['name']}")
        if queue is None:
            yield f"{cluster['name']}: no ClusterQueue for team {team['name']}"
            continue
        got: dict[str, int] = {}
        for flavor in queue.inputs["spec"]["resourceGroups"][0]["flavors"]:
            m = machine_of(cloud, pools[flavor["name"]])
            quota = {r["name"]: _quantity(r["nominalQuota"]) for r in flavor["resources"]}
            gpus = quota.get(GPU, 0)
            got[m.gpu] = got.get(m.gpu, 0) + gpus
            nominal[flavor["name"]] = nominal.get(flavor["name"], 0) + gpus
            nodes = gpus / m.gpus
            want = {"cpu": int(nodes * m.vcpus), "memory": int(nodes * m.memory_gib)}
            if fabric(cloud, pools[flavor["name"]]) is Fabric.EFA:
                want[EFA] = int(nodes * m.efa_interfaces)
            for resource, amount in want.items():
                if quota.get(resource) != amount:
                    yield f"team {team['name']} flavor {flavor['name']}: {resource} {quota.get(resource)} != " \
                          f"{amount} for {gpus} GPUs of {m.name}"
            borrowing = [r.get("borrowingLimit") for r in flavor["resources"] if r["name"] == GPU]
            if team.get("borrowing_limit_gpus") is not None and borrowing != [str(team["borrowing_limit_gpus"])]:
                yield f"team {team['name']} flavor {flavor['name']}: GPU borrowingLimit {borrowing}"
        want_gpus = {gpu: n for gpu, n in team["gpus"].items()}
        if {k: v for k, v in got.items() if v} != want_gpus:
            yield f"team {team['name']}: nominal GPUs {got} != asked {want_gpus}"
    for name, gpus in nominal.items():  # quotas a pool cannot hold are never admitted
        supply = pools[name]["nodes"]["max"] * machine_of(cloud, pools[name]).gpus
        if gpus > supply:
            yield f"{cluster['name']}: teams' nominal quotas take {gpus} GPUs from pool {name}, which has {supply}"
