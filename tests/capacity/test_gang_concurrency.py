"""While a gang runs it holds all its GPUs at once: prepaid capacity serves it only with enough GPUs, or with a
paid top-up for the difference (docs/capacity.md, "Concurrency").

By hand. January 2026 has 31 x 24 = 744 hours. Offers in us-east-1, 8-GPU nodes: on demand at $10 per GPU-hour,
a capacity block at $5, charged 840 h whether used or not: 8 x 840 x 5 = $33,600 a node, holding 8 x 744 = 5,952
GPU-hours of January.

The issue's case: a 64-GPU gang needing 56 x 744 = 41,664 GPU-hours (it runs 651 h). Seven blocks hold exactly
41,664 GPU-hours, but only 56 GPUs: the gang cannot run on them alone.
  k blocks, k < 8   prepaid share at most 8k / 64 of the row, the top-up (64 - 8k) / 64 of it on demand:
                    33,600 k + (1 - k / 8) x 41,664 x 10 = 416,640 - 18,480 k   (k = 7: $287,280)
  8 blocks          64 GPUs hold the gang: 8 x 33,600 = $268,800, the optimum
  (the old model:   7 blocks, no top-up, $235,200: GPU-hours fit, concurrency does not)

A 60-GPU gang all January (60 x 744 = 44,640 GPU-hours): 7 blocks (56 GPUs) and a top-up of 4 GPUs on demand,
4 x 744 = 2,976 GPU-hours: 235,200 + 29,760 = $264,960; 8 blocks cost $268,800; all on demand $446,400.
"""

from __future__ import annotations

import math

import pytest
from plan_helpers import offer, quota, row, verify

from capacity import check, greedy, optimize, problem
from capacity.plan import Plan
from capacity.schema import CommitmentLine, Market, Option, PlanLine
from components.catalog import Cloud

JAN, H = "2026-01", 744
OFFERS = [offer("us-east-1", Option.ON_DEMAND, 10.0), offer("us-east-1", Option.CAPACITY_BLOCK, 5.0)]
QUOTAS = [quota("us-east-1", Market.ON_DEMAND, 64), quota("us-east-1", Market.SPOT, 0)]
GANG64 = [row(JAN, "pretrain", 56 * H, gang=64)]
BLOCK_USD = 8 * 840 * 5.0


def hours_by_option(plan: Plan) -> dict[Option, float]:
    out: dict[Option, float] = {}
    for line in plan.lines:
        out[line.option] = out.get(line.option, 0.0) + line.gpu_hours
    return out


def held_gpus(plan: Plan) -> int:
    return sum(c.gpus for c in plan.commitments)


@pytest.mark.parametrize("quotas", [QUOTAS, None])
def test_a_64_gpu_gang_is_never_held_on_56_prepaid_gpus_without_a_top_up(quotas: list | None) -> None:
    built = problem.build(GANG64, OFFERS, quotas)
    plan = optimize.solve(built).plan
    verify(GANG64, OFFERS, quotas, plan, built.penalty)
    got = hours_by_option(plan)
    prepaid, paid = got.get(Option.CAPACITY_BLOCK, 0.0), got.get(Option.ON_DEMAND, 0.0)
    assert prepaid + paid == pytest.approx(56 * H)
    held = held_gpus(plan)
    assert held >= 64 or paid >= (64 - held) / 64 * 56 * H - 1e-6  # the rule, restated here
    assert [(c.option, c.nodes) for c in plan.commitments] == [(Option.CAPACITY_BLOCK, 8)]
    assert math.isclose(plan.total_usd, 8 * BLOCK_USD)  # $268,800


