"""GPU correctness, judged against the catalogue (components.catalog): machine types, EFA interfaces, GPU NICs
and accelerators, interconnect placement, one owner of the NVIDIA driver, GPU taints, one zone per pool."""

from __future__ import annotations

from collections.abc import Iterable

from components.catalog import Fabric, by_name
from policies.props import (
    AKS_AGENT_POOL,
    CLUSTERS,
    EKS_NODE_GROUP,
    FABRIC_LABEL,
    GKE_NODE_POOL,
    GPU_TAINT,
    LAUNCH_TEMPLATE,
    NODE_POOLS,
    PLACEMENT_GROUP,
    NodePool,
    get,
    items,
    must_pool,
    records,
    truthy,
)
from policies.rule import MANDATORY, Config, Node, Stack, combine, resource_checks, resource_policy, stack_policy

OPERATOR_CHARTS = ("kubernetes:helm.sh/v3:Release", "kubernetes:helm.sh/v4:Chart")


def _pool(r: Node) -> NodePool:
    return must_pool(r.type, r.props)


def in_catalog(r: Node, config: Config) -> Iterable[str]:
    pool = _pool(r)
    if not pool.machine_types:
        yield "names no machine type"
    for name in pool.machine_types:
        if by_name(pool.cloud, name) is None:
            yield f"machine type {name!r} is not in the {pool.cloud.title} catalogue (components/data/" \
                  "machine_types.csv): its GPUs, fabric and quota are unknown, so nothing else can be checked"


def _efa_problems(nics: list, expected: int) -> list[str]:
    efa = [n for n in nics if n.get("interfaceType") in ("efa", "efa-only")]
    cards = sorted(int(n.get("networkCardIndex", 0)) for n in efa)
    problems = []
    if len(efa) != expected:
        problems.append(f"{len(efa)} EFA interfaces, the catalogue says {expected}")
    if cards != list(range(len(efa))):
        problems.append(f"EFA interfaces on network cards {cards}, want one on each of cards 0..{expected - 1}")
    primary = [n for n in efa if int(n.get("networkCardIndex", 0)) == 0 and int(n.get("deviceIndex", 0)) == 0]
    if efa and (not primary or primary[0].get("interfaceType") != "efa"):
        problems.append("card 0 / device 0 must be interfaceType 'efa' (it carries the node's IP traffic)")
    return problems


def efa_match(stack: Stack, config: Config) -> Iterable[tuple[str, Node]]:
    """A launch template does not name the instance type: the node group that uses it does."""
    for group in stack.of_type(EKS_NODE_GROUP):
        pool, machine = _pool(group), _pool(group).machine
        if machine is None:
            continue
        for template in stack.depends_on(group, LAUNCH_TEMPLATE):
            nics = records(get(template.props, "networkInterfaces"))
            has_efa = any(n.get("interfaceType") in ("efa", "efa-only") for n in nics)
            if pool.wants_interconnect and machine.fabric is Fabric.EFA:
                for problem in _efa_problems(nics, machine.efa_interfaces):
                    yield f"node group {group.name} runs {machine.name}: {problem}", template
            elif has_efa and machine.efa_interfaces == 0:
                yield f"node group {group.name} runs {machine.name}, which has no EFA, but the template asks " \
                      "for EFA interfaces", template


def _gke_gpu_nics(r: Node, config: Config) -> Iterable[str]:
    """TCPX / TCPXO: one additional network per GPU NIC. RDMA (A3 Ultra, A4): the GPU NICs' RDMA subnets plus
    the second gVNIC's network."""
    pool, machine = _pool(r), _pool(r).machine
    if machine is None or not machine.gpu_nics or not pool.wants_interconnect:
        return
    rdma = machine.fabric is Fabric.RDMA
    want = machine.gpu_nics + (1 if rdma else 0)
    extra = items(get(r.props, "networkConfig.additionalNodeNetworkConfigs"))
    if len(extra) != want:
        why = f"{machine.gpu_nics} GPU NICs" + (" plus the second gVNIC" if rdma else "")
        yield f"{machine.name} ({machine.fabric.value}) needs {want} additional node networks ({why}); " \
              f"networkConfig.additionalNodeNetworkConfigs has {len(extra)}"


