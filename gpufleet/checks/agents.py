"""Every node agent that must run on a cluster's GPU nodes, with where it may run, from a previewed graph: the
DaemonSets rendered here, those a Helm chart renders from our values, those an operator creates at run time from
our custom resources (their manifests' facts derived from the pinned release artefacts), and the manifest files
applied as their maintainers ship them. ``problems`` says which agent would not be scheduled on which GPU node, as
kube-scheduler's filter predicates decide (gpufleet/checks/scheduling.py).

Chart DaemonSets: the values paths each chart's DaemonSet template reads for its tolerations, node selector and
node affinity, and what the template adds itself, are read from the template at the pinned chart version (cited
per entry in ``CHART_AGENTS``); our release's values supply the rest, so a value we do not set falls back to the
chart's default, which is listed there too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from components.catalog import Fabric
from components.fleet import Cluster
from components.k8s import upstream
from gpufleet.checks.nodes import gpu_nodes, operator_labels
from gpufleet.checks.scheduling import DAEMON_TOLERATIONS, Placement, fits, why_not
from gpufleet.engine.capture import Graph

Obj = dict[str, Any]
DAEMONSET = "kubernetes:apps/v1:DaemonSet"
RELEASE = "kubernetes:helm.sh/v3:Release"
CONFIG_FILE = "kubernetes:yaml/v2:ConfigFile"
SNR_CONFIG = "kubernetes:self-node-remediation.medik8s.io/v1alpha1:SelfNodeRemediationConfig"
NIC_POLICY = "kubernetes:mellanox.com/v1alpha1:NicClusterPolicy"


@dataclass(frozen=True)
class Agent:
    """A DaemonSet that must run on ``pools`` (every GPU pool unless it serves a fabric's pools only). An agent of
    a group (``group``: e.g. the Azure Lustre node plugin's jammy and noble DaemonSets) is satisfied on a node when
    any DaemonSet of its group fits there."""

    placement: Placement
    pools: tuple[str, ...]
    source: str  # rendered / chart <release> / operator <what> / file <url>
    group: str = ""


def _all(cluster: Cluster) -> tuple[str, ...]:
    return tuple(p.name for p in cluster.pools)


def _of(cluster: Cluster, fabric: Fabric) -> tuple[str, ...]:
    return tuple(p.name for p in cluster.pools if p.fabric is fabric)


def _at(values: Obj, path: str) -> Any:
    for key in path.split("."):
        values = values.get(key) if isinstance(values, dict) else None  # type: ignore[assignment]
    return values


def _resources(graph: Graph, cluster: Cluster, rtype: str) -> list[Any]:
    return [r for r in graph.resources if r.type == rtype and r.name.startswith(f"{cluster.name}-addons-")]


def rendered(graph: Graph, cluster: Cluster) -> list[Agent]:
    """The DaemonSets this layer renders itself: each is meant for the pools its own node affinity names, so it must
    at least run on each of those (and a DaemonSet naming no pool must run on every GPU pool)."""
    out = []
    for r in _resources(graph, cluster, DAEMONSET):
        spec = r.inputs["spec"]["template"]["spec"]
        named = {v for term in (Placement.of("", spec).terms) for e in term.get("matchExpressions", [])
                 if e["key"] == "gpufleet.io/pool" and e["operator"] == "In" for v in e["values"]}
        pools = tuple(p for p in _all(cluster) if not named or p in named)
        out.append(Agent(Placement.of(r.inputs["metadata"]["name"], spec, daemon=True), pools, f"rendered {r.name}"))
    return out


@dataclass(frozen=True)
class ChartAgent:
    """A chart's DaemonSet: the values paths its template reads (None: the template reads none) and what it adds."""

    release: str
    name: str
    tolerations: str | None
    node_selector: str | None
    affinity: str | None
    defaults: Obj  # the chart's values.yaml defaults for those paths, where our values may leave them unset
    added: Callable[[Obj], Obj]  # values -> {tolerations, nodeSelector, terms} the template adds itself
    pools: Callable[[Cluster], tuple[str, ...]]


def _efa_added(values: Obj) -> Obj:
    # stable/aws-efa-k8s-device-plugin/templates/daemonset.yaml (eks-charts bfe91c4): a CriticalAddonsOnly
    # toleration before .Values.tolerations; one required term per supportedInstanceLabels key (In its values) with
    # eks.amazonaws.com/compute-type NotIn [auto]. Our values do not set supportedInstanceLabels: the digest's defaults.
    supported = upstream.digest("aws-efa-k8s-device-plugin")["chart"]["defaults"]
    terms = [{"matchExpressions": [
        {"key": key, "operator": "In", "values": supported["supportedInstanceLabels.values"]},
        {"key": "eks.amazonaws.com/compute-type", "operator": "NotIn", "values": ["auto"]}]}
        for key in supported["supportedInstanceLabels.keys"]]
    return {"tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}], "terms": terms}


def _fsx_added(values: Obj) -> Obj:
    # charts/aws-fsx-csi-driver/templates/node-daemonset.yaml (helm-chart-aws-fsx-csi-driver-1.11.0): nodeSelector
    # kubernetes.io/os: linux before .Values.node.nodeSelector; tolerations `- operator: Exists` when
    # node.tolerateAllTaints, else .Values.node.tolerations and fsx.csi.aws.com/agent-not-ready
    if _at(values, "node.tolerateAllTaints"):
        return {"nodeSelector": {"kubernetes.io/os": "linux"}, "tolerations": [{"operator": "Exists"}],
                "replace_tolerations": True}
    return {"nodeSelector": {"kubernetes.io/os": "linux"},
            "tolerations": [{"key": "fsx.csi.aws.com/agent-not-ready", "operator": "Exists"}]}


def _node_exporter_added(values: Obj) -> Obj:
    # charts/prometheus-node-exporter/templates/_helpers.tpl defaultAffinity (4.47.3): required NotIn terms on
    # eks.amazonaws.com/compute-type [fargate] and type [virtual-kubelet], merged with .Values.affinity
    return {"terms": [{"matchExpressions": [
        {"key": "eks.amazonaws.com/compute-type", "operator": "NotIn", "values": ["fargate"]},
        {"key": "type", "operator": "NotIn", "values": ["virtual-kubelet"]}]}]}


CHART_AGENTS = (
    # charts/node-feature-discovery/templates/worker.yaml vendored in gpu-operator v25.3.2: .Values.worker.*
    ChartAgent("gpu-operator", "node-feature-discovery-worker", "node-feature-discovery.worker.tolerations",
               "node-feature-discovery.worker.nodeSelector", "node-feature-discovery.worker.affinity", {},
               lambda v: {}, _all),
    ChartAgent("efa-device-plugin", "aws-efa-k8s-device-plugin", "tolerations", "nodeSelector", None, {},
               _efa_added, lambda c: _of(c, Fabric.EFA)),
    ChartAgent("lustre-csi", "fsx-csi-node", "node.tolerations", "node.nodeSelector", "node.affinity", {},
               _fsx_added, _all),
    # prometheus-node-exporter 4.47.3 values.yaml: tolerations [{effect: NoSchedule, operator: Exists}],
    # nodeSelector {kubernetes.io/os: linux}; templates/daemonset.yaml reads .Values.tolerations / .nodeSelector
    ChartAgent("kube-prometheus-stack", "node-exporter", "prometheus-node-exporter.tolerations",
               "prometheus-node-exporter.nodeSelector", "prometheus-node-exporter.affinity",
               {"prometheus-node-exporter.tolerations": [{"effect": "NoSchedule", "operator": "Exists"}],
                "prometheus-node-exporter.nodeSelector": {"kubernetes.io/os": "linux"}},
               _node_exporter_added, _all),
)


def _terms(affinity: Any) -> list[Obj]:
    required = ((affinity or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    return list((required or {}).get("nodeSelectorTerms") or [])


def _and_terms(a: list[Obj], b: list[Obj]) -> tuple[Obj, ...]:
    """Two sets of required terms that must both hold, as one set (each pair's requirements joined)."""
    if not a or not b:
        return tuple(a or b)
    return tuple({"matchExpressions": [*x.get("matchExpressions", []), *y.get("matchExpressions", [])]}
                 for x in a for y in b)


def _value(chart: ChartAgent, values: Obj, path: str | None, empty: Any) -> Any:
    """Our release's value at ``path``, else the chart's default, else ``empty`` (the template reads nothing)."""
    if path is None:
        return empty
    found = _at(values, path)
    return chart.defaults.get(path, empty) if found is None else found


def charts(graph: Graph, cluster: Cluster) -> list[Agent]:
    releases = {r.inputs["name"]: r.inputs.get("values") or {} for r in _resources(graph, cluster, RELEASE)}
    out = []
    for chart in CHART_AGENTS:
        if chart.release not in releases or not chart.pools(cluster):
            continue
        values = releases[chart.release]
        added = chart.added(values)
        tolerations = added.get("tolerations", []) if added.get("replace_tolerations") else [
            *added.get("tolerations", []), *_value(chart, values, chart.tolerations, [])]
        placement = Placement(chart.name, (*tolerations, *DAEMON_TOLERATIONS),
                              {**added.get("nodeSelector", {}), **_value(chart, values, chart.node_selector, {})},
                              _and_terms(added.get("terms", []), _terms(_value(chart, values, chart.affinity, {}))))
        out.append(Agent(placement, chart.pools(cluster), f"chart {chart.release}"))
    return out


# GPU operator operands (gpu-operator digest manifests): which values switch each on; GKE keeps its own device plugin
OPERANDS = {"device-plugin": "devicePlugin.enabled", "dcgm-exporter": "dcgmExporter.enabled", "dcgm": "dcgm.enabled",
            "container-toolkit": "toolkit.enabled", "operator-validator": None, "gpu-feature-discovery": None}


def gpu_operands(graph: Graph, cluster: Cluster) -> tuple[list[Agent], dict[str, str]]:
    """The operand DaemonSets the GPU operator creates from its ClusterPolicy (the chart's values): the asset's node
    selector (the nvidia.com/gpu.deploy.<operand> label the operator puts on GPU nodes NFD found) and the values'
    ``daemonsets.tolerations``, which replace the asset's when set (controllers/object_controls.go
    applyCommonDaemonsetConfig at v25.3.2); and the labels the operator adds to a GPU node."""
    releases = {r.inputs["name"]: r.inputs.get("values") or {} for r in _resources(graph, cluster, RELEASE)}
    if "gpu-operator" not in releases:
        return [], {}
    values = releases["gpu-operator"]
    ours = _at(values, "daemonsets.tolerations") or []
    out, labels = [], {}
    for key, switch in OPERANDS.items():
        [facts] = upstream.manifest("gpu-operator", key)["workloads"]
        labels.update(facts["nodeSelector"])
        on = switch is None or _at(values, switch) is not False  # an operand unset in our values runs (chart default)
        if on:
            tolerations = ours or facts["tolerations"]
            out.append(Agent(Placement(facts["name"], (*tolerations, *DAEMON_TOLERATIONS), facts["nodeSelector"],
                                       tuple(facts["nodeSelectorTerms"])),
                             _all(cluster), f"operator gpu-operator {key}"))
    return out, labels


def nic_operands(graph: Graph, cluster: Cluster) -> list[Agent]:
    """The network operator's driver and RDMA shared device plugin DaemonSets take the NicClusterPolicy's
    nodeAffinity and tolerations (mellanox.com/v1alpha1 NicClusterPolicySpec)."""
    out = []
    for r in _resources(graph, cluster, NIC_POLICY):
        spec = r.inputs["spec"]
        for part in ("ofedDriver", "rdmaSharedDevicePlugin"):
            if part in spec:
                placement = Placement(f"nic-{part}", (*spec.get("tolerations", []), *DAEMON_TOLERATIONS), {},
                                      tuple(_terms({"nodeAffinity": spec.get("nodeAffinity")})))
                out.append(Agent(placement, _of(cluster, Fabric.INFINIBAND), f"operator network-operator {part}"))
    return out


def snr_agent(graph: Graph, cluster: Cluster) -> list[Agent]:
    """SNR's agent: the DaemonSet the operator renders (install/self-node-remediation-deamonset.yaml at the pin) with
    its config's customDsTolerations appended (updateDsTolerations)."""
    configs = _resources(graph, cluster, SNR_CONFIG)
    if not configs:
        return []
    [config] = configs
    [facts] = upstream.manifest("self-node-remediation", "agent")["workloads"]
    tolerations = (*facts["tolerations"], *config.inputs["spec"].get("customDsTolerations", []), *DAEMON_TOLERATIONS)
    return [Agent(Placement(facts["name"], tolerations, facts["nodeSelector"], tuple(facts["nodeSelectorTerms"])),
                  _all(cluster), "operator self-node-remediation")]


def files(graph: Graph, cluster: Cluster) -> list[Agent]:
    """DaemonSets of the upstream manifest files the cluster applies as their maintainers ship them (placement as
    the pinned file has it): the Azure Lustre CSI node plugin's jammy and noble DaemonSets, one group."""
    by_url = {row["raw"] + path: (name, key) for name, row in upstream.pins().items() if row.get("raw")
              for key, path in (row.get("manifests") or {}).items()}
    out = []
    for r in _resources(graph, cluster, CONFIG_FILE):
        if r.inputs.get("file") not in by_url:
            continue
        pin, key = by_url[r.inputs["file"]]
        for facts in upstream.manifest(pin, key).get("workloads", []):
            if facts["kind"] == "DaemonSet" and pin == "azurelustre-csi-driver":
                out.append(Agent(Placement(facts["name"], (*facts["tolerations"], *DAEMON_TOLERATIONS),
                                           facts["nodeSelector"], tuple(facts["nodeSelectorTerms"])),
                                 _all(cluster), f"file {r.inputs['file']}", group="azure-lustre-csi-node"))
    return out


def node_agents(graph: Graph, cluster: Cluster) -> tuple[list[Agent], dict[str, str]]:
    """Every agent that must run on the cluster's GPU nodes, and the labels operators add to those nodes."""
    operands, labels = gpu_operands(graph, cluster)
    return [*rendered(graph, cluster), *charts(graph, cluster), *operands, *nic_operands(graph, cluster),
            *snr_agent(graph, cluster), *files(graph, cluster)], labels


def problems(graph: Graph, cluster: Cluster) -> list[str]:
    """'<cluster>/<pool>: <agent> (<source>) would not run on its GPU nodes: <why>' for every agent a node lacks.
    The GPU operator labels a node only where NFD's worker runs, so its operands need that first."""
    if not cluster.pools:
        return []
    agents, labels = node_agents(graph, cluster)
    nfd = [a for a in agents if a.placement.name == "node-feature-discovery-worker"]
    out: list[str] = []
    for node in gpu_nodes(graph, cluster):
        seen = operator_labels(node, labels) if nfd and all(fits(a.placement, node) for a in nfd) else node
        groups: dict[str, list[Agent]] = {}
        for agent in agents:
            if node.pool in agent.pools:
                groups.setdefault(agent.group or agent.source + agent.placement.name, []).append(agent)
        for group in groups.values():
            if not any(fits(a.placement, seen) for a in group):
                a = group[0]
                why = "; ".join(why_not(a.placement, seen))
                out.append(f"{cluster.name}/{node.pool}: {a.placement.name} ({a.source}) would not run on its GPU "
                           f"nodes ({seen.labels.get('kubernetes.azure.com/os-sku-effective', node.name)}): {why}")
    return out


def fleet_problems(graph: Graph, clusters: tuple[Cluster, ...]) -> list[str]:
    return [p for cluster in clusters for p in problems(graph, cluster)]


