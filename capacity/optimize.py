"""Solve the planning MILP with HiGHS and read the answer back as a Plan.

``solve`` reports the proven bound and gap of the MILP, and the LP relaxation bound (the same model with
integrality dropped), so a reader can see how far any plan could possibly be improved.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import highspy
import numpy as np

from capacity import decompose, heuristic, highs, milp, settle, stay
from capacity.decode import Usage, decode, encode
from capacity.milp import Model
from capacity.plan import Plan, PlanBuilder
from capacity.problem import DEFAULT_GAP, DEFAULT_TIME_LIMIT_S, Problem

WORKERS = 2  # HiGHS releases the GIL: two GPU models solve at once on a 2-core machine
RINS_TIME_S = 1.0  # each relaxation-induced neighbourhood search (heuristic.rins)
RINS_ROUNDS = 1
GANG_TIME_S = 1.0  # placing gang rows once commitments are fixed (heuristic.first_plan)
RINS_RETRY_S = 3.0  # the longer search for a GPU model whose first plan is still too far from its bound
SEARCH_SHARE = 0.3  # of the time left, for fix-and-optimise on a GPU model far from its bound
CUT_SHARE = 0.3  # of the time left then, for its per-month bounding rows; the full MILP gets the rest


@dataclass(frozen=True)
class Progress:
    phase: str  # "lp", "milp", "relaxed"
    seconds: float
    incumbent_usd: float | None = None
    bound_usd: float | None = None
    gap: float | None = None


@dataclass
class Solution:
    plan: Plan
    usage: Usage
    status: str  # optimal (proven within the gap) | time_limit (the best plan found, with its gap)
    objective_usd: float
    lower_bound_usd: float
    gap: float
    lp_relaxation_usd: float | None
    solve_seconds: float
    stats: dict[str, int]


ProgressFn = Callable[[Progress], None]
def _watch(h: highspy.Highs, progress: ProgressFn, started: float) -> None:
    last = [0.0]

    def report(event: highspy.HighsCallbackEvent) -> None:
        now = time.perf_counter()
        if now - last[0] < 0.1:
            return
        last[0] = now
        out = event.data_out
        primal = out.mip_primal_bound if math.isfinite(out.mip_primal_bound) else None
        dual = out.mip_dual_bound if math.isfinite(out.mip_dual_bound) else None
        gap = out.mip_gap if primal is not None and math.isfinite(out.mip_gap) else None
        progress(Progress("milp", now - started, primal, dual, gap))

    h.cbMipInterrupt.subscribe(report)


@dataclass
class _Part:
    """One GPU model's MILP and what is known of it."""

    gpu: str
    model: Model
    lp: highspy.Highs | None = None
    lp_value: float | None = None
    first: np.ndarray | None = None
    relaxed: np.ndarray | None = None  # the LP relaxation's values
    x: np.ndarray | None = None
    objective: float = 0.0
    bound: float = 0.0
    status: str = "time_limit"  # a plan without a proof (the LP bound of 0 holds: every cost is >= 0)
    start_objective: float = math.inf  # the cheapest start plan (greedy): what the plan written never exceeds