def gke_accelerators(r: Node, config: Config) -> Iterable[str]:
    machine = _pool(r).machine
    if machine is None or not machine.gpus:
        return
    for acc in records(get(r.props, "nodeConfig.guestAccelerators")):
        if acc.get("type") != machine.accelerator_type or int(acc.get("count", 0)) != machine.gpus:
            yield f"guest accelerator {int(acc.get('count', 0))} x {acc.get('type')} does not match {machine.name}: " \
                  f"{machine.gpus} x {machine.accelerator_type}"


def _aws_placement(stack: Stack, config: Config) -> Iterable[tuple[str, Node]]:
    for group in stack.of_type(EKS_NODE_GROUP):
        pool = _pool(group)
        if not pool.wants_interconnect or pool.max_nodes < 2:
            continue
        for template in stack.depends_on(group, LAUNCH_TEMPLATE):
            if get(template.props, "instanceMarketOptions.marketType") == "capacity-block":
                continue  # a capacity block is one UltraCluster placement already
            groups = stack.depends_on(template, PLACEMENT_GROUP)
            if not get(template.props, "placement.groupName") or not groups:
                yield f"node group {group.name} ({pool.machine_types[0]}, up to {pool.max_nodes} nodes) is not in a " \
                      "cluster placement group: EFA traffic then crosses spine switches", template
            elif any(g.props.get("strategy") != "cluster" for g in groups):
                yield f"node group {group.name}: placement group strategy must be 'cluster'", template


def _gke_aks_placement(r: Node, config: Config) -> Iterable[str]:
    pool = _pool(r)
    machine = pool.machine
    if r.type == AKS_AGENT_POOL and pool.labels.get(FABRIC_LABEL) == Fabric.INFINIBAND.value \
            and (machine is None or machine.fabric is not Fabric.INFINIBAND):
        yield f"labelled for InfiniBand but {', '.join(pool.machine_types) or 'no size'} is not an " \
              "InfiniBand-capable size"
    if r.type != GKE_NODE_POOL or not pool.wants_interconnect or pool.max_nodes < 2:
        return
    compact = get(r.props, "placementPolicy.type") == "COMPACT"
    reserved = get(r.props, "nodeConfig.reservationAffinity.consumeReservationType") == "SPECIFIC_RESERVATION"
    queued = truthy(get(r.props, "queuedProvisioning.enabled")) or truthy(get(r.props, "nodeConfig.flexStart"))
    if not (compact or reserved or queued):
        yield f"{pool.machine_types[0]} pool of up to {pool.max_nodes} nodes has no compact placement " \
              "(placementPolicy.type: COMPACT), specific reservation or queued provisioning"


def _cloud_installs_driver(r: Node) -> bool:
    if r.type == EKS_NODE_GROUP:
        ami = str(get(r.props, "amiType", ""))
        return "NVIDIA" in ami or "GPU" in ami
    if r.type == GKE_NODE_POOL:
        versions = [get(a, "gpuDriverInstallationConfig.gpuDriverVersion", "DEFAULT")
                    for a in items(get(r.props, "nodeConfig.guestAccelerators"))] or ["DEFAULT"]
        return any(v != "INSTALLATION_DISABLED" for v in versions)
    return get(r.props, "gpuProfile.driver", "Install") != "None"


def _clusters(stack: Stack, node: Node) -> set[str]:
    return {c.urn for c in stack.depends_on(node, *CLUSTERS)}


def _operator_scopes(stack: Stack) -> list[set[str]]:
    """The clusters each driver-installing GPU operator release reaches, through its Kubernetes provider (which
    depends on its cluster). An empty set: the release's cluster cannot be told, so it counts for every pool."""
    scopes = []
    for chart in stack.of_type(*OPERATOR_CHARTS):
        if "gpu-operator" in str(get(chart.props, "chart", "")) and get(chart.props, "values.driver.enabled") \
                is not False:
            provider = stack.by_urn.get(chart.provider or "")
            scopes.append(_clusters(stack, provider) if provider is not None else set())
    return scopes


def driver_owner(stack: Stack, config: Config) -> Iterable[tuple[str, Node]]:
    """Judged per cluster: a stack may let the node image install the driver in one cluster and the GPU operator in
    another."""
    scopes = _operator_scopes(stack)
    for r in stack.of_type(*NODE_POOLS):
        if not _pool(r).is_gpu:
            continue
        clusters = _clusters(stack, r)
        operator = any(not scope or not clusters or scope & clusters for scope in scopes)
        cloud = _cloud_installs_driver(r)
        if cloud and operator:
            yield "the NVIDIA driver is installed twice: by the node image and by the GPU operator " \
                  "(set the operator's driver.enabled: false, or use a node image without the driver)", r
        elif not cloud and not operator:
            yield "no NVIDIA driver: the node image does not install it and no GPU operator does", r


