"""Never worse than the baseline, honest status, and bounding rows that never cut off a plan.

Instances are small members of the quota-bound family (capacity/synth.py, generate_hard): gang rows of up
to 512 GPUs, quotas that bind, a few months and teams so each solve takes well under a second.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from plan_helpers import offer, quota, row, verify

from capacity import decompose, greedy, highs, milp, optimize, planner, problem, synth
from capacity.schema import Market, Option


def small(seed: int, months: int = 4, teams: int = 8) -> tuple[synth.Instance, problem.Problem]:
    inst = synth.generate_hard(synth.HardSpec("test", months=months, teams=teams, start="2026-01"), seed=seed)
    return inst, problem.build(inst.demand, inst.offers, inst.quotas)


def test_on_an_instance_the_milp_struggles_with_the_greedy_start_wins() -> None:
    # this instance (6 months, 12 teams, seed 4) measured on 2 loaded cores: with no time, the MILP alone
    # ends 30 % above greedy at a 23 % gap; handed the greedy plan, the planner can only do as well or better
    inst, built = small(4, months=6, teams=12)
    baseline = greedy.greedy(built)
    alone = optimize.solve(built, time_limit_s=0.0)
    started = optimize.solve(built, time_limit_s=0.0, starts=[baseline])
    verify(inst.demand, inst.offers, inst.quotas, started.plan, built.penalty)
    assert started.plan.objective_usd <= baseline.objective_usd * (1 + 1e-9)
    assert started.plan.objective_usd <= alone.plan.objective_usd * (1 + 1e-9)
    for solution in (alone, started):  # the status tells the truth either way
        assert solution.lower_bound_usd <= solution.objective_usd
        assert solution.gap == pytest.approx(1 - solution.lower_bound_usd / solution.objective_usd)
        assert (solution.status == "optimal") == (solution.gap <= optimize.DEFAULT_GAP)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.sampled_from([0.0, 0.3, 2.0]))
def test_the_plan_is_never_worse_than_greedy_whatever_the_time(seed: int, time_limit_s: float) -> None:
    inst, built = small(seed, months=3, teams=6)
    baseline = greedy.greedy(built)
    solution = optimize.solve(built, time_limit_s=time_limit_s, starts=[baseline])
    verify(inst.demand, inst.offers, inst.quotas, solution.plan, built.penalty)
    assert solution.plan.objective_usd <= baseline.objective_usd * (1 + 1e-9)
    proven = solution.objective_usd - solution.lower_bound_usd <= optimize.DEFAULT_GAP * solution.objective_usd + 1e-6
    assert (solution.status == "optimal") == proven


def test_a_planning_run_reports_whether_its_quota_requests_are_proven() -> None:
    inst, _ = small(5)
    run = planner.plan(inst.demand, inst.offers, inst.quotas, time_limit_s=20.0)
    assert run.plan.objective_usd <= run.greedy.objective_usd * (1 + 1e-9)
    assert run.relaxed is not None  # the family leaves demand unserved, so quota requests are computed
    assert run.requests_proven == (run.relaxed.status == "optimal")
    assert run.relaxed.plan.objective_usd is not None


def test_month_rows_give_the_lp_the_gangs_it_would_split() -> None:
    # January (744 h); two regions with 16 GPUs of on-demand quota each at 1 USD/GPU-hour; three gang rows of
    # 16 GPUs, 12 x 744 GPU-hours each. The LP splits the third gang over both regions' 4 x 744 spare hours:
    # 4 x 744 unserved. Whole gangs: each region runs one gang and 4 x 744 h of another (a gang row may be
    # partly served, never split), so 8 x 744 h go unserved. Penalty 1000 USD per GPU-hour.
    h = 744
    demand = [row("2026-01", team, 12 * h, gang=16) for team in ("a", "b", "c")]
    offers = [offer(r, Option.ON_DEMAND, 1.0) for r in ("r1", "r2")]
    quotas = [quota(r, Market.ON_DEMAND, 16) for r in ("r1", "r2")]
    built = problem.build(demand, offers, quotas, penalty=1000.0)
    model = milp.build(built)
    assert highs.lp(model, 60)[1] == pytest.approx(32 * h * 1.0 + 4 * h * 1000.0)
    assert decompose.month_cuts(built, model, deadline=math.inf) == 1
    assert highs.lp(model, 60)[1] == pytest.approx(28 * h * 1.0 + 8 * h * 1000.0)
    solution = optimize.solve(built)
    assert solution.status == "optimal"
    assert solution.objective_usd == pytest.approx(28 * h * 1.0 + 8 * h * 1000.0)


def test_month_rows_never_cut_off_the_optimum() -> None:
    raised = []
    for seed, gpu in [(seed, gpu) for seed in (4, 7) for gpu in synth.HARD_GPUS]:
        _, built = small(seed, months=6, teams=12)
        model = milp.build(built, gpu=gpu)
        if not model.num_col:
            continue
        exact = highs.highs_for(model, integral=True, gap=0.0, time_limit_s=60)
        exact.run()
        optimum = exact.getInfo().objective_function_value
        _, before = highs.lp(model, 60)
        decompose.month_cuts(built, model, deadline=math.inf)
        _, after = highs.lp(model, 60)
        assert before is not None and after is not None
        assert after <= optimum * (1 + 1e-7) + 1e-6  # the rows are valid: the true optimum satisfies them
        x = np.asarray(exact.getSolution().col_value)
        assert highs.feasible(model, x, tol=1e-5)  # and so does the optimal plan itself
        raised.append(after >= before * (1 - 1e-9))  # rows only ever add information
    assert raised and all(raised)
