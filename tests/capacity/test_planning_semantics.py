"""The planning semantics of docs/capacity.md, one rule at a time, and the checker catching broken plans."""

from __future__ import annotations

import pytest
from plan_helpers import offer, quota, row, verify

from capacity import check, optimize, planner, problem
from capacity.schema import DemandRow, Market, OfferRow, Option, PlanLine, QuotaRow, hours
from components.catalog import Cloud

JAN, FEB = "2026-01", "2026-02"


def solve(demand: list[DemandRow], offers: list[OfferRow], quotas: list[QuotaRow] | None = None,
          penalty: float = 1000.0) -> optimize.Solution:
    built = problem.build(demand, offers, quotas, penalty)
    solution = optimize.solve(built, gap=1e-9)
    verify(demand, offers, quotas, solution.plan, penalty)
    return solution


def test_usage_takes_the_cheapest_offer_and_spot_only_for_spot_ok_rows() -> None:
    offers = [offer("r1", Option.ON_DEMAND, 4.0), offer("r2", Option.ON_DEMAND, 3.0), offer("r1", Option.SPOT, 1.0)]
    plan = solve([row(JAN, "a", 1000, spot_ok=True), row(JAN, "b", 1000)], offers).plan
    by_team = {(line.team, line.region, line.option) for line in plan.lines}
    assert by_team == {("a", "r1", Option.SPOT), ("b", "r2", Option.ON_DEMAND)}
    assert plan.usage_usd == pytest.approx(1000 * 1.0 + 1000 * 3.0)


def test_quotas_cap_gpus_per_month_and_the_rest_goes_elsewhere_or_unmet() -> None:
    h = hours(JAN)
    offers = [offer("r1", Option.ON_DEMAND, 2.0), offer("r2", Option.ON_DEMAND, 5.0)]
    quotas = [quota("r1", Market.ON_DEMAND, 8), quota("r2", Market.ON_DEMAND, 8)]
    plan = solve([row(JAN, "a", 20 * h)], offers, quotas).plan
    served = {line.region: line.gpu_hours for line in plan.lines}
    assert served == pytest.approx({"r1": 8 * h, "r2": 8 * h})
    assert plan.unmet_gpu_hours == pytest.approx(4 * h)
    assert plan.shortfall[0].reason.startswith("quota full that month in aws/r1, aws/r2")


def test_a_gang_row_runs_in_one_region_whose_quota_fits_the_gang() -> None:
    h = hours(JAN)
    offers = [offer("r1", Option.ON_DEMAND, 2.0), offer("r2", Option.ON_DEMAND, 2.5),
              offer("r3", Option.ON_DEMAND, 1.0)]
    quotas = [quota("r1", Market.ON_DEMAND, 16), quota("r2", Market.ON_DEMAND, 32), quota("r3", Market.ON_DEMAND, 8)]
    plan = solve([row(JAN, "big", 24 * h, gang=16)], offers, quotas).plan
    assert {line.region for line in plan.lines} == {"r2"}  # r3 is cheapest but below the gang; r1 too small
    assert plan.unmet_gpu_hours == pytest.approx(0)


def test_a_gang_row_is_partly_unserved_rather_than_split() -> None:
    h = hours(JAN)
    offers = [offer("r1", Option.ON_DEMAND, 2.0), offer("r2", Option.ON_DEMAND, 2.0)]
    quotas = [quota("r1", Market.ON_DEMAND, 16), quota("r2", Market.ON_DEMAND, 16)]
    plan = solve([row(JAN, "big", 24 * h, gang=16)], offers, quotas).plan
    assert len({line.region for line in plan.lines}) == 1
    assert plan.unmet_gpu_hours == pytest.approx(8 * h)


def test_a_commitment_is_whole_nodes_charged_for_its_full_term_and_counts_against_quota() -> None:
    months = [f"2026-{m:02d}" for m in range(1, 13)]
    demand = [row(m, "steady", 6 * hours(m)) for m in months]
    offers = [offer("r1", Option.ON_DEMAND, 4.0), offer("r1", Option.COMMIT_1Y, 2.0)]
    plan = solve(demand, offers, [quota("r1", Market.ON_DEMAND, 8)]).plan
    (commitment,) = plan.commitments
    assert (commitment.nodes, commitment.gpus, commitment.start_month) == (1, 8, "2026-01")
    assert commitment.usd_total == pytest.approx(8 * 8760 * 2.0)
    assert all(line.option is Option.COMMIT_1Y and line.usd == 0 for line in plan.lines)
    # 8 committed GPUs fill the 8-GPU quota: no on-demand could run beside them
    assert plan.total_usd == pytest.approx(8 * 8760 * 2.0)


