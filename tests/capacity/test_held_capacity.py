"""The planner starts from what is already bought: capacity the fleet holds (a recorded ledger's capacity blocks and
reservations) is supply the plan uses first, at sunk cost, only within its term and at its own site; the plan buys
only what it lacks (docs/capacity.md, "Held capacity").

By hand. January 2027 has 31 x 24 = 744 hours. Offers in us-east-1, 8-GPU H100 nodes: on demand $10 per GPU-hour,
a capacity block $5, charged 840 h whether used or not: 8 x 840 x 5 = $33,600 a node, holding 8 x 744 = 5,952
GPU-hours of January. The fleet holds a block of 64 GPUs (8 nodes) for the whole month: 64 x 744 = 47,616 GPU-hours.

* Demand of 47,616 GPU-hours (one 64-GPU gang all month): the block holds it: nothing bought, $0 spent.
* Demand of 80 x 744 = 59,520 GPU-hours (jobs that may spread): the block holds 47,616; the other 11,904 are
  16 GPUs all month, two block nodes ($67,200; on demand they would cost $119,040): the plan buys 2 nodes.
* The block ends on 2027-01-16 00:00 UTC: it holds 64 x 15 x 24 = 23,040 GPU-hours of January. Demand of
  47,616 leaves 24,576: four new nodes hold 23,808 ($134,400) and 768 run on demand ($7,680): $142,080 (three
  nodes and 6,720 on demand cost $168,000, five nodes $168,000).
* Held 56 GPUs (7 nodes) and a 64-GPU gang of 56 x 744 = 41,664 GPU-hours: on the held GPUs alone the gang needs
  a top-up of 8/64 x 41,664 = 5,208 GPU-hours on demand ($52,080); one more block node makes 64 GPUs ($33,600),
  the cheaper. Without a block offer the plan pays the $52,080 top-up.
"""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from plan_helpers import offer, row

from capacity import check, greedy, planner, problem
from capacity.plan import Plan
from capacity.schema import HeldRow, Option, PlanLine
from components.catalog import Cloud

JAN, H = "2027-01", 744
OFFERS = [offer("us-east-1", Option.ON_DEMAND, 10.0), offer("us-east-1", Option.CAPACITY_BLOCK, 5.0)]
WHOLE_JANUARY = (dt.datetime(2026, 12, 20, 11, 30, tzinfo=dt.UTC), dt.datetime(2027, 2, 1, 11, 30, tzinfo=dt.UTC))
MID_JANUARY = dt.datetime(2027, 1, 16, tzinfo=dt.UTC)


def block(gpus: int = 64, end: dt.datetime = WHOLE_JANUARY[1], region: str = "us-east-1",
          gpu: str = "H100") -> HeldRow:
    return HeldRow(id="cr-0a1b2c3d4e5f60718", cloud=Cloud.AWS, region=region, machine_type=f"{gpu.lower()}-m8",
                   gpu=gpu, gpus=gpus, option=Option.CAPACITY_BLOCK, start=WHOLE_JANUARY[0], end=end,
                   usd_per_hour=gpus * 5.0)


def by_option(plan: Plan) -> dict[Option, float]:
    out: dict[Option, float] = {}
    for line in plan.lines:
        out[line.option] = out.get(line.option, 0.0) + line.gpu_hours
    return out


def bought(plan: Plan) -> list[tuple[Option, int]]:
    return [(c.option, c.nodes) for c in plan.commitments]


def run(demand: list, held: list[HeldRow], offers: list = OFFERS) -> planner.Run:
    result = planner.plan(demand, offers, None, time_limit_s=30, held=held)
    assert result.verdict.ok, result.verdict.violations
    assert result.verdict.total_usd == pytest.approx(result.plan.total_usd)
    return result


def test_demand_the_held_block_can_hold_buys_nothing() -> None:
    demand = [row(JAN, "pretrain", 64 * H, gang=64)]
    result = run(demand, [block()])
    assert bought(result.plan) == []
    assert by_option(result.plan) == {Option.CAPACITY_BLOCK: pytest.approx(47_616)}
    assert result.plan.total_usd == 0
    assert bought(result.greedy) == [] and result.greedy.total_usd == 0  # the baseline starts from it too


def test_demand_beyond_the_held_block_buys_only_the_difference() -> None:
    demand = [row(JAN, "research", 80 * H)]
    result = run(demand, [block()])
    assert bought(result.plan) == [(Option.CAPACITY_BLOCK, 2)]
    assert result.plan.total_usd == pytest.approx(67_200)
    assert by_option(result.plan) == {Option.CAPACITY_BLOCK: pytest.approx(59_520)}