def gpu_taints(r: Node, config: Config) -> Iterable[str]:
    pool = _pool(r)
    if not pool.is_gpu:
        return
    present = {key for key, effect in pool.taints if effect in ("NO_SCHEDULE", "NO_EXECUTE")}
    for key in config["required_taints"]:
        if key not in present:
            yield f"GPU pool without the {key} NoSchedule taint: CPU-only pods would land on (and block) GPU nodes"


def single_zone(r: Node, config: Config) -> Iterable[str]:
    pool = _pool(r)
    if not pool.is_gpu or pool.zones is None:
        return
    if r.type == GKE_NODE_POOL and not pool.zones:
        yield from _gke_every_zone(r)
        return
    if pool.max_nodes < 2:
        return
    allowed = (0, 1) if r.type == AKS_AGENT_POOL else (1,)
    if len(pool.zones) not in allowed:
        what = {EKS_NODE_GROUP: "subnets", GKE_NODE_POOL: "node locations"}.get(r.type, "availability zones")
        yield f"a pool of up to {pool.max_nodes} GPU nodes spans {len(pool.zones)} {what}: multi-node jobs " \
              "then pay cross-zone latency and egress; pin the pool to one zone"



def _gke_every_zone(r: Node) -> Iterable[str]:
    """No nodeLocations (or an empty list): the pool takes the cluster's node locations, every zone of a regional
    cluster ("If unspecified, the cluster-level node_locations will be used",
    https://www.pulumi.com/registry/packages/gcp/api-docs/container/nodepool/), with its node count in each zone;
    only autoscaling.totalMaxNodeCount bounds the whole pool."""
    total = get(r.props, "autoscaling.totalMaxNodeCount")
    if total is not None and float(total) < 2:
        return
    yield "sets no nodeLocations, so the pool takes every zone of its cluster, its node count in each: multi-node " \
          "jobs then pay cross-zone latency and egress; pin the pool to one zone (nodeLocations: [<zone>])"


POLICIES = [
    resource_policy("machine-type-in-catalog", "Every node pool's machine type must be a catalogue row: the "
                    "catalogue is the single source of GPU, fabric and quota facts the other checks use.",
                    MANDATORY, NODE_POOLS, in_catalog),
    stack_policy("efa-interfaces-match-catalog", "A node group's launch template must carry exactly the catalogue's "
                 "EFA interfaces for its instance type (one per network card, card 0 'efa', the rest 'efa-only'): "
                 "fewer silently cuts all-reduce bandwidth.", MANDATORY, efa_match),
    resource_policy("gpu-nics-match-catalog", "GKE pools with GPUDirect (TCPX/TCPXO/RDMA) need one additional node "
                    "network per GPU NIC in the catalogue.", MANDATORY, (GKE_NODE_POOL,), _gke_gpu_nics),
    resource_policy("gpu-accelerator-matches-catalog", "GKE guest accelerators must match the catalogue's GPU type "
                    "and count for the machine type.", MANDATORY, (GKE_NODE_POOL,), gke_accelerators),
    stack_policy("interconnect-placement", "Interconnect pools must sit in a cluster placement group / compact "
                 "placement / InfiniBand-capable size, or the fabric's bandwidth and latency are not there.",
                 MANDATORY, combine(_aws_placement, resource_checks((GKE_NODE_POOL, AKS_AGENT_POOL),
                                                                    _gke_aks_placement))),
    stack_policy("gpu-driver-single-owner", "Exactly one of the cloud's node image and the GPU operator installs "
                 "the NVIDIA driver: two drivers fight over the kernel module, none leaves GPUs unusable.",
                 MANDATORY, driver_owner),
    resource_policy("gpu-taints-present", "GPU pools must carry the GPU NoSchedule taint so only pods that ask for "
                    "GPUs land there.", MANDATORY, NODE_POOLS, gpu_taints,
                    config={"required_taints": {"type": "array", "items": {"type": "string"},
                                                "default": [GPU_TAINT],
                                                "description": "taint keys every GPU pool must carry"}}),
    resource_policy("multi-node-pool-single-zone", "Multi-node GPU pools must sit in one zone: collective traffic "
                    "across zones is slow and billed.", MANDATORY, NODE_POOLS, single_zone),
]