def test_a_commitment_that_cannot_pay_off_in_the_horizon_is_not_bought() -> None:
    offers = [offer("r1", Option.ON_DEMAND, 4.0), offer("r1", Option.COMMIT_3Y, 1.0)]
    plan = solve([row(JAN, "a", 8 * hours(JAN)), row(FEB, "a", 8 * hours(FEB))], offers).plan
    assert plan.commitments == []  # 8 x 26,280 h x $1 > 8 x 1,416 h x $4


def test_the_penalty_decides_between_an_expensive_offer_and_shortfall() -> None:
    offers = [offer("r1", Option.ON_DEMAND, 50.0)]
    assert solve([row(JAN, "a", 100)], offers, penalty=1000).plan.unmet_gpu_hours == 0
    assert solve([row(JAN, "a", 100)], offers, penalty=10).plan.unmet_gpu_hours == pytest.approx(100)


def test_relaxed_solve_names_the_quota_increase_month_and_lead_time() -> None:
    h1, h2 = hours(JAN), hours(FEB)
    offers = [offer("r1", Option.ON_DEMAND, 2.0), offer("r2", Option.ON_DEMAND, 3.0)]
    quotas = [quota("r1", Market.ON_DEMAND, 8)]  # r2 unlisted: a quota of 0
    demand = [row(JAN, "a", 8 * h1), row(FEB, "a", 20 * h2), row(FEB, "g", 16 * h2, gang=16)]
    run = planner.plan(demand, offers, quotas)
    assert run.verdict.ok
    assert run.plan.unmet_gpu_hours > 0
    assert run.relaxed is not None and run.relaxed.plan.unmet_gpu_hours == pytest.approx(0, abs=1e-3)
    requests = {(r.region, r.market): r for r in run.requests}
    assert sum(r.requested_max_gpus for r in run.requests) >= 36  # 20 + 16 GPUs in February
    first = min(run.requests, key=lambda r: r.month_needed)
    assert first.month_needed == FEB and first.lead_time_days > 0
    assert first.request_by < "2026-02-01"
    assert all(r.market is Market.ON_DEMAND and r.increase_gpus >= 1 for r in requests.values())


def test_checker_catches_each_kind_of_broken_plan() -> None:
    h = hours(JAN)
    demand = [row(JAN, "g", 16 * h, gang=16), row(JAN, "s", 100)]
    offers = [offer("r1", Option.ON_DEMAND, 2.0), offer("r2", Option.ON_DEMAND, 2.0), offer("r1", Option.SPOT, 1.0),
              offer("r1", Option.COMMIT_1Y, 1.0)]
    quotas = [quota("r1", Market.ON_DEMAND, 16), quota("r2", Market.ON_DEMAND, 8), quota("r1", Market.SPOT, 0)]
    base = solve(demand, offers, quotas).plan

    def line(region: str, option: Option, gpu_hours: float, team: str = "g", usd: float | None = None) -> PlanLine:
        d = next(x for x in demand if x.team == team)
        price = {Option.ON_DEMAND: 2.0, Option.SPOT: 1.0}.get(option, 0.0)
        return PlanLine(month=JAN, team=team, gpu="H100", cloud=Cloud.AWS, region=region, option=option,
                        gpu_hours=gpu_hours, usd=price * gpu_hours if usd is None else usd, gang_gpus=d.gang_gpus,
                        spot_ok=d.spot_ok)

    def broken(lines: list[PlanLine], commitments: tuple = ()) -> list[str]:
        return check.check(demand, offers, quotas, lines, list(commitments)).violations

    assert broken([line("r1", Option.ON_DEMAND, 8 * h), line("r2", Option.ON_DEMAND, 8 * h)])[0].startswith(
        "gang row")
    assert any("quota 8 < 16" in v for v in broken([line("r2", Option.ON_DEMAND, 8 * h)]))
    assert any("spot for a row that is not spot_ok" in v for v in broken([line("r1", Option.SPOT, 50, "s")]))
    assert any("on_demand quota 16" in v for v in broken([line("r1", Option.ON_DEMAND, 16 * h),
                                                          line("r1", Option.ON_DEMAND, 100, "s")]))
    assert any("served" in v for v in broken([line("r1", Option.ON_DEMAND, 17 * h)]))
    assert any("commit_1y GPU-hours used" in v for v in broken([line("r1", Option.COMMIT_1Y, 100, "s")]))
    assert any("the price says" in v for v in broken([line("r1", Option.ON_DEMAND, 100, "s", usd=1.0)]))
    assert check.check(demand, offers, quotas, base.lines, base.commitments).ok
