"""After the solve: buy nothing that saves nothing.

The MILP is indifferent between plans of equal cost, and a plan proven within the gap may hold a prepaid node
that loses a little. Every node bought (commitment, reservation, capacity block) is tried without: with every
other integer fixed, the LP re-solved warm decides what its hours cost on pay-per-use options; the node goes
when the plan costs no more without it (ties go to the flexible option). The objective only falls, so every
bound and gap proven before still holds. A gang that ran on the node's site may then lack its top-up
(docs/capacity.md, "Concurrency"); the node is then tried once more with those gangs on paid hours only.
"""

from __future__ import annotations

import time

import highspy
import numpy as np

from capacity.highs import highs_for
from capacity.milp import Model
from capacity.problem import DEFAULT_GAP

TIE_REL = 1e-9  # a saving below this share of the objective is solver noise, i.e. a tie
TIE_ABS_USD = 1e-6
MIN_TIME_S = 5.0  # even a solve that used its whole time limit gets this long, for all GPU models together


def fixed(model: Model, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column bounds with every integer column fixed to its rounded value in ``x``."""
    ints = np.asarray(model.integer, dtype=np.int64)
    lower, upper = np.asarray(model.lower, dtype=float).copy(), np.asarray(model.upper, dtype=float).copy()
    lower[ints] = upper[ints] = np.round(x[ints])
    return lower, upper


def prune(model: Model, x: np.ndarray, deadline: float, cap: float = float("inf")) -> np.ndarray:
    """``x`` (integers whole) without every prepaid node that saves nothing; its continuous part re-optimised.
    Nodes are tried one at a time, lot by lot in a fixed order (the model's), each lot until a node pays; a tie
    within solver noise is taken only while the plan stays at most ``cap`` (the start plan's cost)."""
    lower, upper = fixed(model, x)
    h = highs_for(model, integral=False, gap=DEFAULT_GAP, time_limit_s=max(1.0, deadline - time.perf_counter()),
                  bounds=(lower, upper))
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return x
    best_x, best = np.asarray(h.getSolution().col_value), float(h.getInfo().objective_function_value)
    stop = deadline
    for (commit, site, start), col in model.nodes.items():
        span = range(start, start + commit.term_months)
        gangs = [w for (u, s), w in model.prepaid.items() if s is site and model.units[u].month in span and lower[w]]
        while lower[col] >= 1 and time.perf_counter() < stop:
            for paid_only in ([], gangs) if gangs else ([],):
                found = _try(h, {col: lower[col] - 1, **dict.fromkeys(paid_only, 0.0)}, best, cap)
                if found is not None:
                    break
            if found is None:
                _set(h, {c: lower[c] for c in (col, *gangs)})
                break
            for c, value in found[0].items():
                lower[c] = upper[c] = value
            best_x, best = found[1], found[2]
            gangs = [w for w in gangs if lower[w]]
    best_x[model.integer] = lower[model.integer]
    return best_x


def _set(h: highspy.Highs, values: dict[int, float]) -> None:
    for col, value in values.items():
        h.changeColBounds(col, value, value)


def _try(h: highspy.Highs, values: dict[int, float], best: float,
         cap: float) -> tuple[dict[int, float], np.ndarray, float] | None:
    """The plan with ``values`` fixed, when it costs no more than ``best`` (a tie counts as no more)."""
    _set(h, values)
    h.run()
    value = float(h.getInfo().objective_function_value)
    tie = max(TIE_ABS_USD, TIE_REL * abs(best))
    if h.getModelStatus() == highspy.HighsModelStatus.kOptimal and value <= min(best + tie, max(cap, best)):
        return values, np.asarray(h.getSolution().col_value), value
    return None
