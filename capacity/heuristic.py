"""A first plan for the MILP, from the LP relaxation, and a neighbourhood search around a plan.

First plan: commitment node counts are rounded in rounds (the nearest-to-whole quarter at a time, the LP
solved again warm in between; a rounding that breaks a quota is taken down). With commitments fixed, HiGHS
places the gang rows (a fallback dive: gang rows the LP serves at one site are fixed there; of the rest, the
largest quarter at the site serving most of them that still has room, the LP solved again in between).
RINS: every integer column on which the LP and the dived plan agree is fixed and HiGHS solves the small MILP
left. The LP bound proves how good the result is; often it is within the gap and no full MILP is needed.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict

import highspy
import numpy as np

from capacity.highs import highs_for, start, trusted
from capacity.milp import Model
from capacity.problem import Site

EPS = 1e-6
MAX_ROUNDS = 40
BATCH = 4  # each round fixes 1/BATCH of the gang rows the LP still splits


Option = tuple[int, int, Site]  # (Z column, S column, site)


def _groups(model: Model) -> dict[int, list[Option]]:
    """Gang unit -> its candidate sites."""
    out: dict[int, list[Option]] = defaultdict(list)
    for (u, site), z in model.chosen.items():
        out[u].append((z, model.served[(u, site)], site))
    return out


def first_plan(model: Model, lp: highspy.Highs, x: np.ndarray, gap: float, time_limit_s: float,
               deadline: float = math.inf) -> np.ndarray | None:
    """``lp`` holds the solved LP relaxation with values ``x``. Returns a column vector feasible for the
    MILP (every integer column integral), or None.

    Commitments first, by diving; then, with node counts fixed, the gang rows' sites by HiGHS: the months no
    longer interact and that MILP is small and, in practice, loses next to nothing against the LP with the
    same commitments. Placing gangs first and rounding commitments after costs far more, since the LP keeps
    re-spreading fractional commitments. Should HiGHS find nothing in time, gang rows are placed by diving."""
    lower, upper = np.asarray(model.lower, dtype=float), np.asarray(model.upper, dtype=float).copy()
    fixed = _round_commitments(model, lp, lower, upper, x, deadline)
    if fixed is None:
        return None
    if not model.chosen and not model.prepaid:
        return fixed
    h = highs_for(model, integral=True, gap=gap / 2, time_limit_s=time_limit_s, bounds=(lower, upper))
    h.run()  # stopping at the time limit is fine: any plan it has is feasible, and the LP bound judges it
    if h.getInfo().primal_solution_status == highspy.SolutionStatus.kSolutionStatusFeasible:
        return np.asarray(h.getSolution().col_value)
    return _place_gangs(model, lp, fixed, lower, upper, deadline)


def _place_gangs(model: Model, lp: highspy.Highs, x: np.ndarray, lower: np.ndarray,
                 upper: np.ndarray, deadline: float = math.inf) -> np.ndarray | None:
    """Dive on the gang rows' sites, commitments already fixed in the bounds."""
    open_units = _groups(model)
    placed: dict[int, Option] = {}
    hours = model.hours
    for _ in range(MAX_ROUNDS):
        if time.perf_counter() > deadline:
            break
        split: list[tuple[float, int]] = []
        for u, options in list(open_units.items()):
            served = [x[s] for _, s, _ in options]
            total = sum(served)
            if total <= EPS or max(served) >= total * (1 - 1e-6):
                best = options[int(np.argmax(served))]
                placed[u] = _fix(lower, upper, open_units.pop(u), best if total > EPS else None)
            else:
                split.append((total, u))
        if not split:
            break
        room = _room(model, hours, placed, x)
        split.sort(reverse=True)
        for total, u in split[: max(1, len(split) // BATCH)]:
            options = sorted(open_units[u], key=lambda o: -x[o[1]])
            month = model.units[u].month
            best = _pick(options, room, month, total, x)
            room[(month, best[2])] -= total
            placed[u] = _fix(lower, upper, open_units.pop(u), best)
        x = _resolve(model, lp, lower, upper)
        if x is None:
            return None
    for u, options in open_units.items():  # rounds ran out: fix the rest where the LP put most of them
        placed[u] = _fix(lower, upper, options, max(options, key=lambda o: x[o[1]]))
    fix_prepaid(model, lower, upper)
    return _resolve(model, lp, lower, upper)  # with every gang row's site fixed


def fix_prepaid(model: Model, lower: np.ndarray, upper: np.ndarray) -> None:
    """With commitments fixed in the bounds, each gang uses prepaid capacity where it holds the whole gang and
    runs on paid hours elsewhere: feasible whatever the rest (a gang on paid hours only needs no top-up rule)."""
    for (u, site), w in model.prepaid.items():
        unit = model.units[u]
        bought = sum(g * lower[y] for y, g in model.held.get((unit.month, site), []))
        gpus = model.sunk.get((unit.month, site), 0.0) + bought
        lower[w] = upper[w] = 1.0 if gpus >= unit.gang else 0.0


def _round_commitments(model: Model, lp: highspy.Highs, lower: np.ndarray, upper: np.ndarray,
                       x: np.ndarray, deadline: float = math.inf) -> np.ndarray | None:
    """Dive on the commitment node counts: fix those already whole, then round the nearest-to-whole quarter
    of the rest and solve again, so usage and the other commitments adapt; a rounding that breaks a quota
    (the LP turns infeasible) is taken down instead. Past the deadline the rest are rounded down at once."""
    nodes = np.asarray(list(model.nodes.values()), dtype=np.int64)
    free = nodes.copy()
    for _ in range(MAX_ROUNDS):
        if time.perf_counter() > deadline:
            break
        values = x[free]
        whole = np.abs(values - np.round(values)) <= 1e-6
        lower[free[whole]] = upper[free[whole]] = np.round(values[whole])
        free, values = free[~whole], values[~whole]
        if not len(free):
            return x
        order = np.argsort(np.abs(values - np.round(values)))
        batch = order[: max(1, len(order) // 4)]
        lower[free[batch]] = upper[free[batch]] = np.round(values[batch])
        found = _resolve(model, lp, lower, upper)
        if found is None:
            lower[free[batch]] = upper[free[batch]] = np.floor(values[batch])
            found = _resolve(model, lp, lower, upper)
            if found is None:
                return None
        x = found
    lower[nodes] = upper[nodes] = np.floor(x[nodes] + 1e-7)
    return _resolve(model, lp, lower, upper)




def _pick(options: list[Option], room: dict, month: int, total: float, x: np.ndarray) -> Option:
    """The site serving most of the row in the LP that still has room for all of it, else the roomiest."""
    fits = [o for o in options if room[(month, o[2])] >= total]
    return fits[0] if fits else max(options, key=lambda o: room[(month, o[2])])


def _room(model: Model, hours: list[int], placed: dict[int, Option | None],
          x: np.ndarray) -> dict[tuple[int, Site], float]:
    """On-demand GPU-hours per (month, site) not yet taken by gang rows already placed."""
    room: dict[tuple[int, Site], float] = {}
    for u, options in _groups(model).items():
        month = model.units[u].month
        for _, _, site in options:
            room[(month, site)] = hours[month] * site.quota_on_demand
    for u, option in placed.items():
        if option is not None:
            room[(model.units[u].month, option[2])] -= x[option[1]]
    return room


def _fix(lower: np.ndarray, upper: np.ndarray, options: list[Option], chosen: Option | None) -> Option | None:
    for option in options:
        lower[option[0]] = upper[option[0]] = 1.0 if option is chosen else 0.0
    return chosen


def rins(model: Model, relaxed: np.ndarray, first: np.ndarray, gap: float, time_limit_s: float) -> np.ndarray:
    """Relaxation-induced neighbourhood search: fix every integer column on which the LP relaxation and the
    first plan agree, solve the small MILP left, keep its plan when cheaper. Any plan it finds is feasible
    for the full model; its bound is not used."""
    ints = np.asarray(model.integer, dtype=np.int64)
    lower, upper = np.asarray(model.lower, dtype=float), np.asarray(model.upper, dtype=float).copy()
    agree = np.abs(relaxed[ints] - first[ints]) <= 1e-6
    lower[ints[agree]] = upper[ints[agree]] = np.round(first[ints[agree]])
    h = highs_for(model, integral=True, gap=gap / 4, time_limit_s=time_limit_s, bounds=(lower, upper))
    start(h, first)
    h.run()
    if h.getInfo().primal_solution_status != highspy.SolutionStatus.kSolutionStatusFeasible:
        return first
    x = np.asarray(h.getSolution().col_value)
    cost = model.arrays()["cost"]
    if not trusted(model, h, x):
        return first
    return x if float(np.dot(cost, x)) < float(np.dot(cost, first)) else first


def _resolve(model: Model, lp: highspy.Highs, lower: np.ndarray, upper: np.ndarray) -> np.ndarray | None:
    lp.changeColsBounds(model.num_col, np.arange(model.num_col, dtype=np.int32), lower, upper)
    lp.run()
    if lp.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return np.asarray(lp.getSolution().col_value)

