"""After the solve: buy nothing that saves nothing.

The MILP is indifferent between plans of equal cost, and a plan proven within the gap may hold a prepaid node
that loses a little. Every node bought (commitment, reservation, capacity block) is tried without: with every
other integer fixed, the LP re-solved warm decides what its hours cost on pay-per-use options; the node goes
when the plan costs no more without it (ties go to the flexible option). The objective only falls, so every
bound and gap proven before still holds.
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
MIN_TIME_S = 5.0  # even a solve that used its whole time limit gets this long to drop useless nodes


def fixed(model: Model, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column bounds with every integer column fixed to its rounded value in ``x``."""
    ints = np.asarray(model.integer, dtype=np.int64)
    lower, upper = np.asarray(model.lower, dtype=float).copy(), np.asarray(model.upper, dtype=float).copy()
    lower[ints] = upper[ints] = np.round(x[ints])
    return lower, upper


def prune(model: Model, x: np.ndarray, deadline: float) -> np.ndarray:
    """``x`` (integers whole) without every prepaid node that saves nothing; its continuous part re-optimised.
    Nodes are tried one at a time, lot by lot in a fixed order (the model's), each lot until a node pays."""
    lower, upper = fixed(model, x)
    h = highs_for(model, integral=False, gap=DEFAULT_GAP, time_limit_s=max(MIN_TIME_S, deadline - time.perf_counter()),
                  bounds=(lower, upper))
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return x
    best_x, best = np.asarray(h.getSolution().col_value), float(h.getInfo().objective_function_value)
    stop = max(deadline, time.perf_counter() + MIN_TIME_S)
    for col in model.nodes.values():
        while lower[col] >= 1 and time.perf_counter() < stop:
            trial = lower[col] - 1
            h.changeColBounds(col, trial, trial)
            h.run()
            value = float(h.getInfo().objective_function_value)
            if h.getModelStatus() == highspy.HighsModelStatus.kOptimal and \
                    value <= best + max(TIE_ABS_USD, TIE_REL * abs(best)):
                lower[col] = upper[col] = trial
                best_x, best = np.asarray(h.getSolution().col_value), value
            else:
                h.changeColBounds(col, lower[col], upper[col])
                break
    best_x[model.integer] = lower[model.integer]
    return best_x