def test_a_block_ending_mid_month_serves_only_its_hours() -> None:
    demand = [row(JAN, "research", 64 * H)]
    result = run(demand, [block(end=MID_JANUARY)])
    assert bought(result.plan) == [(Option.CAPACITY_BLOCK, 4)]
    assert by_option(result.plan) == {Option.CAPACITY_BLOCK: pytest.approx(23_040 + 23_808),
                                      Option.ON_DEMAND: pytest.approx(768)}
    assert result.plan.total_usd == pytest.approx(142_080)


@pytest.mark.parametrize(("offers", "expected_usd", "nodes"), [(OFFERS, 33_600, [(Option.CAPACITY_BLOCK, 1)]),
                                                               (OFFERS[:1], 52_080, [])])
def test_held_gpus_fewer_than_a_gang_need_a_top_up(offers: list, expected_usd: float, nodes: list) -> None:
    demand = [row(JAN, "pretrain", 56 * H, gang=64)]
    result = run(demand, [block(gpus=56)], offers)
    assert bought(result.plan) == nodes
    assert result.plan.total_usd == pytest.approx(expected_usd)
    if not nodes:
        assert by_option(result.plan)[Option.ON_DEMAND] == pytest.approx(5_208)


def test_held_capacity_serves_only_its_own_site_and_gpu() -> None:
    demand = [row(JAN, "research", 80 * H)]
    elsewhere = run(demand, [block(region="us-west-2")])  # no offer there: the held block still serves there
    assert {(line.region, line.option) for line in elsewhere.plan.lines} == {("us-west-2", Option.CAPACITY_BLOCK),
                                                                             ("us-east-1", Option.CAPACITY_BLOCK)}
    assert bought(elsewhere.plan) == [(Option.CAPACITY_BLOCK, 2)]
    other_gpu = run(demand, [block(gpu="A100-80GB")])  # an A100 block holds no H100 work
    assert bought(other_gpu.plan) == [(Option.CAPACITY_BLOCK, 10)]
    assert other_gpu.plan.total_usd == pytest.approx(10 * 33_600)


def _line(option: Option, gpu_hours: float, month: str = JAN) -> PlanLine:
    return PlanLine(month=month, team="research", gpu="H100", cloud=Cloud.AWS, region="us-east-1", option=option,
                    gpu_hours=gpu_hours, usd=0.0 if option.is_commit else 10.0 * gpu_hours, gang_gpus=1,
                    spot_ok=False)


def test_the_checker_accepts_held_supply_and_catches_use_past_its_end() -> None:
    demand = [row(JAN, "research", 64 * H)]
    honest = [_line(Option.CAPACITY_BLOCK, 23_040), _line(Option.ON_DEMAND, 24_576)]
    assert check.check(demand, OFFERS, None, honest, [], held=[block(end=MID_JANUARY)]).ok
    crafted = [_line(Option.CAPACITY_BLOCK, 47_616)]  # the whole month on a block that ends on the 16th
    violations = check.check(demand, OFFERS, None, crafted, [], held=[block(end=MID_JANUARY)]).violations
    assert violations == ["2027-01 aws/us-east-1/H100: 47616.000 capacity_block GPU-hours used, 23040.000 "
                          "committed or held"]
    feb = [row("2027-02", "research", 64 * 672)]  # of February only the 11.5 h to 1 Feb 11:30: 64 x 11.5 = 736
    past = check.check(feb, OFFERS, None, [_line(Option.CAPACITY_BLOCK, 64 * 672, "2027-02")], [],
                       held=[block()]).violations
    assert past == ["2027-02 aws/us-east-1/H100: 43008.000 capacity_block GPU-hours used, 736.000 committed or held"]
    assert not check.check(demand, OFFERS, None, crafted, [], held=[block()]).violations  # within its term


def test_greedy_uses_held_first() -> None:
    demand = [row(JAN, "research", 80 * H)]
    plan = greedy.greedy(problem.build(demand, OFFERS, None, held=[block()]))
    assert bought(plan) == [(Option.CAPACITY_BLOCK, 2)]
    assert plan.total_usd == pytest.approx(67_200)


