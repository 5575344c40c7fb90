"""Scheduling from the spec: Kueue with one ResourceFlavor per GPU pool (its labels, tolerations and the cloud's
network Topology), one ClusterQueue per team with its nominal GPU quota in a shared cohort, a LocalQueue in each
team's namespace, PriorityClasses, and preemption within the cohort."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import yaml

from components.catalog import Fabric
from components.fleet import Cluster, Pool
from components.k8s import charts, upstream
from components.k8s.model import Manifest, Obj, Release, Rendered, namespace, obj, yaml_text
from components.k8s.nvidia import RDMA_HCA_MAX, RDMA_RESOURCE
from components.k8s.scheduling import POOL_LABEL, TOPOLOGY_LABELS, tolerations
from components.spec import KueueTeam

NAMESPACE = "kueue-system"
API = "kueue.x-k8s.io/v1beta2"  # the storage version of every Kueue kind from 0.16 on (v1beta1 still served in 0.19)
TOPOLOGY = "gpu-network"
GPU = "nvidia.com/gpu"
# Extra device resources a fabric's pods ask for, and how many a node has (from the catalogue row).
# A resource a pod asks for that no ClusterQueue covers makes the workload inadmissible, so the shared InfiniBand
# device is covered too, with as many per node as the RDMA plugin advertises.
FABRIC_RESOURCES = {Fabric.EFA: ("vpc.amazonaws.com/efa", lambda p: p.machine.efa_interfaces),
                    Fabric.INFINIBAND: (f"rdma/{RDMA_RESOURCE}", lambda p: RDMA_HCA_MAX)}


@dataclass(frozen=True)
class Priority:
    name: str
    value: int
    description: str
    preempts: bool = True


PRIORITIES = (
    Priority("production-training", 100000, "Production training runs: preempt lower priorities in the cohort."),
    Priority("experiment", 10000, "Experiments: the default for research work."),
    Priority("preemptible", 1000, "Opportunistic work that yields to anything else and never preempts.", False),
)
BORROW_BELOW = PRIORITIES[1].value  # borrowed capacity may be reclaimed from work at or below experiment priority


MANAGER_CONFIG = "managerConfig.controllerManagerConfigYaml"  # the chart's whole Configuration, as one string
# All-or-nothing beyond quota: a gang whose pods are not all Ready within the timeout is evicted and requeued (its
# quota freed) instead of holding GPUs half-started. 30 minutes, not Kueue's 5: first pulls of GPU training images
# (tens of GB) and NCCL plugin installs take longer. No blockAdmission: other gangs are admitted meanwhile (TAS
# places each on free nodes, so they do not deadlock each other). In config v1beta2 the section's presence turns it
# on (v1beta1's `enable` is gone).
WAIT_FOR_PODS_READY = {"timeout": "30m", "blockAdmission": False}


def constant(path: str, name: str) -> str:
    """A constant of Kueue's Go source at the pin, from its digest (a label, annotation or controller name)."""
    return str(upstream.digest(charts.KUEUE.pin)["constants"][path][name])


def manager_config(frameworks: list[str], extra: Obj | None = None) -> str:
    """The chart's default Configuration (recorded in the pin's digest) with exactly these integrations on (Kueue
    manages the kinds the cluster runs), waitForPodsReady on, and ``extra`` sections (a MultiKueue manager's)."""
    config = dict(_chart_config())  # only top-level keys are set below: the parsed defaults stay as recorded
    config.update(extra or {})
    config["integrations"] = {**config.get("integrations", {}), "frameworks": frameworks}
    config["waitForPodsReady"] = WAIT_FOR_PODS_READY
    # quota use and nominal quota per ClusterQueue (kueue_cluster_queue_resource_usage / _nominal_quota): the
    # queues dashboard reads them, and Kueue publishes them only with this on (off in the chart's default)
    config["metrics"] = {**config.get("metrics", {}), "enableClusterQueueResources": True}
    return yaml_text([config])


@cache
def _chart_config() -> Obj:
    """The chart's default manager Configuration, parsed once per process (every cluster's Kueue starts from it)."""
    return dict(yaml.safe_load(upstream.digest(charts.KUEUE.pin)["chart"]["defaults"][MANAGER_CONFIG]))


def manager_image() -> dict[str, str]:
    """The controller image the released chart package runs (stamped by Kueue's hack/helm-chart-package.sh; the
    values.yaml in git names a staging image): set explicitly, so the preview shows it and a test holds it."""
    stamped = upstream.digest(charts.KUEUE.pin)["chart_package"]
    prefix = "controllerManager.manager.image."
    return {key.removeprefix(prefix): value for key, value in stamped.items() if key.startswith(prefix)}


def kueue_release(monitoring: bool, frameworks: list[str], after: tuple[str, ...] = (),
                  extra: Obj | None = None) -> Release:
    """Kueue with the given integrations, after the releases whose CRDs those integrations watch. TAS needs no gate:
    TopologyAwareScheduling is Beta and on by default from 0.14 (pkg/features/kube_features.go)."""
    return Release("kueue", charts.KUEUE, NAMESPACE, {
        "enablePrometheus": monitoring,
        "controllerManager": {"manager": {"image": manager_image()}},
        "managerConfig": {"controllerManagerConfigYaml": manager_config(frameworks, extra)}},
        after=(*(("kube-prometheus-stack",) if monitoring else ()), *after))