def test_a_60_gpu_gang_on_seven_blocks_gets_a_four_gpu_top_up() -> None:
    demand = [row(JAN, "pretrain", 60 * H, gang=60)]
    built = problem.build(demand, OFFERS, QUOTAS)
    plan = optimize.solve(built).plan
    verify(demand, OFFERS, QUOTAS, plan, built.penalty)
    assert [(c.option, c.nodes) for c in plan.commitments] == [(Option.CAPACITY_BLOCK, 7)]
    got = hours_by_option(plan)
    assert got[Option.ON_DEMAND] == pytest.approx(4 * H)  # 2,976 GPU-hours: 4 GPUs the whole run
    assert got[Option.CAPACITY_BLOCK] == pytest.approx(56 * H)
    assert math.isclose(plan.total_usd, 7 * BLOCK_USD + 4 * H * 10.0)  # $264,960


def test_greedy_buys_no_blocks_that_cannot_hold_the_gang() -> None:
    # 41,664 GPU-hours fill exactly 7 blocks, which hold 56 of the 64 GPUs: greedy, which buys for a gang only
    # what holds it whole, runs it on demand: 41,664 x 10 = $416,640.
    built = problem.build(GANG64, OFFERS, QUOTAS)
    plan = greedy.greedy(built)
    verify(GANG64, OFFERS, QUOTAS, plan, built.penalty)
    assert plan.commitments == []
    assert math.isclose(plan.total_usd, 416_640.0)


def _line(option: Option, gpu_hours: float) -> PlanLine:
    return PlanLine(month=JAN, team="pretrain", gpu="H100", cloud=Cloud.AWS, region="us-east-1", option=option,
                    gpu_hours=gpu_hours, usd=gpu_hours * (10.0 if option is Option.ON_DEMAND else 0.0),
                    gang_gpus=64, spot_ok=False)


SEVEN_BLOCKS = [CommitmentLine(cloud=Cloud.AWS, region="us-east-1", machine_type="h100-m8", gpu="H100",
                               option=Option.CAPACITY_BLOCK, start_month=JAN, nodes=7, gpus=56,
                               usd_total=7 * BLOCK_USD)]


def test_the_checker_catches_a_gang_held_on_fewer_prepaid_gpus_than_it_needs() -> None:
    # The plan: the whole gang on seven blocks, no top-up.
    crafted = check.check(GANG64, OFFERS, QUOTAS, [_line(Option.CAPACITY_BLOCK, 56 * H)], SEVEN_BLOCKS)
    assert any("fewer than its 64" in v and "= 5208.000" in v for v in crafted.violations), crafted.violations
    # At the boundary: the top-up is 8 / 64 x 41,664 = 5,208 GPU-hours on demand, the rest (36,456) on the blocks.
    topped = [_line(Option.CAPACITY_BLOCK, 36_456.0), _line(Option.ON_DEMAND, 5_208.0)]
    assert check.check(GANG64, OFFERS, QUOTAS, topped, SEVEN_BLOCKS).ok
    short = [_line(Option.CAPACITY_BLOCK, 36_457.0), _line(Option.ON_DEMAND, 5_207.0)]
    assert not check.check(GANG64, OFFERS, QUOTAS, short, SEVEN_BLOCKS).ok


def test_unserved_hours_of_a_gang_come_out_of_its_prepaid_share() -> None:
    # The top-up is sized for the whole row (5,208 GPU-hours here), whatever part of it the plan leaves unserved:
    # 4,000 on the blocks and 5,208 on demand pass (32,456 unserved); 4,000 and 4,000 do not, although 4,000 of
    # 8,000 served is more paid than 8 / 64 of it. The exact proportional rule would multiply two decisions
    # (docs/capacity.md, "Concurrency").
    assert check.check(GANG64, OFFERS, QUOTAS,
                       [_line(Option.CAPACITY_BLOCK, 4_000.0), _line(Option.ON_DEMAND, 5_208.0)], SEVEN_BLOCKS).ok
    assert not check.check(GANG64, OFFERS, QUOTAS,
                           [_line(Option.CAPACITY_BLOCK, 4_000.0), _line(Option.ON_DEMAND, 4_000.0)], SEVEN_BLOCKS).ok
