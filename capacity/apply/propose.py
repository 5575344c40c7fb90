"""Turn one month of an accepted plan into edits of the stack files.

Per (cloud, region, GPU): the pools of each capacity type are sized to the plan's peak concurrent GPUs
(whole nodes, no more), reservations and capacity blocks the plan commits to are added as pools with a
pending id, and every team's Kueue quota follows the GPUs the plan places in that cluster. Prepaid pools the
stacks already hold carry the plan's pay-per-use work before any node is added. Three things are never done
silently (they are listed, and need allow_shrink): shrinking a reservation or capacity block pool (prepaid:
smaller pools save nothing and lose the capacity), shrinking a pool of a GPU that a team the plan does not
know has Kueue quota for (the plan says nothing about that team's work), and dropping a team from Kueue. A
team absent from the plan keeps its Kueue quota untouched.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

from capacity.apply import draft
from capacity.apply.carriers import RESERVED, carrier
from capacity.apply.edits import (
    SUFFIX,
    Edit,
    Pool,
    Proposal,
    Purchase,
    add_pool,
    machine_for,
    record_plan_cost,
    set_nodes,
)
from capacity.apply.fleetqueue import fleet_queues
from capacity.apply.kueue import cover_quotas, kueue_quotas
from capacity.apply.need import EPS, Key, Need, month_cost, month_needs
from capacity.apply.stackdoc import StackDoc
from capacity.prices.table import Prices
from capacity.schema import CommitmentLine, HeldRow, PlanLine
from components.spec import PENDING_ID, CapacityType


def propose(lines: Sequence[PlanLine], commitments: Sequence[CommitmentLine], month: str, docs: list[StackDoc],
            allow_shrink: bool = False, teams: set[str] | None = None, held: Sequence[HeldRow] = (),
            prices: Prices | None = None) -> Proposal:
    """``teams``: every team the plan knows (its lines' and shortfall's); default: the teams of its lines.
    ``held``: the capacity the plan was given as already held (held.csv). ``prices``: the rates that order a fleet
    queue's workers within a tier (default: the offers snapshot)."""
    needs = month_needs(lines, commitments, month, held)
    proposal = Proposal(month, docs)
    known = teams if teams is not None else {line.team for line in lines}
    hosts = _hosts(docs)
    for cloud, region in sorted({(k[0], k[1]) for k in needs} - set(hosts)):
        doc = draft.new_stack(docs, cloud, region, sorted(k[2] for k in needs if k[:2] == (cloud, region)), month)
        if doc is None:
            proposal.notes.append(f"{cloud} {region}: the plan runs GPUs here but no {cloud} stack exists to "
                                  "derive a draft from; add one by hand.")
            continue
        docs.append(doc)
        hosts[(cloud, region)] = [(doc, 0)]
    pools = _pools(docs, known)
    placed: dict[tuple[int, int], dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(dict))
    costs, spent = month_cost(lines, commitments, month), {id(doc): 0.0 for doc in docs}
    for key in sorted(set(needs) | set(pools)):
        need = needs.get(key, Need())
        host = _size(proposal, key, need, pools.get(key, []), hosts.get(key[:2], []), allow_shrink)
        if host is not None:
            spent[id(host[0])] += costs.get(key, 0.0)
        for team, gpus in need.gpus_by_team.items():
            if host is not None and gpus > EPS:
                placed[(id(host[0]), host[1])][team][key[2]] = math.ceil(gpus - EPS)
    for doc in docs:
        record_plan_cost(proposal, doc, spent[id(doc)])
        for ci, _ in enumerate(doc.fleet_map()["clusters"]):
            if not _is_manager(doc, ci):  # a fleet queue manager's quotas follow its workers' (below)
                kueue_quotas(proposal, doc, ci, placed.get((id(doc), ci), {}), allow_shrink, known)
                cover_quotas(proposal, doc, ci)
    fleet_queues(proposal, lines, prices or Prices.load())
    return proposal


def _is_manager(doc: StackDoc, ci: int) -> bool:
    return ci < len(doc.fleet.clusters) and doc.fleet.clusters[ci].spec.is_manager


# --- where things are ----------------------------------------------------------------------------------

def _hosts(docs: list[StackDoc]) -> dict[tuple[str, str], list[tuple[StackDoc, int]]]:
    out: dict[tuple[str, str], list[tuple[StackDoc, int]]] = defaultdict(list)
    for doc in docs:
        for ci, cluster in enumerate(doc.fleet.clusters):
            if not cluster.spec.is_manager:  # it runs no GPU work: its workers do
                out[(doc.fleet.cloud.value, cluster.spec.region)].append((doc, ci))
    return out


