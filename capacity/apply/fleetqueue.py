"""The fleet queue follows the plan (docs/fleet-queue.md "From the plan"): in each MultiKueue manager's stack, per
team the plan serves that month, the order the manager tries the team's workers in (``multikueue.order``) and the
team's quota on the manager (``addons.kueue_teams[].gpus``).

Run after the workers' own pools and queues have followed the plan (``propose``), on the edited stack files: the
order is capacity.dispatch_plan's (where the plan put the team's prepaid and committed GPUs first, then spot where
all of the team's work may use it, then on-demand; cheapest first within a tier, an unknown rate last), and the
manager's quota of each GPU is what the team's workers in that order hold for it, so the manager never admits work
no worker has room for.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

from ruamel.yaml.comments import CommentedSeq

from capacity.apply.edits import Edit, Proposal, assign
from capacity.apply.stackdoc import StackDoc, plain
from capacity.dispatch_plan import team_orders
from capacity.fleetsim.fleet import worker as sim_worker
from capacity.prices.table import Prices
from capacity.schema import PlanLine
from components import multikueue
from components.errors import SpecError
from components.fleet import Fleet
from components.validate import resolve


def fleet_queues(p: Proposal, lines: Sequence[PlanLine], prices: Prices) -> None:
    """Every manager of the proposal's stacks, against its workers as the proposal left them."""
    fleets = _edited(p.docs)
    for doc in p.docs:
        for ci, cluster in enumerate(doc.fleet.clusters):
            if cluster.spec.is_manager:
                _manager(p, doc, ci, fleets, lines, prices)


def _edited(docs: Sequence[StackDoc]) -> dict[str, Fleet]:
    """stack -> its fleet as edited (a stack the edits broke is left out: revalidate reports it)."""
    out = {}
    for doc in docs:
        try:
            out[doc.stack] = resolve(plain(doc.fleet_map()), str(doc.path))
        except SpecError:
            continue
    return out


def _manager(p: Proposal, doc: StackDoc, ci: int, fleets: Mapping[str, Fleet], lines: Sequence[PlanLine],
             prices: Prices) -> None:
    spec = doc.fleet.clusters[ci].spec
    workers = multikueue.resolve_workers(spec, fleets)
    sites = {w.name: (w.cloud.value, w.cluster.spec.region) for w in workers}
    month_lines = [line for line in lines if line.month == p.month]
    orders = team_orders(month_lines, p.month, [sim_worker(w.name, w.cluster, prices, strict=False)
                                                for w in workers], sites)
    cluster = doc.fleet_map()["clusters"][ci]
    teams = {str(t["name"]): (i, t) for i, t in enumerate(cluster["addons"]["kueue_teams"])}
    hours: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for line in month_lines:
        hours[line.team][line.gpu] += line.gpu_hours
        if (line.cloud.value, line.region) not in sites.values():
            p.notes.append(f"{doc.name}: the plan runs team {line.team}'s {line.gpu} work in {line.cloud.value} "
                           f"{line.region}, where no worker of the fleet queue {doc.stack}/{spec.name} is: that "
                           "work is not dispatched through it.")
    where = f"clusters[{ci}]"
    for team in sorted(set(hours) & set(teams)):
        index, node = teams[team]
        gpus = sorted(hours[team], key=lambda g: (-hours[team][g], g))  # the team's main GPU's order leads
        order = list(dict.fromkeys(w for g in gpus for w in orders.get((team, g), [])))
        if not order:
            p.notes.append(f"{doc.name}: no worker of {doc.stack}/{spec.name} has a queue for team {team} with the "
                           f"GPUs the plan gives it ({', '.join(gpus)}); its order is left as it is.")
            continue
        listed = [w for w in workers if w.name in order]
        for gpu in gpus:
            held = sum(multikueue.team_gpus(w.cluster, team).get(gpu, 0) for w in listed)
            if held:
                assign(p, doc, node["gpus"], f"{where}.addons.kueue_teams[{index}].gpus", gpu, held,
                       f"what team {team}'s workers hold for it in {p.month} (the manager admits no more)")
        _set_order(p, doc, cluster["multikueue"], f"{where}.multikueue", team, order)


def _set_order(p: Proposal, doc: StackDoc, node: dict, path: str, team: str, order: list[str]) -> None:
    if "order" not in node:
        node["order"] = {}
    before = node["order"].get(team)
    if before is not None and [str(w) for w in before] == order:
        return
    seq = flow_seq(order)
    node["order"][team] = seq
    p.edits.append(Edit(doc.name, f"{path}.order.{team}", None if before is None else list(map(str, before)),
                        order, f"the plan's order for team {team} in {p.month}: prepaid capacity first, then spot "
                        "where its work may use it, then on-demand"))


def flow_seq(values: list[str]) -> CommentedSeq:
    """A list written on one line, like `pretrain: [gcp-train-train, azure-train-train]` in the example stacks."""
    out = CommentedSeq(values)
    out.fa.set_flow_style()
    return out
