"""No commitment, reservation or capacity block is bought without a saving; at equal cost the flexible option
serves (docs/capacity.md, "Purchase options").

Expected values are computed here by hand: January 2026 has 31 x 24 = 744 hours, April 2026 30 x 24 = 720. A
reservation held for a month is charged every hour of that month, whether used or not.
"""

from __future__ import annotations

import math
import time

import pytest
from plan_helpers import offer, row, verify

from capacity import check, greedy, highs, milp, optimize, problem, settle
from capacity.decode import encode
from capacity.plan import PlanBuilder
from capacity.schema import CommitmentLine, Option, PlanLine
from components.catalog import Cloud

JAN, APR = "2026-01", "2026-04"
JAN_H, APR_H = 744, 720


def solved(demand: list, offers: list) -> optimize.Solution:
    built = problem.build(demand, offers, None)
    solution = optimize.solve(built)
    verify(demand, offers, None, solution.plan, built.penalty)
    return solution


def test_a_reservation_at_the_on_demand_rate_is_never_bought_in_any_month() -> None:
    # The bundled example bought these in exactly the 31-day months: 8 GPUs x 744 h x $10 reserved equals
    # 5,952 GPU-hours x $10 on demand. Equal cost: the flexible option serves.
    offers = [offer("us-west-2", Option.ON_DEMAND, 10.0), offer("us-west-2", Option.RESERVATION, 10.0)]
    demand = [row(JAN, "post", 8 * JAN_H), row(APR, "post", 8 * APR_H)]
    built = problem.build(demand, offers, None)
    assert [o.option for o in built.never_saving] == [Option.RESERVATION]
    plan = solved(demand, offers).plan
    assert plan.commitments == []
    assert {line.option for line in plan.lines} == {Option.ON_DEMAND}
    assert math.isclose(plan.total_usd, 8 * 744 * 10.0 + 8 * 720 * 10.0)  # 59,520 + 57,600 = 117,120


def test_a_reservation_is_charged_the_hours_of_its_month() -> None:
    # $9 reserved against $10 on demand, 8 GPUs used all month: April's reservation is 8 x 720 x 9 = 51,840
    # (not 8 x 744 x 9 = 53,568), January's 8 x 744 x 9 = 53,568; on demand would be 57,600 and 59,520.
    offers = [offer("us-west-2", Option.ON_DEMAND, 10.0), offer("us-west-2", Option.RESERVATION, 9.0)]
    demand = [row(JAN, "post", 8 * JAN_H), row(APR, "post", 8 * APR_H)]
    plan = solved(demand, offers).plan
    assert sorted((c.start_month, c.nodes, c.usd_total) for c in plan.commitments) == [
        (JAN, 1, pytest.approx(53_568.0)), (APR, 1, pytest.approx(51_840.0))]
    assert math.isclose(plan.total_usd, 53_568.0 + 51_840.0)


@pytest.mark.parametrize(("gpu_hours", "reserved"), [(2976.0, False), (2977.0, True)])
def test_a_node_that_only_breaks_even_is_not_bought(gpu_hours: float, reserved: bool) -> None:
    # One 8-GPU reservation node at $5 costs 8 x 744 x 5 = 29,760 for January and holds 5,952 GPU-hours.
    # 2,976 GPU-hours on demand at $10 cost 29,760 too: no saving, so no reservation (the tie goes to the
    # flexible option). One GPU-hour more (2,977: 29,770 on demand) and the reservation saves $10.
    offers = [offer("us-west-2", Option.ON_DEMAND, 10.0), offer("us-west-2", Option.RESERVATION, 5.0)]
    plan = solved([row(JAN, "post", gpu_hours)], offers).plan
    if reserved:
        assert [(c.option, c.nodes, c.usd_total) for c in plan.commitments] == [(Option.RESERVATION, 1, 29_760.0)]
        assert math.isclose(plan.total_usd, 29_760.0)
    else:
        assert plan.commitments == []
        assert math.isclose(plan.total_usd, 29_760.0)


def test_greedy_takes_the_flexible_option_at_equal_price() -> None:
    # A 1-year commitment at $5 over a 12-month horizon of 2026 (8,760 h) spreads to exactly $5 per usable
    # hour, the same as spot at $5: the greedy baseline takes spot, which it can stop paying any time.
    offers = [offer("r1", Option.ON_DEMAND, 10.0), offer("r1", Option.SPOT, 5.0), offer("r1", Option.COMMIT_1Y, 5.0)]
    months = [f"2026-{m:02d}" for m in range(1, 13)]
    demand = [row(m, "a", 8 * 24 * 31, spot_ok=True) for m in months]
    plan = greedy.greedy(problem.build(demand, offers, None))
    assert plan.commitments == []
    assert {line.option for line in plan.lines} == {Option.SPOT}


def test_the_checker_charges_a_reservation_the_hours_of_its_month() -> None:
    offers = [offer("us-west-2", Option.ON_DEMAND, 10.0), offer("us-west-2", Option.RESERVATION, 9.0)]
    demand = [row(APR, "post", 8 * APR_H)]
    used = [PlanLine(month=APR, team="post", gpu="H100", cloud=Cloud.AWS, region="us-west-2",
                     option=Option.RESERVATION, gpu_hours=8 * APR_H, usd=0.0, gang_gpus=1, spot_ok=False)]

    def held(usd: float) -> list[CommitmentLine]:
        return [CommitmentLine(cloud=Cloud.AWS, region="us-west-2", machine_type="h100-m8", gpu="H100",
                               option=Option.RESERVATION, start_month=APR, nodes=1, gpus=8, usd_total=usd)]

    assert check.check(demand, offers, None, used, held(8 * 720 * 9.0)).ok
    flat = check.check(demand, offers, None, used, held(8 * 744 * 9.0)).violations
    assert any("the full term is 51840.00" in v for v in flat)


@pytest.mark.parametrize(("gpu_hours", "kept"), [(2976.0, 0), (2977.0, 1)])
def test_settling_drops_a_bought_node_that_saves_nothing(gpu_hours: float, kept: int) -> None:
    # Whatever plan the solver ends on (HiGHS may return either of two equal-cost plans), settling tries every
    # bought node without: the break-even reservation above goes, the one saving $10 stays.
    offers = [offer("us-west-2", Option.ON_DEMAND, 10.0), offer("us-west-2", Option.RESERVATION, 5.0)]
    built = problem.build([row(JAN, "post", gpu_hours)], offers, None)
    model = milp.build(built, gpu="H100")
    site = built.sites[(Cloud.AWS, "us-west-2", "H100")]
    reserved = PlanBuilder(built)
    reserved.buy(site.commits[0], 0, 1)
    reserved.serve(0, site, Option.RESERVATION, gpu_hours)
    x = encode(built, model, reserved.finish())
    assert x is not None and highs.feasible(model, x)
    assert math.isclose(float(model.arrays()["cost"] @ x), 29_760.0)
    settled = settle.prune(model, x, deadline=time.perf_counter() + 60)
    assert [round(settled[col]) for col in model.nodes.values()] == [kept]
    assert math.isclose(float(model.arrays()["cost"] @ settled), 29_760.0 if kept else gpu_hours * 10.0)