def solve(problem: Problem, gap: float = DEFAULT_GAP, time_limit_s: float = DEFAULT_TIME_LIMIT_S,
          progress: ProgressFn | None = None, relax: bool = False, only: set[str] | None = None,
          starts: Sequence[Plan] = (), stay_threshold: float = stay.DEFAULT_THRESHOLD) -> Solution:
    """Solve one MILP per GPU model (exact: GPU models share no site, quota or offer) and join them.

    ``only`` limits the solve to some GPU models (the plan then leaves the others unserved). ``starts`` are
    plans made elsewhere (the greedy baseline): each part starts from the cheapest feasible one it has, so
    the result is never worse than any of them. The gap is proven for the whole plan: every part's LP bound
    and first plan come first (two parts at a time); when they are within gap x the sum of LP bounds, that
    proves it. Otherwise the parts with the largest gaps get, within the time limit: per-month bounding rows
    (capacity/decompose.py), fix-and-optimise over months and commitments, then the full MILP. Finally every
    prepaid node that saves nothing goes (capacity/settle.py) and, unless ``relax``, placements are kept from
    month to month where moving saves less than ``stay_threshold`` (capacity/stay.py), within the gap."""
    started = time.perf_counter()
    deadline = started + time_limit_s
    phase = "relaxed" if relax else "milp"
    say = progress or (lambda _p: None)
    gpus = sorted({d.gpu for d in problem.demand if only is None or d.gpu in only})
    parts = [_Part(gpu, milp.build(problem, relax=relax, gpu=gpu)) for gpu in gpus]

    def first_plan(part: _Part) -> None:
        if part.model.num_col == 0:  # no demand of this GPU: nothing to decide
            part.x, part.lp_value, part.status = np.zeros(0), 0.0, "optimal"
            return
        say(Progress(f"{phase}: LP + first plan {part.gpu}", time.perf_counter() - started))
        _first_plan(part, gap, deadline)
        for plan in starts:
            x = encode(problem, part.model, plan)
            if x is not None and highs.feasible(part.model, x):
                _offer(part, x)
                part.start_objective = min(part.start_objective, float(np.dot(part.model.arrays()["cost"], x)))
        _judge(part, gap)

    with ThreadPoolExecutor(WORKERS) as pool:
        list(pool.map(first_plan, parts))
    lp_value = None if any(p.lp_value is None for p in parts) else sum(p.lp_value for p in parts)  # type: ignore[misc]
    if all(p.x is not None for p in parts):
        first, low = sum(p.objective for p in parts), sum(p.bound for p in parts)
        say(Progress(f"{phase}: first plans", time.perf_counter() - started, first, low,
                     max(0.0, first - low) / first if first > 0 else 0.0))
    budget = gap * abs(lp_value) if lp_value is not None else 0.0
    todo = _to_improve(parts, budget)
    if todo:
        spare = budget - sum(p.objective - p.bound for p in parts if p not in todo and p.x is not None)

        def improve(part: _Part) -> None:
            allowed = max(spare, 0.0) / len(todo)
            report = _reporter(say, parts, parts.index(part), started, phase)
            if part.x is not None and part.relaxed is not None:  # a longer neighbourhood search: enough on most
                _offer(part, heuristic.rins(part.model, part.relaxed, part.x, gap,
                                            min(RINS_RETRY_S, max(0.0, deadline - time.perf_counter()))))
                report(Progress("", 0.0, part.objective, part.bound))
                if part.objective - part.bound <= allowed:
                    return
            if part.x is not None and part.model.chosen:  # quota-bound gangs: month by month
                _decompose(problem, part, gap, deadline, relax, report)
                if part.objective - part.bound <= allowed:
                    return
            left = max(1.0, deadline - time.perf_counter())
            _milp(part, gap, allowed, left, report)

        with ThreadPoolExecutor(WORKERS) as pool:
            list(pool.map(improve, todo))
    after = max(deadline, time.perf_counter() + settle.MIN_TIME_S)
    for part in parts:
        _polish(part, after)
    if not relax:
        _stay(problem, parts, gap, stay_threshold, max(deadline, time.perf_counter() + stay.MIN_TIME_S))
    builder, usage = PlanBuilder(problem), Usage()
    stats: dict[str, int] = defaultdict(int)
    for part in parts:
        decode(problem, part.model, part.x, builder, usage)  # type: ignore[arg-type]
        for key, value in part.model.stats().items():
            stats[key] += value
    seconds = time.perf_counter() - started
    objective = sum(p.objective for p in parts)
    bound = min(sum(p.bound for p in parts), objective)
    rel_gap = 0.0 if objective <= 0 else max(0.0, (objective - bound) / abs(objective))
    failed = next((p.status for p in parts if p.status not in ("optimal", "time_limit")), None)
    status = "optimal" if rel_gap <= gap + 1e-12 else failed or "time_limit"
    say(Progress(phase, seconds, objective, bound, rel_gap))
    return Solution(builder.finish(), usage, status, objective, bound, rel_gap, lp_value, seconds, dict(stats))


