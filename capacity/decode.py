"""Read a solved model back as plan lines, and the usage the quota requests are read from."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from capacity.milp import Model
from capacity.plan import EPS_GPU_HOURS, Plan, PlanBuilder, northwest
from capacity.problem import USAGE_OPTIONS, Problem, Site
from capacity.schema import Option


@dataclass
class Usage:
    """Per (month, site): committed GPUs, on-demand and spot GPU-hours; and where gang rows went."""

    committed: dict[tuple[int, Site], float] = field(default_factory=lambda: defaultdict(float))
    on_demand: dict[tuple[int, Site], float] = field(default_factory=dict)
    spot: dict[tuple[int, Site], float] = field(default_factory=dict)
    gangs: list[tuple[int, Site, int, float]] = field(default_factory=list)  # (month, site, gang, GPU-hours)
    increase: dict[tuple[Site, str], float] = field(default_factory=dict)



def decode(problem: Problem, model: Model, x: np.ndarray, builder: PlanBuilder, usage: Usage) -> None:
    """Turn column values into plan lines: first every gang's paid top-up (on-demand to gangs that may not run
    on spot, spot then on-demand to the others), then spot to spot_ok units, then commitments and on-demand;
    pooled units are split over their rows in order. The model's rows make each step fit."""
    hours = problem.hours
    capacity: dict[tuple[int, Site], list[tuple[Option, float]]] = defaultdict(list)
    for (commit, site, start), col in model.nodes.items():
        nodes = round(float(x[col]))
        builder.buy(commit, start, nodes)
        for m in range(start, min(start + commit.term_months, len(hours))):
            if nodes:
                usage.committed[(m, site)] += nodes * commit.gpus
                capacity[(m, site)].append((commit.offer.option, nodes * commit.gpus * hours[m]))
    for (m, site), gpus in model.sunk.items():  # held capacity: prepaid GPUs too, bought before the plan
        usage.committed[(m, site)] += gpus
    at: dict[tuple[int, Site], list[tuple[int, float]]] = defaultdict(list)
    for (u, site), col in model.served.items():
        if x[col] > EPS_GPU_HOURS:
            at[(model.units[u].month, site)].append((u, float(x[col])))
            if model.units[u].gang > 1:
                usage.gangs.append((model.units[u].month, site, model.units[u].gang, float(x[col])))
    allocations: dict[int, list[tuple[tuple[Site, Option], float]]] = defaultdict(list)
    for (m, site), served in at.items():
        od = max(0.0, float(x[model.od[(m, site)]])) if (m, site) in model.od else 0.0
        sp = max(0.0, float(x[model.sp[(m, site)]])) if (m, site) in model.sp else 0.0
        cm = max(0.0, float(x[model.cm[(m, site)]])) if (m, site) in model.cm else 0.0
        usage.on_demand[(m, site)], usage.spot[(m, site)] = od, sp
        taken: dict[int, float] = defaultdict(float)
        topups = [(u, float(x[model.topup[(u, site)]])) for u, _ in served if (u, site) in model.topup]
        paid = [(u, t) for u, t in topups if not model.units[u].spot_ok] + \
            [(u, t) for u, t in topups if model.units[u].spot_ok]
        left = {Option.SPOT: sp, site.usage_option: od}
        for u, need in paid:  # top-ups: not spot_ok from on-demand; spot_ok from spot first, then on-demand
            for option in ((Option.SPOT, site.usage_option) if model.units[u].spot_ok else (site.usage_option,)):
                take = min(need, left[option])
                if take > EPS_GPU_HOURS:
                    allocations[u].append(((site, option), take))
                    taken[u] += take
                    left[option] -= take
                    need -= take
        spot_ok = [(u, v - taken[u]) for u, v in served if model.units[u].spot_ok]
        for u, option, amount in northwest(spot_ok, [(Option.SPOT, left[Option.SPOT])]):
            taken[u] += amount
            allocations[u].append(((site, option), amount))
        prepaid = site.held.get(m, []) + sorted(capacity.get((m, site), []), key=lambda p: p[0].value)  # held first
        pieces = [*_commit_pieces(prepaid, cm), (site.usage_option, left[site.usage_option])]
        rest = [(u, v - taken[u]) for u, v in served]
        for u, option, amount in northwest(rest, pieces):
            allocations[u].append(((site, option), amount))
    ran: dict[tuple, set[Site]] = defaultdict(set)  # (team, gpu, gang, spot_ok, month): where it ran
    for u in sorted(range(len(model.units)), key=lambda k: model.units[k].month):
        unit = model.units[u]
        rows = [(r, problem.demand[r].gpu_hours) for r in unit.rows]
        before = {r: ran.get((*_team(problem, r), unit.month - 1), set()) for r in unit.rows}
        for r, (site, option), amount in _split(rows, allocations.get(u, []), before):
            builder.serve(r, site, option, amount)
            ran[(*_team(problem, r), unit.month)].add(site)
    for (site, market), col in model.increase.items():
        usage.increase[(site, market.value)] = float(x[col])


