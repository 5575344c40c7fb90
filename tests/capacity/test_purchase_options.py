"""The planner buys capacity blocks, reservations and flex-start where offered, at what they cost.

Expected costs are hand computed from the planning semantics in docs/capacity.md: a capacity block is bought
for a whole month and charged 840 h (35 days, the shortest block covering any month) x GPUs x
its rate whether used or not; flex-start is charged per GPU-hour used.
"""

from __future__ import annotations

import math

import pytest
from plan_helpers import offer, row, verify

from capacity import optimize, problem
from capacity.plan import Plan
from capacity.schema import Option

JAN_HOURS = 31 * 24  # 2026-01
# AWS sells capacity blocks in 1-day steps up to 14 days, then 7-day steps
# (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-purchase.html): the shortest block covering a
# month of 29-31 days is 35 days = 840 h (docs/capacity.md, "Purchase options").
BLOCK_HOURS = 840


@pytest.mark.parametrize(("gpu_hours", "buys_block"), [(8 * JAN_HOURS, True), (2000.0, False)])
def test_a_capacity_block_is_bought_only_when_its_whole_prepaid_charge_is_cheaper(gpu_hours: float,
                                                                                  buys_block: bool) -> None:
    offers = [offer("us-east-1", Option.ON_DEMAND, 10.0), offer("us-east-1", Option.CAPACITY_BLOCK, 5.0)]
    demand = [row("2026-01", "a", gpu_hours)]
    built = problem.build(demand, offers, None)
    plan = optimize.solve(built).plan
    verify(demand, offers, None, plan, built.penalty)
    block_usd = 8 * BLOCK_HOURS * 5.0  # 8 x 840 x 5 = 33,600: one 8-GPU block, charged in full
    if buys_block:  # on-demand would be 5,952 x 10 = 59,520
        assert [(c.option, c.nodes, c.usd_total) for c in plan.commitments] == [(Option.CAPACITY_BLOCK, 1, block_usd)]
        assert math.isclose(plan.objective_usd, block_usd)
    else:  # 2,000 x 10 = 20,000 on demand beats a 33,600 block: using less saves nothing on a block
        assert plan.commitments == []
        assert math.isclose(plan.objective_usd, 20000.0)


def solved(demand: list, offers: list) -> Plan:
    built = problem.build(demand, offers, None)
    plan = optimize.solve(built).plan
    verify(demand, offers, None, plan, built.penalty)
    return plan


def test_flex_start_serves_where_it_is_the_only_usage_option_and_lines_say_so() -> None:
    offers = [offer("us-central1", Option.FLEX_START, 6.0), offer("us-central1", Option.SPOT, 4.0)]
    plan = solved([row("2026-01", "a", 100.0)], offers)
    assert [(line.option, line.gpu_hours, line.usd) for line in plan.lines] == [(Option.FLEX_START, 100.0, 600.0)]


def test_flex_start_and_on_demand_the_cheaper_serves() -> None:
    offers = [offer("r1", Option.ON_DEMAND, 10.0), offer("r1", Option.FLEX_START, 7.0)]
    plan = solved([row("2026-01", "a", 10.0)], offers)
    assert {line.option for line in plan.lines} == {Option.FLEX_START}
    assert math.isclose(plan.objective_usd, 70.0)
