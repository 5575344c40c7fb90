"""Turn one month of an accepted plan into edits of the stack files.

Per (cloud, region, GPU): the pools of each capacity type are sized to the plan's peak concurrent GPUs
(whole nodes, no more), reservations and capacity blocks the plan commits to are added as pools with a
pending id, and every team's Kueue quota follows the GPUs the plan places in that cluster. Two things are
never done silently (they are listed, and need allow_shrink): shrinking a reservation or capacity block
pool (prepaid: smaller pools save nothing and lose the capacity), and dropping a team from Kueue.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from capacity.apply import draft
from capacity.apply.carriers import RESERVED, carrier
from capacity.apply.need import EPS, Key, Need, month_needs
from capacity.apply.stackdoc import StackDoc, flow_map
from capacity.schema import CommitmentLine, PlanLine
from components import catalog
from components.catalog import Cloud, MachineType
from components.spec import PENDING_ID, CapacityType

# Reserved kinds first: GPUs they hold beyond the plan's commitments carry on-demand work before new nodes do.
SUFFIX = {CapacityType.RESERVATION: "res", CapacityType.CAPACITY_BLOCK: "cb", CapacityType.ON_DEMAND: "od",
          CapacityType.FLEX_START: "flex", CapacityType.SPOT: "spot"}


@dataclass(frozen=True)
class Edit:
    stack: str
    path: str
    before: Any
    after: Any
    why: str


@dataclass(frozen=True)
class Purchase:
    cloud: str
    region: str
    machine_type: str
    nodes: int
    what: str
    pool: str  # stack:path of the pool that carries it


@dataclass
class Proposal:
    month: str
    docs: list[StackDoc]
    edits: list[Edit] = field(default_factory=list)
    held: list[Edit] = field(default_factory=list)  # not applied: needs allow_shrink
    purchases: list[Purchase] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def net_edits(self) -> list[Edit]:
        """One line per (stack, path): the first value before, the last after; changes that cancel out go."""
        first: dict[tuple[str, str], Edit] = {}
        for e in self.edits:
            key = (e.stack, e.path)
            first[key] = Edit(e.stack, e.path, first[key].before if key in first else e.before, e.after, e.why)
        return sorted((e for e in first.values() if e.before != e.after), key=lambda e: e.stack)

    def changed(self) -> list[StackDoc]:
        return [d for d in self.docs if d.draft or d.dump() != d.text]

    def problems(self) -> list[str]:
        return [p for d in self.changed() for p in d.revalidate()]


@dataclass
class _Pool:
    doc: StackDoc
    cluster: int
    index: int
    machine: MachineType
    capacity: CapacityType

    @property
    def node(self) -> Any:
        return self.doc.fleet_map()["clusters"][self.cluster]["node_pools"][self.index]

    @property
    def path(self) -> str:
        return f"clusters[{self.cluster}].node_pools[{self.index}]"

    @property
    def max_gpus(self) -> int:
        return int(self.node["nodes"]["max"]) * self.machine.gpus


def propose(lines: Sequence[PlanLine], commitments: Sequence[CommitmentLine], month: str, docs: list[StackDoc],
            allow_shrink: bool = False) -> Proposal:
    needs = month_needs(lines, commitments, month)
    proposal = Proposal(month, docs)
    hosts = _hosts(docs)
    for cloud, region in sorted({(k[0], k[1]) for k in needs} - set(hosts)):
        doc = draft.new_stack(docs, cloud, region, sorted(k[2] for k in needs if k[:2] == (cloud, region)), month)
        if doc is None:
            proposal.notes.append(f"{cloud} {region}: the plan runs GPUs here but no {cloud} stack exists to "
                                  "derive a draft from; add one by hand.")
            continue
        docs.append(doc)
        hosts[(cloud, region)] = [(doc, 0)]
    pools = _pools(docs)
    placed: dict[tuple[int, int], dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(dict))
    for key in sorted(set(needs) | set(pools)):
        need = needs.get(key, Need())
        host = _size(proposal, key, need, pools.get(key, []), hosts.get(key[:2], []), allow_shrink)
        for team, gpus in need.gpus_by_team.items():
            if host is not None and gpus > EPS:
                placed[(id(host[0]), host[1])][team][key[2]] = math.ceil(gpus - EPS)
    for doc in docs:
        for ci, _ in enumerate(doc.fleet_map()["clusters"]):
            _kueue(proposal, doc, ci, placed.get((id(doc), ci), {}), allow_shrink)
            _cover_quotas(proposal, doc, ci)
    return proposal


# --- where things are ----------------------------------------------------------------------------------

def _hosts(docs: list[StackDoc]) -> dict[tuple[str, str], list[tuple[StackDoc, int]]]:
    out: dict[tuple[str, str], list[tuple[StackDoc, int]]] = defaultdict(list)
    for doc in docs:
        for ci, cluster in enumerate(doc.fleet.clusters):
            out[(doc.fleet.cloud.value, cluster.spec.region)].append((doc, ci))
    return out


def _pools(docs: list[StackDoc]) -> dict[Key, list[_Pool]]:
    out: dict[Key, list[_Pool]] = defaultdict(list)
    for doc in docs:
        for ci, cluster in enumerate(doc.fleet.clusters):
            for pi, pool in enumerate(cluster.pools):
                key = (doc.fleet.cloud.value, cluster.spec.region, pool.machine.gpu)
                out[key].append(_Pool(doc, ci, pi, pool.machine, pool.capacity))
    return out


# --- pool sizes ----------------------------------------------------------------------------------------

def _size(p: Proposal, key: Key, need: Need, pools: list[_Pool], hosts: list[tuple[StackDoc, int]],
          allow_shrink: bool) -> tuple[StackDoc, int] | None:
    """Size every pool of one (cloud, region, GPU); return the cluster that hosts its work."""
    cloud = key[0]
    want: dict[CapacityType, float] = defaultdict(float)
    for option, gpus in need.gpus_by_option.items():
        want[carrier(cloud, option).capacity] += gpus
    committed: dict[CapacityType, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    what: dict[CapacityType, str] = {}
    for (machine, option, start), nodes in need.committed_nodes.items():
        c = carrier(cloud, option)
        committed[c.capacity][machine] += nodes
        what[c.capacity] = f"{c.purchase}, {option}"
        if c.purchase and c.capacity not in RESERVED:
            when = "buy now" if start == p.month else f"bought {start}"
            p.purchases.append(Purchase(cloud, key[1], machine, nodes, f"{c.purchase}, {option} ({when})",
                                        "(billing only)"))
    host = (pools[0].doc, pools[0].cluster) if pools else (hosts[0] if hosts else None)
    if host is None:
        if want:
            p.notes.append(f"{cloud} {key[1]} {key[2]}: no cluster to carry {sum(want.values()):.0f} GPUs.")
        return None
    on_demand = want.get(CapacityType.ON_DEMAND, 0.0)  # prepaid GPUs the plan leaves idle carry it first
    for ctype in sorted(set(want) | set(committed) | {x.capacity for x in pools}, key=list(SUFFIX).index):
        group = [x for x in pools if x.capacity == ctype]
        commit = committed.get(ctype, {})
        if ctype in RESERVED:
            idle = _size_reserved(p, key, ctype, want[ctype], on_demand, commit, group, host, pools, allow_shrink,
                                  what.get(ctype, ctype.value.replace("_", " ")))
            on_demand = max(on_demand - idle, 0.0)
        else:
            gpus = on_demand if ctype is CapacityType.ON_DEMAND else want[ctype]
            _size_elastic(p, key, ctype, gpus, commit, group, host, pools)
    return host


def _size_elastic(p: Proposal, key: Key, ctype: CapacityType, gpus: float, commit: dict[str, int],
                  group: list[_Pool], host: tuple[StackDoc, int], pools: list[_Pool]) -> None:
    """On-demand, spot and flex-start pools: the first (largest) carries the work, the others scale away.
    (A billing commitment, a Savings Plan or reserved instance, discounts whatever runs: it needs no minimum.)"""
    if not group:
        if gpus <= EPS:
            return
        machine = _machine(key, commit, pools)
        if machine is None:
            p.notes.append(f"{key[0]} {key[1]}: no {key[2]} machine type is offered there.")
            return
        group = [_add_pool(p, key, ctype, machine, host, 1, reserved=False)]
    ordered = sorted(group, key=lambda x: -x.max_gpus)
    nodes = math.ceil(gpus / ordered[0].machine.gpus - EPS)
    why = f"{key[2]} {ctype.value}: the plan's peak is {gpus:.1f} GPUs in {p.month}"
    _set_nodes(p, ordered[0], nodes, 0, why)
    for other in ordered[1:]:
        _set_nodes(p, other, 0, 0, f"{key[2]} {ctype.value}: {ordered[0].node['name']} carries the plan")


def _size_reserved(p: Proposal, key: Key, ctype: CapacityType, gpus: float, on_demand: float,
                   commit: dict[str, int], group: list[_Pool], host: tuple[StackDoc, int], pools: list[_Pool],
                   allow_shrink: bool, what: str) -> float:
    """Grow reservation / capacity block pools to what the plan holds; shrink them (only when allowed) to what
    the plan holds plus the on-demand work they can carry; return the GPUs they hold beyond the plan's own."""
    held = sum(x.max_gpus for x in group)
    machine = _machine(key, commit, group or pools)
    if machine is None:
        return 0.0
    required = max(gpus, sum(n * machine.gpus for n in commit.values()))
    if required > held + EPS:
        nodes = math.ceil((required - held) / machine.gpus - EPS)
        pending = [x for x in group if x.node.get("capacity", {}).get("id") == PENDING_ID]
        if pending:  # grow the pool still waiting for its purchase rather than add another
            target = pending[0]
            total = int(target.node["nodes"]["max"]) + nodes
            _set_nodes(p, target, total, total, f"{key[2]} {ctype.value}: the plan holds {required:.0f} GPUs")
        else:
            target = _add_pool(p, key, ctype, machine, host, nodes, reserved=True)
        p.purchases.append(Purchase(key[0], key[1], machine.name, nodes, f"{what} (buy now; its id replaces "
                                    f"'{PENDING_ID}')", f"{target.doc.name}:{target.path}"))
        return 0.0
    else:
        excess = held - required - on_demand
        why = (f"{key[2]} {ctype.value}: prepaid capacity the plan does not use in {p.month} "
               f"(plan {required + on_demand:.0f} GPUs, held {held})")
        for pool in reversed(group):
            current = int(pool.node["nodes"]["max"])
            cut = min(current - 1, int(excess // pool.machine.gpus))
            if cut <= 0:
                continue
            if allow_shrink:
                excess -= cut * pool.machine.gpus
                held -= cut * pool.machine.gpus
                _set_nodes(p, pool, current - cut, current - cut, why)
            else:
                p.held.append(Edit(pool.doc.name, f"{pool.path}.nodes.max", current, current - cut, why))
        return max(held - required, 0.0)


def _set_nodes(p: Proposal, pool: _Pool, nodes: int, floor: int, why: str) -> None:
    spec = pool.node["nodes"]
    new_max = max(nodes, 1)
    new_min = min(max(floor, min(int(spec.get("min", 0)), nodes)), new_max)
    _assign(p, pool.doc, spec, f"{pool.path}.nodes", "max", new_max, why)
    _assign(p, pool.doc, spec, f"{pool.path}.nodes", "min", new_min, why)
    if "desired" in spec:
        _assign(p, pool.doc, spec, f"{pool.path}.nodes", "desired", min(max(int(spec["desired"]), new_min), new_max),
                why)


def _assign(p: Proposal, doc: StackDoc, node: Any, path: str, key: str, value: Any, why: str) -> None:
    before = node.get(key)
    if before != value:
        node[key] = value
        p.edits.append(Edit(doc.name, f"{path}.{key}", before, value, why))


def _machine(key: Key, commit: dict[str, int], pools: list[_Pool]) -> MachineType | None:
    """The machine type for new capacity: the one committed to, else the key's pools', else the catalogue's
    default for the GPU offered in the region."""
    cloud = Cloud(key[0])
    for name in commit:
        found = catalog.by_name(cloud, name)
        if found:
            return found
    if pools:
        return pools[0].machine
    offered = [m for m in catalog.for_cloud(cloud) if m.gpu == key[2] and key[1] in catalog.regions(cloud, m.name)]
    return min(offered, key=lambda m: (not m.default_for_gpu, -m.gpus, m.name), default=None)


def _add_pool(p: Proposal, key: Key, ctype: CapacityType, machine: MachineType, host: tuple[StackDoc, int],
              nodes: int, reserved: bool) -> _Pool:
    doc, ci = host
    cluster = doc.fleet_map()["clusters"][ci]
    pools = cluster.setdefault("node_pools", [])
    taken = {str(x["name"]) for x in pools}
    base = f"{key[2].lower()}-{SUFFIX[ctype]}"
    name = next(n for n in (base, *(f"{base}-{i}" for i in range(2, 99))) if n not in taken)
    node: dict[str, Any] = {"name": name, "machine_type": machine.name,
                            "nodes": flow_map({"min": nodes if reserved else 0, "max": nodes})}
    if ctype is not CapacityType.ON_DEMAND:
        node["capacity"] = flow_map({"type": ctype.value, **({"id": PENDING_ID} if reserved else {})})
    zone = _zone(machine, key[1], [str(z) for z in cluster.get("zones", [])])
    if zone:
        node["zone"] = zone
    pools.append(draft.commented(node))
    pool = _Pool(doc, ci, len(pools) - 1, machine, ctype)
    p.edits.append(Edit(doc.name, pool.path, None, name, f"{key[2]} {ctype.value}: new pool, {nodes} x "
                        f"{machine.name}" + (" (buy it, then replace the pending id)" if reserved else "")))
    return pool


def _zone(machine: MachineType, region: str, zones: list[str]) -> str | None:
    offered = catalog.regions(machine.cloud, machine.name).get(region, ())
    return next((z for z in zones if z in offered), None)


# --- Kueue ---------------------------------------------------------------------------------------------

def _kueue(p: Proposal, doc: StackDoc, ci: int, placed: dict[str, dict[str, int]], allow_shrink: bool) -> None:
    cluster = doc.fleet_map()["clusters"][ci]
    gpus_here = {g for t in placed.values() for g in t} | _cluster_gpus(doc, ci)
    addons = cluster.get("addons")
    teams = addons.get("kueue_teams") if addons else None
    if not placed and not teams:
        return
    if addons is None:
        addons = cluster["addons"] = draft.commented({})
    if teams is None:
        teams = addons["kueue_teams"] = draft.commented_seq([])
    path = f"clusters[{ci}].addons.kueue_teams"
    for index, team in reversed(list(enumerate(teams))):
        name = str(team["name"])
        quotas = team["gpus"]
        wanted = {g: n for g, n in placed.get(name, {}).items()}
        kept = {g: int(n) for g, n in quotas.items() if g not in gpus_here}
        if not wanted and not kept:
            edit = Edit(doc.name, f"{path}[{index}]", name, None,
                        f"the plan places no work of team {name} in this cluster in {p.month}")
            if allow_shrink:
                del teams[index]
                p.edits.append(edit)
            else:
                p.held.append(edit)
            continue
        for gpu in [g for g in quotas if g in gpus_here and g not in wanted]:
            p.edits.append(Edit(doc.name, f"{path}[{index}].gpus.{gpu}", int(quotas[gpu]), None,
                                f"the plan places no {gpu} work of team {name} here in {p.month}"))
            del quotas[gpu]
        for gpu, n in sorted(wanted.items()):
            _assign(p, doc, quotas, f"{path}[{index}].gpus", gpu, n,
                    f"team {name}'s peak {gpu} GPUs in this cluster in {p.month}")
    known = {str(t["name"]) for t in teams}
    for name in sorted(set(placed) - known):
        teams.append(flow_map({"name": name, "gpus": flow_map(dict(sorted(placed[name].items())))}))
        p.edits.append(Edit(doc.name, f"{path}[{len(teams) - 1}]", None, name,
                            f"team {name} runs here in {p.month} (new Kueue queue)"))


def _cluster_gpus(doc: StackDoc, ci: int) -> set[str]:
    """GPUs the cluster's pools provide, including pools added by this proposal."""
    out = {pool.machine.gpu for pool in doc.fleet.clusters[ci].pools} if ci < len(doc.fleet.clusters) else set()
    for node in doc.fleet_map()["clusters"][ci].get("node_pools", []):
        machine = catalog.by_name(doc.fleet.cloud, str(node.get("machine_type", "")))
        if machine:
            out.add(machine.gpu)
    return out


def _cover_quotas(p: Proposal, doc: StackDoc, ci: int) -> None:
    """Kueue may not promise more GPUs than the pools can hold (teams held back keep their quota): grow the
    cluster's elastic pool of that GPU, or add an on-demand one, which costs nothing while it is idle."""
    cluster = doc.fleet_map()["clusters"][ci]
    asked: dict[str, int] = defaultdict(int)
    for team in (cluster.get("addons") or {}).get("kueue_teams") or []:
        for gpu, n in team["gpus"].items():
            asked[gpu] += int(n)
    pools: dict[str, list[tuple[int, Any, MachineType]]] = defaultdict(list)
    for pi, node in enumerate(cluster.get("node_pools", [])):
        machine = _node_machine(doc, ci, pi, node)
        if machine:
            pools[machine.gpu].append((pi, node, machine))
    for gpu, total in asked.items():
        have = sum(int(node["nodes"]["max"]) * m.gpus for _, node, m in pools.get(gpu, []))
        if total <= have or not pools.get(gpu):
            continue  # no pool of that GPU at all: validation names the team's unknown GPU
        why = f"team quotas in this cluster ask for {total} {gpu} GPUs"
        elastic = [(pi, node, m) for pi, node, m in pools[gpu]
                   if str((node.get("capacity") or {}).get("type", "on_demand")) not in {c.value for c in RESERVED}]
        if elastic:
            pi, node, machine = elastic[0]
            grown = int(node["nodes"]["max"]) + math.ceil((total - have) / machine.gpus)
            _assign(p, doc, node["nodes"], f"clusters[{ci}].node_pools[{pi}].nodes", "max", grown, why)
        else:
            machine = pools[gpu][0][2]
            region = str(cluster["region"])
            added = _add_pool(p, (doc.fleet.cloud.value, region, gpu), CapacityType.ON_DEMAND, machine, (doc, ci),
                              math.ceil((total - have) / machine.gpus), reserved=False)
            p.edits.append(Edit(doc.name, added.path, None, added.node["name"], why))


def _node_machine(doc: StackDoc, ci: int, pi: int, node: Any) -> MachineType | None:
    clusters = doc.fleet.clusters
    if ci < len(clusters) and pi < len(clusters[ci].pools) and clusters[ci].pools[pi].name == node["name"]:
        return clusters[ci].pools[pi].machine
    return catalog.by_name(doc.fleet.cloud, str(node.get("machine_type", "")))