def topology(cluster: Cluster) -> Manifest:
    levels = [{"nodeLabel": label} for label in TOPOLOGY_LABELS[cluster.cloud]]
    return Manifest(obj(API, "Topology", TOPOLOGY, spec={"levels": levels}), after=("kueue",))


def flavor(cluster: Cluster, pool: Pool) -> Manifest:
    """Pods admitted to this flavor get the pool's node label and tolerations; interconnect pools use the Topology
    so a gang lands in one network domain."""
    spec: Obj = {"nodeLabels": {POOL_LABEL: pool.name},
                 "tolerations": tolerations(cluster.cloud, [pool], admitted_work=True)}
    if pool.fabric is not Fabric.NONE:
        spec["topologyName"] = TOPOLOGY
    return Manifest(obj(API, "ResourceFlavor", pool.name, spec=spec), after=("kueue",))


def gpu_shares(cluster: Cluster) -> dict[str, dict[str, int]]:
    """team -> pool -> nominal GPUs: each team's quota per GPU model laid over that model's pools in order, never
    more than a pool holds (validate.py guarantees the pools hold every team's quota)."""
    free = {p.name: p.max_gpus for p in cluster.pools}
    shares: dict[str, dict[str, int]] = {}
    for team in cluster.spec.addons.kueue_teams:
        mine = shares.setdefault(team.name, {p.name: 0 for p in cluster.pools})
        for gpu, wanted in team.gpus.items():
            for pool in (p for p in cluster.pools if p.machine.gpu == gpu):
                take = min(wanted, free[pool.name])
                mine[pool.name] += take
                free[pool.name] -= take
                wanted -= take
    return shares


def covered_resources(cluster: Cluster) -> list[str]:
    extra = sorted({FABRIC_RESOURCES[p.fabric][0] for p in cluster.pools if p.fabric in FABRIC_RESOURCES})
    return ["cpu", "memory", GPU, *extra]


def quota_amounts(pool: Pool, gpus: int) -> dict[str, int]:
    """GPUs as given; CPU, memory (GiB) and fabric devices of the nodes those GPUs fill."""
    nodes = gpus / pool.machine.gpus
    amounts = {"cpu": int(nodes * pool.machine.vcpus), "memory": int(nodes * pool.machine.memory_gib), GPU: gpus}
    if pool.fabric in FABRIC_RESOURCES:
        resource, per_node = FABRIC_RESOURCES[pool.fabric]
        amounts[resource] = int(nodes * per_node(pool))
    return amounts


def quantity(resource: str, amount: int) -> str:
    return f"{amount}Gi" if resource == "memory" else str(amount)


def _flavor_quota(pool: Pool, gpus: int, team: KueueTeam, covered: list[str]) -> Obj:
    """The team's quota in one pool (``quota_amounts``), each covered resource named."""
    amounts = quota_amounts(pool, gpus)
    resources = []
    for name in covered:
        entry: Obj = {"name": name, "nominalQuota": quantity(name, amounts.get(name, 0))}
        if name == GPU and team.borrowing_limit_gpus is not None:
            entry["borrowingLimit"] = str(team.borrowing_limit_gpus)
        resources.append(entry)
    return {"name": pool.name, "resources": resources}


def cluster_queue(cluster: Cluster, team: KueueTeam, shares: dict[str, int]) -> Manifest:
    covered = covered_resources(cluster)
    return Manifest(obj(API, "ClusterQueue", team.name, spec={
        "cohortName": cluster.name,
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": team.name}},
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": [{"coveredResources": covered,
                            "flavors": [_flavor_quota(p, shares[p.name], team, covered) for p in cluster.pools]}],
        "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority",
                       "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": BORROW_BELOW}},
    }), after=("kueue",))


def team_namespaces(cluster: Cluster) -> list[str]:
    return [t.name for t in cluster.spec.addons.kueue_teams]


def priority_classes() -> list[Manifest]:
    return [Manifest(obj("scheduling.k8s.io/v1", "PriorityClass", p.name, value=p.value, globalDefault=False,
                         description=p.description,
                         preemptionPolicy="PreemptLowerPriority" if p.preempts else "Never"))
            for p in PRIORITIES]


def kueue(cluster: Cluster, monitoring: bool, frameworks: list[str], after: tuple[str, ...] = ()) -> Rendered:
    teams = cluster.spec.addons.kueue_teams
    if not cluster.pools:
        return Rendered()
    shares = gpu_shares(cluster)
    out = Rendered(releases=[kueue_release(monitoring, frameworks, after)],
                   manifests=[namespace(NAMESPACE), *priority_classes()])
    if any(p.fabric is not Fabric.NONE for p in cluster.pools):
        out.manifests.append(topology(cluster))
    out.manifests += [flavor(cluster, p) for p in cluster.pools]
    for team in teams:
        out.manifests += [
            namespace(team.name, {"gpufleet.io/team": team.name}),
            cluster_queue(cluster, team, shares[team.name]),
            Manifest(obj(API, "LocalQueue", team.name, team.name, spec={"clusterQueue": team.name}),
                     after=("kueue",)),
        ]
    return out