def _first_plan(part: _Part, gap: float, deadline: float) -> None:
    """The part's LP bound, and a first plan dived from it (HiGHS runs outside the GIL: 2 at once); past the
    deadline the dive stops early (the start plans still count)."""
    time_limit_s = max(0.0, deadline - time.perf_counter())
    lp, part.lp_value = highs.lp(part.model, time_limit_s)
    if part.lp_value is None:
        return
    part.bound = part.lp_value
    if not part.model.integer:
        _offer(part, np.asarray(lp.getSolution().col_value))
        return
    relaxed = part.relaxed = np.asarray(lp.getSolution().col_value)
    first = heuristic.first_plan(part.model, lp, relaxed.copy(), gap, min(GANG_TIME_S, time_limit_s), deadline)
    target = gap / 4 * abs(part.lp_value)
    cost = part.model.arrays()["cost"]
    for _ in range(RINS_ROUNDS):  # while the first plan is off by more than a quarter of the gap
        if first is None or float(np.dot(cost, first)) - part.lp_value <= target or time.perf_counter() > deadline:
            break
        first = heuristic.rins(part.model, relaxed, first, gap, min(RINS_TIME_S, time_limit_s))
    if first is not None:
        _offer(part, first)


def _offer(part: _Part, x: np.ndarray) -> None:
    """Keep ``x`` (feasible for the part's model) when it is the cheapest plan the part has seen."""
    objective = float(np.dot(part.model.arrays()["cost"], x))
    if part.x is None or objective < part.objective:
        part.x, part.first, part.objective = x, x, objective


def _judge(part: _Part, gap: float) -> None:
    if part.x is None or part.lp_value is None:
        return
    part.bound = min(max(part.bound, part.lp_value), part.objective)
    part.status = "optimal" if part.objective - part.bound <= gap * abs(part.objective) else "time_limit"


def _decompose(problem: Problem, part: _Part, gap: float, deadline: float, relax: bool,
               report: ProgressFn) -> None:
    """Fix-and-optimise from the best plan first (a good plan early), then the per-month bounding rows (not
    in the relaxed solve, whose quota increases span months), each within a share of the time left."""
    model = part.model

    def better(x: np.ndarray) -> None:
        _offer(part, x)
        report(Progress("", 0.0, part.objective, min(part.bound, part.objective)))

    left = deadline - time.perf_counter()
    decompose.fix_and_optimise(model, part.x, gap, time.perf_counter() + SEARCH_SHARE * left, better)  # type: ignore[arg-type]
    part.bound = min(part.bound, part.objective)
    if not relax and part.objective - part.bound > gap / 4 * abs(part.objective):
        left = deadline - time.perf_counter()
        if decompose.month_cuts(problem, model, time.perf_counter() + CUT_SHARE * left):
            _, value = highs.lp(model, max(1.0, deadline - time.perf_counter()))
            if value is not None:
                part.bound = min(max(part.bound, value), part.objective)
    report(Progress("", 0.0, part.objective, part.bound))


def _to_improve(parts: list[_Part], budget: float) -> list[_Part]:
    """The fewest parts (largest gaps first) whose MILPs must close for the whole plan to fit the budget;
    parts without a first plan always."""
    must = [p for p in parts if p.x is None]
    rest = sorted((p for p in parts if p.x is not None and p.objective - p.bound > 1e-9),
                  key=lambda p: -(p.objective - p.bound))
    open_gap = sum(p.objective - p.bound for p in rest)
    chosen: list[_Part] = []
    for part in rest:
        if open_gap <= budget * 0.999:
            break
        chosen.append(part)
        open_gap -= part.objective - part.bound
    return must + chosen


def _reporter(say: ProgressFn, parts: list[_Part], i: int, started: float, phase: str) -> ProgressFn:
    """Progress of part i, shown as the whole plan: every other part at its own best plan and bound so far
    (all have a first plan by then), so incumbent, bound and gap are those of a plan that exists."""
    def report(p: Progress) -> None:
        part, others = parts[i], [x for k, x in enumerate(parts) if k != i]
        own = [v for v in (p.incumbent_usd, part.objective if part.x is not None else None) if v is not None]
        incumbent = sum(x.objective for x in others) + min(own) if own else None
        bound = sum(x.bound for x in others) + max(part.bound, p.bound_usd or -math.inf)
        gap = None if incumbent is None or bound is None or incumbent <= 0 else max(0.0, incumbent - bound) / incumbent
        say(Progress(f"{phase} {parts[i].gpu}", time.perf_counter() - started, incumbent, bound, gap))

    return report