def _team(problem: Problem, r: int) -> tuple:
    d = problem.demand[r]
    return (d.team, d.gpu, d.gang_gpus, d.spot_ok)


def _split(rows: list[tuple[int, float]], pieces: list[tuple[tuple[Site, Option], float]],
           before: dict[int, set[Site]]) -> list[tuple[int, tuple[Site, Option], float]]:
    """A pooled unit's hours over its rows (teams): each row first where it ran the month before, as far as
    the unit's hours there go, then the rest in order. Which team runs where costs nothing either way, so
    teams stay where they were."""
    left = [[key, amount] for key, amount in pieces]
    out: list[tuple[int, tuple[Site, Option], float]] = []
    need = dict(rows)
    for r, _ in rows:
        for piece in left:
            if piece[0][0] in before[r] and need[r] > EPS_GPU_HOURS and piece[1] > EPS_GPU_HOURS:
                take = min(need[r], piece[1])
                out.append((r, piece[0], take))
                need[r] -= take
                piece[1] -= take
    out += northwest([(r, need[r]) for r, _ in rows], [(key, amount) for key, amount in left])
    return out


def _commit_pieces(capacity: list[tuple[Option, float]], used: float) -> list[tuple[Option, float]]:
    out = []
    for option, cap in capacity:
        take = min(cap, used)
        if take > 0:
            out.append((option, take))
        used -= take
    if used > EPS_GPU_HOURS and out:  # numerical slack: charge it to the last commitment
        out[-1] = (out[-1][0], out[-1][1] + used)
    return out


def encode(problem: Problem, model: Model, plan: Plan) -> np.ndarray | None:
    """The column values of a plan made elsewhere (the greedy baseline), for the lines and commitments of
    this model's GPU models; None when the plan uses anything the model has no column for."""
    x = np.zeros(model.num_col)
    unit_of = {r: u for u, unit in enumerate(model.units) for r in unit.rows}
    rows_by_key: dict[tuple, list[int]] = defaultdict(list)
    for r, d in enumerate(problem.demand):
        if r in unit_of:
            rows_by_key[d.key].append(r)
    month = {m: i for i, m in enumerate(problem.months)}
    served: dict[int, float] = defaultdict(float)
    prepaid: dict[tuple[int, Site], float] = defaultdict(float)
    for line in plan.lines:
        rows = rows_by_key.get(line.demand_key)
        if not rows:
            continue  # another GPU model's line
        u, site = unit_of[rows[0]], problem.sites.get((line.cloud, line.region, line.gpu))
        m = month[line.month]
        table = model.sp if line.option is Option.SPOT else model.od if line.option in USAGE_OPTIONS else model.cm
        if site is None or (u, site) not in model.served or (m, site) not in table:
            return None
        x[model.served[(u, site)]] += line.gpu_hours
        x[table[(m, site)]] += line.gpu_hours
        served[u] += line.gpu_hours
        if line.option.is_commit:
            prepaid[(u, site)] += line.gpu_hours
        elif (u, site) in model.topup:
            x[model.topup[(u, site)]] += line.gpu_hours
        if (u, site) in model.chosen:
            x[model.chosen[(u, site)]] = 1.0
    gpus = {unit.gpu for unit in model.units}
    for c in plan.commitments:
        if c.gpu not in gpus:
            continue
        site = problem.sites.get((c.cloud, c.region, c.gpu))
        commit = next((k for k in (site.commits if site else []) if k.offer.machine_type == c.machine_type
                       and k.offer.option is c.option), None)
        col = model.nodes.get((commit, site, month.get(c.start_month, -1))) if commit and site else None
        if col is None:
            return None
        x[col] += c.nodes
    for u, unit in enumerate(model.units):
        x[model.unserved[u]] = max(0.0, unit.hours - served[u])
    for key, col in model.prepaid.items():
        x[col] = 1.0 if prepaid[key] > EPS_GPU_HOURS else 0.0
    return x
