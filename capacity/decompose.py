"""Month by month: the plan's months interact only through commitments, which this module uses twice.

Bound (``month_cuts``): the objective splits into one part per month: the penalty on the month's unserved
hours, its on-demand and spot usage, and a share of every commitment active in it (its charge x the
month's hours / the calendar hours of its whole term; the share of months past the horizon is dropped, so
the parts sum to at most the objective). Each month's part is at least the optimum of that month's own
small MILP, where gang rows must be packed whole into regions and commitments may be bought by the month.
One row per month, part >= that optimum (HiGHS's proven bound of it), is valid for every plan and gives
the LP relaxation what it lacks on quota-bound instances: gang rows that cannot be split between regions.

Primal (``fix_and_optimise``): with the commitments fixed, months are independent; each month's gang
placement is a small MILP solved on its own, which HiGHS closes far faster than all months at once.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable

import highspy
import numpy as np

from capacity.highs import feasible, highs_for, start
from capacity.milp import Model
from capacity.problem import Problem
from capacity.schema import add_months, hours

INF = float("inf")
MONTH_TIME_S = 5.0  # one month's gang placement (commitments fixed): small, usually closed in well under 1 s
COMMIT_TIME_S = 10.0  # every commitment at once, placements fixed


def month_columns(model: Model) -> dict[int, list[int]]:
    """The columns that belong to each month alone: its units' S, Z, T, W and U, its OD, SP and CM."""
    out: dict[int, list[int]] = defaultdict(list)
    for u, unit in enumerate(model.units):
        out[unit.month].append(model.unserved[u])
    for (u, _), col in [*model.served.items(), *model.chosen.items(), *model.topup.items(), *model.prepaid.items()]:
        out[model.units[u].month].append(col)
    for table in (model.od, model.sp, model.cm):
        for (m, _), col in table.items():
            out[m].append(col)
    return out


def _shares(problem: Problem, model: Model) -> dict[int, list[tuple[int, float]]]:
    """Month -> (Y column, the commitment charge share of that month) for every commitment active in it."""
    out: dict[int, list[tuple[int, float]]] = defaultdict(list)
    horizon = len(problem.months)
    for (commit, _, begin), col in model.nodes.items():
        first = problem.months[begin]
        calendar = sum(hours(add_months(first, k)) for k in range(commit.term_months))
        for m in range(begin, min(begin + commit.term_months, horizon)):
            out[m].append((col, problem.charge(commit, begin) * problem.hours[m] / calendar))
    return out


def month_cuts(problem: Problem, model: Model, deadline: float) -> int:
    """Add one bounding row per month (>= its own MILP's proven bound); returns how many were added.
    Stops adding (never a wrong row) when the deadline passes."""
    if not model.chosen:
        return 0  # no gang rows: the LP relaxation is already tight on packing
    cost = np.asarray(model.cost, dtype=float)
    lower0, upper0 = np.asarray(model.lower, dtype=float), np.asarray(model.upper, dtype=float)
    own, shares = month_columns(model), _shares(problem, model)
    unserved_hours = np.zeros(model.num_col)
    unserved = np.asarray(model.unserved, dtype=np.int64)
    unit_month = np.asarray([unit.month for unit in model.units], dtype=np.int64)
    unserved_hours[unserved] = [unit.hours for unit in model.units]
    nodes = np.asarray(list(model.nodes.values()), dtype=np.int32)
    added = 0
    for m in sorted(own):
        left = deadline - time.perf_counter()
        if left <= 0.05:
            break
        keep = np.zeros(model.num_col, dtype=bool)
        keep[own[m]] = True
        month_cost = np.where(keep, cost, 0.0)
        for col, share in shares.get(m, []):
            keep[col] = True
            month_cost[col] = share
        lower, upper = np.where(keep, lower0, 0.0), np.where(keep, upper0, 0.0)
        others = unserved[unit_month != m]
        lower[others] = upper[others] = unserved_hours[others]  # the other months: all unserved
        h = highs_for(model, integral=True, gap=1e-4, time_limit_s=left, bounds=(lower, upper))
        h.changeColsCost(model.num_col, np.arange(model.num_col, dtype=np.int32), month_cost)
        if len(nodes):  # whole nodes matter little to one month's part; relaxed, the bound stays valid and quick
            h.changeColsIntegrality(len(nodes), nodes, np.zeros(len(nodes), dtype=np.uint8))
        h.run()
        if h.getModelStatus() not in (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kTimeLimit):
            continue
        bound = float(h.getInfo().mip_dual_bound)
        if not np.isfinite(bound):
            continue
        entries = [(c, float(month_cost[c])) for c in np.flatnonzero(keep) if month_cost[c] != 0.0]
        model.row(entries, bound, INF)
        added += 1
    return added


def _search(model: Model, x: np.ndarray, free: np.ndarray, gap: float, time_limit_s: float) -> np.ndarray:
    """Fix every integer column outside ``free`` to its value in ``x`` and let HiGHS solve the rest, started
    from ``x``; its plan is kept only when it is feasible (checked here) and cheaper."""
    ints = np.asarray(model.integer, dtype=np.int64)
    lower, upper = np.asarray(model.lower, dtype=float), np.asarray(model.upper, dtype=float).copy()
    fixed = ints[~free[ints]]
    lower[fixed] = upper[fixed] = np.round(x[fixed])
    h = highs_for(model, integral=True, gap=gap, time_limit_s=max(time_limit_s, 0.05), bounds=(lower, upper))
    start(h, x)
    h.run()
    if h.getInfo().primal_solution_status != highspy.SolutionStatus.kSolutionStatusFeasible:
        return x
    y = np.asarray(h.getSolution().col_value)
    cost = np.asarray(model.cost)
    return y if float(cost @ y) < float(cost @ x) - 1e-9 and feasible(model, y) else x


def fix_and_optimise(model: Model, x: np.ndarray, gap: float, deadline: float,
                     better: Callable[[np.ndarray], None] = lambda _x: None, rounds: int = 3) -> np.ndarray:
    """Alternate two exact neighbourhoods of ``x`` until neither improves it or time runs out: each month's
    gang placement with everything else fixed (commitments fixed, months are independent), then every
    commitment with all placements fixed. ``better`` hears of every improvement as it happens."""
    chosen_by_month: dict[int, list[int]] = defaultdict(list)
    for (u, _), col in [*model.chosen.items(), *model.prepaid.items()]:  # where each gang runs, and on what
        chosen_by_month[model.units[u].month].append(col)
    nodes = list(model.nodes.values()) + list(model.prepaid.values())
    cost = np.asarray(model.cost)
    for _ in range(rounds):
        before = float(cost @ x)
        for m in sorted(chosen_by_month):
            left = deadline - time.perf_counter()
            if left <= 0.05:
                return x
            free = np.zeros(model.num_col, dtype=bool)
            free[chosen_by_month[m]] = True
            y = _search(model, x, free, gap / 4, min(left, MONTH_TIME_S))
            if y is not x:
                x = y
                better(x)
        left = deadline - time.perf_counter()
        if nodes and left > 0.05:
            free = np.zeros(model.num_col, dtype=bool)
            free[nodes] = True
            y = _search(model, x, free, gap / 4, min(left, COMMIT_TIME_S))
            if y is not x:
                x = y
                better(x)
        if float(cost @ x) >= before * (1 - 1e-7):
            break
    return x
