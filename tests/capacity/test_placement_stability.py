"""Placements stay put unless moving saves more than a threshold (docs/capacity.md, "Stability").

By hand: January 2026 has 744 hours, February 672, March 744. Prices per GPU-hour, on demand, two regions.
"""

from __future__ import annotations

import math
import time

import pytest
from plan_helpers import offer, quota, row, verify

from capacity import milp, optimize, problem, stay
from capacity.decode import encode
from capacity.plan import Plan, PlanBuilder
from capacity.schema import Market, Option
from components.catalog import Cloud

JAN, FEB, MAR = "2026-01", "2026-02", "2026-03"


def regions(plan: Plan, team: str) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for line in plan.lines:
        if line.team == team:
            out.setdefault(line.month, {}).setdefault(line.region, 0.0)
            out[line.month][line.region] += line.gpu_hours
    return out


def test_work_that_jumps_between_two_equal_cost_regions_is_kept_in_one() -> None:
    # Without quotas, r1 and r2 both at $10: a plan with the team in r1, r2, r1 costs what one region does,
    # 8 x (744 + 672 + 744) x 10 = $172,800. Settled, every month is where January was.
    offers = [offer("r1", Option.ON_DEMAND, 10.0), offer("r2", Option.ON_DEMAND, 10.0)]
    demand = [row(JAN, "post", 8 * 744), row(FEB, "post", 8 * 672), row(MAR, "post", 8 * 744)]
    built = problem.build(demand, offers, None)
    model = milp.build(built, gpu="H100")
    jumping = PlanBuilder(built)
    for r, region in enumerate(["r1", "r2", "r1"]):
        jumping.serve(r, built.sites[(Cloud.AWS, region, "H100")], Option.ON_DEMAND, demand[r].gpu_hours)
    x = encode(built, model, jumping.finish())
    assert x is not None
    settled = stay.stay(built, model, x, threshold=0.001, budget=0.0, deadline=time.perf_counter() + 60)
    cost = model.arrays()["cost"]
    assert math.isclose(float(cost @ settled), 172_800.0)
    where = {(model.units[u].month, site.region) for (u, site), col in model.served.items() if settled[col] > 1e-6}
    assert where == {(0, "r1"), (1, "r1"), (2, "r1")}


# January: 16 GPUs of spreadable work; r2 (cheaper) has quota for 8, so 8 run in each region. February: 8 GPUs.
# Moving r1's half to r2 in February saves 4 x 672 x (10 - p2). At p2 = 9.995 that is $0.005 a GPU-hour, 0.05 % of
# the $10 it costs in r1: below the 0.1 % threshold, so half stays in r1. At p2 = 9.98 it is 0.2 %: it moves.
@pytest.mark.parametrize(("p2", "february", "total"), [
    (9.995, {"r1": 4 * 672, "r2": 4 * 672}, 8 * 744 * 10 + 8 * 744 * 9.995 + 4 * 672 * 10 + 4 * 672 * 9.995),
    (9.98, {"r2": 8 * 672}, 8 * 744 * 10 + 8 * 744 * 9.98 + 8 * 672 * 9.98),
])
def test_work_moves_only_when_that_saves_more_than_the_threshold(p2: float, february: dict, total: float) -> None:
    offers = [offer("r1", Option.ON_DEMAND, 10.0), offer("r2", Option.ON_DEMAND, p2)]
    quotas = [quota("r1", Market.ON_DEMAND, 16), quota("r2", Market.ON_DEMAND, 8)]
    demand = [row(JAN, "post", 16 * 744), row(FEB, "post", 8 * 672)]
    built = problem.build(demand, offers, quotas)
    solution = optimize.solve(built)
    verify(demand, offers, quotas, solution.plan, built.penalty)
    got = regions(solution.plan, "post")
    assert got[JAN] == {"r1": pytest.approx(8 * 744), "r2": pytest.approx(8 * 744)}
    assert got[FEB] == {k: pytest.approx(v) for k, v in february.items()}
    assert math.isclose(solution.plan.total_usd, total)  # $172,756.80 kept; $172,573.44 moved
    assert solution.status == "optimal" and solution.gap <= 0.001


def test_without_a_threshold_the_solver_choice_stands() -> None:
    offers = [offer("r1", Option.ON_DEMAND, 10.0), offer("r2", Option.ON_DEMAND, 9.995)]
    quotas = [quota("r1", Market.ON_DEMAND, 16), quota("r2", Market.ON_DEMAND, 8)]
    demand = [row(JAN, "post", 16 * 744), row(FEB, "post", 8 * 672)]
    solution = optimize.solve(problem.build(demand, offers, quotas), stay_threshold=0.0)
    assert regions(solution.plan, "post")[FEB] == {"r2": pytest.approx(8 * 672)}  # the cheapest: $53,733.12


def test_teams_in_a_pool_keep_their_region() -> None:
    # Spreadable rows of one GPU are planned together; which team runs where costs nothing either way. Each
    # region holds 8 GPUs at the same price: a goes to one in January, b to the other, and each stays there in
    # February although February lists b first.
    offers = [offer("r1", Option.ON_DEMAND, 10.0), offer("r2", Option.ON_DEMAND, 10.0)]
    quotas = [quota("r1", Market.ON_DEMAND, 8), quota("r2", Market.ON_DEMAND, 8)]
    demand = [row(JAN, "a", 8 * 744), row(JAN, "b", 8 * 744), row(FEB, "b", 8 * 672), row(FEB, "a", 8 * 672)]
    built = problem.build(demand, offers, quotas)
    plan = optimize.solve(built).plan
    verify(demand, offers, quotas, plan, built.penalty)
    for team in ("a", "b"):
        where = regions(plan, team)
        assert len(where[JAN]) == 1 and where[JAN].keys() == where[FEB].keys(), where
    assert regions(plan, "a")[JAN].keys() != regions(plan, "b")[JAN].keys()