def _milp(part: _Part, gap: float, abs_gap: float, time_limit_s: float, progress: ProgressFn) -> None:
    model = part.model
    started = time.perf_counter()
    h, x = _run_milp(model, gap, abs_gap, time_limit_s, progress, part.first)
    cost = model.arrays()["cost"]
    if part.first is not None and x is not None and not highs.trusted(model, h, x):  # again, from scratch
        left = max(1.0, time_limit_s - (time.perf_counter() - started))
        h, x = _run_milp(model, gap, abs_gap, left, progress, None)
    info = h.getInfo()
    if x is not None and highs.feasible(model, x) and (part.x is None or float(np.dot(cost, x)) <= part.objective):
        part.x, part.objective = x, float(np.dot(cost, x))
    if part.x is None:
        raise RuntimeError(f"HiGHS found no feasible plan ({h.modelStatusToString(h.getModelStatus())}); "
                           "the model always has one (everything unserved), so this is a bug.")
    bound = float(info.mip_dual_bound) if model.integer else part.objective
    if not bound >= part.bound:  # the LP optimum (with the month rows) is a bound too
        bound = part.bound
    part.bound = min(bound, part.objective)
    closed = part.objective - part.bound <= max(abs_gap, gap * abs(part.objective)) + 1e-6
    part.status = _status(h.getModelStatus(), closed)


def _stay(problem: Problem, parts: list[_Part], gap: float, threshold: float, deadline: float) -> None:
    """Keep placements put, spending at most what keeps the whole plan within its gap: the slack
    bound / (1 - gap) - objective, shared over the parts in proportion to their own slack; and never so much
    that a part costs more than its start plan (the greedy baseline), so the plan stays no worse than it."""
    objective = sum(p.objective for p in parts)
    slack = max(0.0, min(sum(p.bound for p in parts), objective) / (1 - gap) * (1 - 1e-9) - objective) if gap < 1 \
        else 0.0
    own = [max(0.0, p.bound / (1 - gap) - p.objective) if gap < 1 else 0.0 for p in parts]
    for part, share in zip(parts, own, strict=True):
        if part.x is None or not len(part.x):
            continue
        budget = min(slack * share / sum(own) if sum(own) > 0 else 0.0,
                     max(0.0, part.start_objective - part.objective))
        part.x = stay.stay(problem, part.model, part.x, threshold, budget, deadline)
        part.objective = float(np.dot(part.model.arrays()["cost"], part.x))


def _polish(part: _Part, deadline: float) -> None:
    """Fix every integer column to its rounded value and solve the LP once more: HiGHS accepts integers
    within a tolerance (a gang row's Z of 1e-7 would let a sliver of it run in a second region); then drop
    every prepaid node that saves nothing (capacity/settle.py). The objective only falls."""
    model = part.model
    if part.x is None or not model.integer:
        return
    part.x = settle.prune(model, part.x, deadline, part.start_objective)
    part.objective = float(np.dot(model.arrays()["cost"], part.x))
    part.bound = min(part.bound, part.objective)


def _run_milp(model: Model, gap: float, abs_gap: float, time_limit_s: float, progress: ProgressFn,
              first: np.ndarray | None) -> tuple[highspy.Highs, np.ndarray | None]:
    h = highs.highs_for(model, integral=True, gap=gap, time_limit_s=time_limit_s)
    h.setOptionValue("mip_abs_gap", max(abs_gap, 1e-6))
    if first is not None:
        # with a start, presolve off: faster here, and it sidesteps a HiGHS 1.16 presolve bug (see _milp)
        h.setOptionValue("presolve", "off")
        highs.start(h, first)
    _watch(h, progress, time.perf_counter())
    h.run()
    if h.getInfo().primal_solution_status != highspy.SolutionStatus.kSolutionStatusFeasible:
        return h, None
    return h, np.asarray(h.getSolution().col_value)


def _status(status: highspy.HighsModelStatus, closed: bool) -> str:
    """``optimal`` only when the gap is proven closed; any stop with a plan in hand is ``time_limit``."""
    if closed:
        return "optimal"
    if status in (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kTimeLimit,
                  highspy.HighsModelStatus.kInterrupt, highspy.HighsModelStatus.kSolutionLimit):
        return "time_limit"
    return status.name.removeprefix("k").lower()