@st.composite
def _instance(draw: st.DrawFn) -> tuple[list, list[HeldRow]]:
    demand = [row(month, f"t{i}", draw(st.integers(0, 120)) * 372, gang=draw(st.sampled_from([1, 8, 64])))
              for month in ("2027-01", "2027-02") for i in range(draw(st.integers(1, 2)))]
    start = dt.datetime(2027, 1, 1, tzinfo=dt.UTC) + dt.timedelta(days=draw(st.integers(-5, 40)))
    ends = draw(st.one_of(st.none(), st.integers(1, 60)))
    return demand, [HeldRow(id="cr-x", cloud=Cloud.AWS, region="us-east-1", machine_type="h100-m8", gpu="H100",
                            gpus=8 * draw(st.integers(1, 12)), option=Option.CAPACITY_BLOCK, start=start,
                            end=None if ends is None else start + dt.timedelta(days=ends))]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_instance())
def test_held_capacity_never_costs_more(instance: tuple[list, list[HeldRow]]) -> None:
    """Without quotas a plan that ignores the held capacity stays feasible, so holding capacity never raises the
    objective (both within their gaps); the independent checker accepts both plans (``run``)."""
    demand, held = instance
    if not any(d.gpu_hours for d in demand):
        return
    with_held, without = run(demand, held), run(demand, [])
    assert with_held.plan.objective_usd <= without.plan.objective_usd * (1 + 2 * problem.DEFAULT_GAP) + 1e-6


def test_prepaid_hours_count_against_the_earliest_ending_held_capacity_first() -> None:
    """Two blocks at one site: A ends on 16 January (64 x 360 = 23,040 GPU-hours), B holds 64 GPUs all January
    (47,616). 30,000 prepaid GPU-hours run there: A's 23,040 first, then 6,960 of B (40,656 of B idle). February's
    work (5,000 GPU-hours on demand) and 1,000 unserved are what runs after A from elsewhere; B ends with the
    horizon, so it does not end inside the plan."""
    from capacity.held import uses
    from capacity.plan import Plan
    from capacity.schema import ShortfallLine

    a = block(end=MID_JANUARY).model_copy(update={"id": "cr-a"})
    b = block().model_copy(update={"id": "cr-b", "end": dt.datetime(2027, 3, 1, tzinfo=dt.UTC)})
    lines = [_line(Option.CAPACITY_BLOCK, 30_000), _line(Option.ON_DEMAND, 5_000, "2027-02")]
    short = [ShortfallLine(month="2027-02", team="research", gpu="H100", gang_gpus=1, spot_ok=False,
                           unmet_gpu_hours=1_000, reason="test")]
    found = {u.row.id: u for u in uses([b, a], Plan(lines, [], short, 1000.0), ["2027-01", "2027-02"])}
    assert (found["cr-a"].gpu_hours, found["cr-a"].used_gpu_hours, found["cr-a"].idle_gpu_hours) == (23_040, 23_040, 0)
    assert (found["cr-b"].used_gpu_hours, found["cr-b"].idle_gpu_hours) == (6_960, 47_616 + 64 * 672 - 6_960)
    assert found["cr-a"].ends_inside and not found["cr-b"].ends_inside
    assert [(x.option, x.gpu_hours) for x in found["cr-a"].after] == [("on_demand", 5_000), ("unserved", 1_000)]
    assert found["cr-a"].sunk_usd == pytest.approx(64 * 5.0 * 360)


def test_apply_sizes_work_on_part_month_held_capacity_by_the_hours_it_covers() -> None:
    """`capacity apply` reads held.csv: 23,040 GPU-hours on a block that holds 64 GPUs for 360 hours of January need
    64 GPUs at once (23,040 / 360), not 23,040 / 744 = 31 (the month's average); the 24,576 on demand are 33.03
    GPUs over the month. Without held capacity every hour is spread over the month."""
    from capacity.apply.need import month_needs

    lines = [_line(Option.CAPACITY_BLOCK, 23_040), _line(Option.ON_DEMAND, 24_576)]
    need = month_needs(lines, [], JAN, [block(end=MID_JANUARY)])[("aws", "us-east-1", "H100")]
    assert need.gpus_by_option["capacity_block"] == pytest.approx(64)
    assert need.gpus_by_option["on_demand"] == pytest.approx(24_576 / 744)
    assert need.gpus_by_team["research"] == pytest.approx(64 + 24_576 / 744)
    spread = month_needs(lines, [], JAN)[("aws", "us-east-1", "H100")]
    assert spread.gpus_by_team["research"] == pytest.approx(47_616 / 744)
