"""HiGHS plumbing: a Model into a Highs instance, the LP relaxation, and a start solution HiGHS may use."""

from __future__ import annotations

import math
import os
import sys

import highspy
import numpy as np

from capacity.milp import Model


def _quiet_first_instance() -> None:
    """HiGHS prints its version banner (from C++, to fd 1) when the first Highs is made. Make that one here,
    at import, with fd 1 pointed at /dev/null, so machine output on stdout (``plan --json``) stays clean and no
    solver thread races it."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)


_quiet_first_instance()


def highs_for(model: Model, integral: bool, gap: float, time_limit_s: float,
           bounds: tuple[np.ndarray, np.ndarray] | None = None) -> highspy.Highs:
    a = model.arrays()
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = model.num_col, model.num_row
    lower, upper = bounds if bounds is not None else (a["lower"], a["upper"])
    lp.col_cost_, lp.col_lower_, lp.col_upper_ = a["cost"], lower, upper
    lp.row_lower_, lp.row_upper_ = a["row_lower"], a["row_upper"]
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = a["starts"], a["index"], a["value"]
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = model.num_col, model.num_row
    if integral and len(model.integer):
        kinds = np.zeros(model.num_col, dtype=np.uint8)
        kinds[a["integer"]] = 1
        lp.integrality_ = [highspy.HighsVarType(int(k)) for k in kinds]
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", gap)
    h.setOptionValue("time_limit", time_limit_s)
    h.setOptionValue("random_seed", 0)
    h.passModel(lp)
    return h


def lp(model: Model, time_limit_s: float) -> tuple[highspy.Highs, float | None]:
    """The LP relaxation: its optimum bounds every plan, integral or not, from below."""
    h = highs_for(model, integral=False, gap=1e-3, time_limit_s=time_limit_s)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return h, None
    return h, float(h.getInfo().objective_function_value)


def start(h: highspy.Highs, x: np.ndarray) -> None:
    """Offer HiGHS a feasible plan to start from."""
    solution = highspy.HighsSolution()
    solution.col_value = list(x)
    solution.value_valid = True
    h.setSolution(solution)


def trusted(model: Model, h: highspy.Highs, x: np.ndarray) -> bool:
    """HiGHS 1.16 with presolve on can misreport a run started from a user solution (it returned the start
    with another objective). A run whose reported objective is not the cost of its own solution is not
    trusted."""
    return math.isclose(float(np.dot(model.arrays()["cost"], x)), h.getInfo().objective_function_value,
                        rel_tol=1e-6, abs_tol=1e-6)


def feasible(model: Model, x: np.ndarray, tol: float = 1e-6) -> bool:
    """Whether ``x`` satisfies every bound, row and integrality of the model (tolerance relative to the
    size of each bound): what makes a plan from outside HiGHS (greedy, a heuristic) a safe incumbent."""
    a = model.arrays()
    lower, upper = a["lower"], a["upper"]
    if not (np.all(x >= lower - tol * np.maximum(1.0, np.abs(lower)))
            and np.all(x <= upper + tol * np.maximum(1.0, np.abs(np.where(np.isinf(upper), 0.0, upper))))):
        return False
    ints = a["integer"]
    if len(ints) and np.any(np.abs(x[ints] - np.round(x[ints])) > 1e-6):
        return False
    rows = np.repeat(np.arange(model.num_row), np.diff(a["starts"]))
    activity = np.bincount(rows, weights=a["value"] * x[a["index"]], minlength=model.num_row)
    scale = tol * np.maximum(1.0, np.abs(activity))
    return bool(np.all(activity >= a["row_lower"] - scale) and np.all(activity <= a["row_upper"] + scale))
