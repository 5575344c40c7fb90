"""After the solve: placements stay put unless moving saves more than a threshold.

Plans of nearly equal cost are many (two regions at one price, a GPU-hour moved to a commitment's idle hours),
and the solver picks among them month by month with no memory: a team's work could jump between two regions at
the same price every month. Month by month, from the second on, with every commitment and every other month
fixed, the month is solved again with a price on moving: each GPU-hour of a demand placed at a site beyond its
share there the month before (the same row of a team, or the pooled rows of a GPU that may spread) costs
``threshold`` x the on-demand rate where it ran before. So work moves only when that saves more. The plan may
cost more than the solver's, never past the budget given (what keeps it within its proven gap).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Hashable

import highspy
import numpy as np

from capacity.decompose import month_columns
from capacity.highs import feasible, start
from capacity.milp import Model
from capacity.problem import DEFAULT_STAY_THRESHOLD, Problem, Site

DEFAULT_THRESHOLD = DEFAULT_STAY_THRESHOLD
MONTH_TIME_S = 2.0
MIN_TIME_S = 10.0  # even a solve that used its whole time limit gets this long, for all GPU models together
EPS = 1e-6


def _identity(problem: Problem, model: Model, u: int) -> Hashable:
    """The same work from one month to the next: a gang row by its team, pooled rows by their GPU and spot_ok."""
    unit = model.units[u]
    if unit.gang > 1:
        d = problem.demand[unit.rows[0]]
        return (d.team, d.gpu, d.gang_gpus, d.spot_ok)
    return ("pooled", unit.gpu, unit.spot_ok)


def _rate(site: Site) -> float:
    offer = site.on_demand or site.spot
    if offer is not None:
        return offer.usd_per_gpu_hour
    return max((c.offer.usd_per_gpu_hour for c in site.commits), default=0.0)


def stay(problem: Problem, model: Model, x: np.ndarray, threshold: float, budget: float,
         deadline: float) -> np.ndarray:
    """``x`` with each month after the first re-solved with a price on moving; the objective rises by at most
    ``budget``. A month whose solve fails, finds nothing better by that measure or has no time left keeps
    its placement."""
    if threshold <= 0 or len(model.hours) < 2:
        return x
    cost = model.arrays()["cost"]
    own = month_columns(model)
    sites_of: dict[int, list[Site]] = defaultdict(list)
    for u, site in model.served:
        sites_of[u].append(site)
    by_month: dict[int, dict[Hashable, int]] = defaultdict(dict)
    for u, unit in enumerate(model.units):
        by_month[unit.month][_identity(problem, model, u)] = u
    stop = deadline
    left = max(0.0, budget)
    months = _Months(model, own)
    for m in range(1, len(model.hours)):
        if time.perf_counter() > stop:
            break
        moves = []  # (S column, target GPU-hours, USD per GPU-hour moved)
        for identity, u in by_month[m].items():
            before = by_month[m - 1].get(identity)
            if before is None:
                continue
            served = {s: float(x[model.served[(before, s)]]) for s in sites_of[before]}
            total = sum(served.values())
            if total <= EPS:
                continue
            price = threshold * max(_rate(s) for s, v in served.items() if v > EPS)
            for s in sites_of[u]:
                moves.append((model.served[(u, s)], served.get(s, 0.0) / total * model.units[u].hours, price))
        if sum(p * max(0.0, float(x[s]) - target) for s, target, p in moves) > EPS:  # something moved
            found = months.solve(m, x, own[m], moves, float(cost[own[m]] @ x[own[m]]) + left,
                           min(MONTH_TIME_S, max(0.05, stop - time.perf_counter())))
            if found is not None:
                left -= float(cost @ found) - float(cost @ x)
                x = found
    return x


class _Months:
    """Each month's rows, solved alone: every row of the model holds one month's columns at most (and
    commitments, fixed here), so a month's part of the model is its rows with the other columns' terms moved
    into the bounds. The row of every nonzero, and the month of every row, are found once."""

    def __init__(self, model: Model, own: dict[int, list[int]]) -> None:
        a = self.a = model.arrays()
        self.model = model
        month_of_col = np.full(model.num_col, -1, dtype=np.int64)
        for m, cols in own.items():
            month_of_col[cols] = m
        self.month_of_col = month_of_col
        self.row_of = np.repeat(np.arange(model.num_row), np.diff(a["starts"]))
        row_month = np.full(model.num_row, -1, dtype=np.int64)
        entry_month = month_of_col[a["index"]]
        row_month[self.row_of[entry_month >= 0]] = entry_month[entry_month >= 0]
        order = np.argsort(row_month[self.row_of], kind="stable")
        months = row_month[self.row_of][order]
        self.entries = {int(m): order[np.searchsorted(months, m):np.searchsorted(months, m, side="right")]
                        for m in np.unique(months) if m >= 0}

    def solve(self, m: int, x: np.ndarray, columns: list[int], moves: list[tuple[int, float, float]], cap: float,
              time_limit_s: float) -> np.ndarray | None:
        """Month ``m`` re-solved with everything else fixed at ``x``, at cost + the price of moving, its cost at
        most ``cap``; None unless HiGHS finds a plan that is feasible for the model and moves less."""
        a, model = self.a, self.model
        cols = np.asarray(sorted(columns), dtype=np.int64)
        position = np.full(model.num_col, -1, dtype=np.int64)
        position[cols] = np.arange(len(cols))
        entries = self.entries.get(m, np.zeros(0, dtype=np.int64))
        index, value, row_of = a["index"][entries], a["value"][entries], self.row_of[entries]
        mine = position[index] >= 0
        rows, local = np.unique(row_of, return_inverse=True)
        fixed = np.bincount(local[~mine], weights=value[~mine] * x[index[~mine]], minlength=len(rows))
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = len(cols), len(rows)
        lp.col_cost_, lp.col_lower_, lp.col_upper_ = a["cost"][cols], a["lower"][cols], a["upper"][cols]
        lp.row_lower_, lp.row_upper_ = a["row_lower"][rows] - fixed, a["row_upper"][rows] - fixed
        order = np.argsort(local[mine], kind="stable")
        lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        lp.a_matrix_.start_ = np.searchsorted(local[mine][order], np.arange(len(rows) + 1)).astype(np.int32)
        lp.a_matrix_.index_ = position[index[mine]][order].astype(np.int32)
        lp.a_matrix_.value_ = value[mine][order]
        lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = len(cols), len(rows)
        integer = np.isin(cols, a["integer"])
        if integer.any():
            lp.integrality_ = [highspy.HighsVarType(int(k)) for k in integer]
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("mip_rel_gap", 1e-6)
        h.setOptionValue("time_limit", time_limit_s)
        h.setOptionValue("random_seed", 0)
        h.passModel(lp)
        excess = [max(0.0, float(x[s]) - target) for s, target, _ in moves]
        for s, target, price in moves:
            h.addCol(price, 0.0, highspy.kHighsInf, 0, np.array([], dtype=np.int32), np.array([], dtype=float))
            h.addRow(-highspy.kHighsInf, target, 2, np.array([position[s], h.getNumCol() - 1], dtype=np.int32),
                     np.array([1.0, -1.0]))
        priced = np.flatnonzero(a["cost"][cols] != 0.0)
        h.addRow(-highspy.kHighsInf, cap, len(priced), priced.astype(np.int32), a["cost"][cols][priced])
        start(h, np.concatenate([x[cols], np.asarray(excess)]))
        h.run()
        if h.getInfo().primal_solution_status != highspy.SolutionStatus.kSolutionStatusFeasible:
            return None
        y = x.copy()
        y[cols] = np.asarray(h.getSolution().col_value)[: len(cols)]
        ints = np.asarray(model.integer, dtype=np.int64)
        y[ints] = np.round(y[ints])
        moved = sum(p * max(0.0, float(y[s]) - target) for s, target, p in moves)
        before = sum(p * e for (_, _, p), e in zip(moves, excess, strict=True))
        if float(a["cost"][cols] @ y[cols]) > cap * (1 + 1e-9) + EPS or not feasible(model, y):
            return None
        cost = a["cost"]
        return y if moved < before - EPS or float(cost @ y) < float(cost @ x) - EPS else None