def _pools(docs: list[StackDoc], known: set[str]) -> dict[Key, list[Pool]]:
    out: dict[Key, list[Pool]] = defaultdict(list)
    for doc in docs:
        for ci, cluster in enumerate(doc.fleet.clusters):
            teams = (doc.fleet_map()["clusters"][ci].get("addons") or {}).get("kueue_teams") or []
            for pi, pool in enumerate(cluster.pools):
                key = (doc.fleet.cloud.value, cluster.spec.region, pool.machine.gpu)
                others = tuple(sorted(str(t["name"]) for t in teams
                                      if str(t["name"]) not in known and pool.machine.gpu in t["gpus"]))
                out[key].append(Pool(doc, ci, pi, pool.machine, pool.capacity, others))
    return out


# --- pool sizes ----------------------------------------------------------------------------------------

def _size(p: Proposal, key: Key, need: Need, pools: list[Pool], hosts: list[tuple[StackDoc, int]],
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
    # pay-per-use work, which prepaid GPUs the plan leaves idle carry first (on-demand, then flex-start, then spot)
    elastic = {c: want.get(c, 0.0) for c in (CapacityType.ON_DEMAND, CapacityType.FLEX_START, CapacityType.SPOT)}
    for ctype in sorted(set(want) | set(committed) | {x.capacity for x in pools}, key=list(SUFFIX).index):
        group = [x for x in pools if x.capacity == ctype]
        commit = committed.get(ctype, {})
        if ctype in RESERVED:
            idle = _size_reserved(p, key, ctype, want[ctype], sum(elastic.values()), commit, group, host, pools,
                                  allow_shrink, what.get(ctype, ctype.value.replace("_", " ")))
            for kind in elastic:
                carried = min(idle, elastic[kind])
                elastic[kind] -= carried
                idle -= carried
        else:
            _size_elastic(p, key, ctype, elastic.get(ctype, want[ctype]), commit, group, host, pools, allow_shrink)
    return host


def _size_elastic(p: Proposal, key: Key, ctype: CapacityType, gpus: float, commit: dict[str, int],
                  group: list[Pool], host: tuple[StackDoc, int], pools: list[Pool], allow_shrink: bool) -> None:
    """On-demand, spot and flex-start pools: the first (largest) carries the work, the others scale away.
    (A billing commitment, a Savings Plan or reserved instance, discounts whatever runs: it needs no minimum.)"""
    if not group:
        if gpus <= EPS:
            return
        machine = machine_for(key, commit, pools)
        if machine is None:
            p.notes.append(f"{key[0]} {key[1]}: no {key[2]} machine type is offered there.")
            return
        group = [add_pool(p, key, ctype, machine, host, 1, reserved=False)]
    ordered = sorted(group, key=lambda x: -x.max_gpus)
    nodes = math.ceil(gpus / ordered[0].machine.gpus - EPS)
    why = f"{key[2]} {ctype.value}: the plan's peak is {gpus:.1f} GPUs in {p.month}"
    set_nodes(p, ordered[0], nodes, 0, why, allow_shrink)
    for other in ordered[1:]:
        set_nodes(p, other, 0, 0, f"{key[2]} {ctype.value}: {ordered[0].node['name']} carries the plan", allow_shrink)


def _size_reserved(p: Proposal, key: Key, ctype: CapacityType, gpus: float, on_demand: float,
                   commit: dict[str, int], group: list[Pool], host: tuple[StackDoc, int], pools: list[Pool],
                   allow_shrink: bool, what: str) -> float:
    """Grow reservation / capacity block pools to what the plan holds; shrink them (only when allowed) to what
    the plan holds plus the pay-per-use work they can carry; return the GPUs they hold beyond the peak of the
    plan's own work on them (GPUs committed but not run at the peak carry other work too). A commitment is held
    only by pools of its own machine type (a GCP commitment attaches to a reservation of that machine type)."""
    fits = [x for x in group if not commit or x.machine.name in commit]
    other = sum(x.max_gpus for x in group if x not in fits)
    held = sum(x.max_gpus for x in fits)
    machine = machine_for(key, commit, group or pools)
    if machine is None:
        return 0.0
    required = max(gpus - other, sum(n * machine.gpus for n in commit.values()))
    if required > held + EPS:
        nodes = math.ceil((required - held) / machine.gpus - EPS)
        pending = [x for x in fits if x.node.get("capacity", {}).get("id") == PENDING_ID]
        if pending:  # grow the pool still waiting for its purchase rather than add another
            target = pending[0]
            total = int(target.node["nodes"]["max"]) + nodes
            set_nodes(p, target, total, total, f"{key[2]} {ctype.value}: the plan holds {required:.0f} GPUs")
        else:
            target = add_pool(p, key, ctype, machine, host, nodes, reserved=True)
        p.purchases.append(Purchase(key[0], key[1], machine.name, nodes, f"{what} (buy now; its id replaces "
                                    f"'{PENDING_ID}')", f"{target.doc.name}:{target.path}"))
        return max(held + other + nodes * machine.gpus - gpus, 0.0)
    else:
        held += other
        required = max(gpus, required)
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
                set_nodes(p, pool, current - cut, current - cut, why)
            else:
                p.held.append(Edit(pool.doc.name, f"{pool.path}.nodes.max", current, current - cut, why))
        return max(held - gpus, 0.0)
