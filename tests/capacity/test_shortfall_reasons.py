"""Every unserved row says why, one reason per test, each on the smallest instance that shows it.
January 2026 has 744 hours; the penalty is 1,000 USD per unserved GPU-hour unless a test says otherwise."""

from __future__ import annotations

from plan_helpers import offer, quota, row, verify

from capacity import optimize, problem
from capacity.schema import DemandRow, Market, OfferRow, Option, QuotaRow

JAN, H = "2026-01", 744


def reasons(demand: list[DemandRow], offers: list[OfferRow], quotas: list[QuotaRow],
            penalty: float = 1000.0) -> dict[str, str]:
    built = problem.build(demand, offers, quotas, penalty)
    plan = optimize.solve(built, gap=1e-9).plan
    verify(demand, offers, quotas, plan, penalty)
    return {s.team: s.reason for s in plan.shortfall}


def test_no_offer_for_the_gpu() -> None:
    demand = [row(JAN, "a", 100), DemandRow(month=JAN, team="b", gpu="B200", gpu_hours=100, gang_gpus=1,
                                            spot_ok=False)]
    assert reasons(demand, [offer("r1", Option.ON_DEMAND, 2.0)], [quota("r1", Market.ON_DEMAND, 8)]) == {
        "b": "no offer sells B200"}


def test_no_region_has_on_demand_quota_for_the_gang() -> None:
    got = reasons([row(JAN, "a", 16 * H, gang=16)], [offer("r1", Option.ON_DEMAND, 2.0)],
                  [quota("r1", Market.ON_DEMAND, 8)])
    assert got == {"a": "no region's on-demand quota reaches the gang of 16 GPUs (largest: 8 in aws/r1)"}


def test_quota_used_by_rows_served_at_lower_cost_and_idle_quota_below_the_gang() -> None:
    # r1 (16 GPUs) takes one 16-GPU gang; r2's 8 idle GPUs cannot take the other
    demand = [row(JAN, "a", 16 * H, gang=16), row(JAN, "b", 16 * H, gang=16)]
    offers = [offer("r1", Option.ON_DEMAND, 2.0), offer("r2", Option.ON_DEMAND, 2.0)]
    got = reasons(demand, offers, [quota("r1", Market.ON_DEMAND, 16), quota("r2", Market.ON_DEMAND, 8)])
    assert len(got) == 1
    (reason,) = got.values()
    assert reason == ("quota full that month in aws/r1 (used by rows the plan serves at a lower total cost); "
                      "idle quota in aws/r2 is below the gang of 16 GPUs")


def test_a_gang_partly_served_in_one_region_while_another_has_idle_quota() -> None:
    # three 16-GPU gangs of 12 x 744 h over two 16-GPU regions: one gang gets the 4 x 744 h left in a region,
    # the other region's 4 x 744 idle hours would split it
    demand = [row(JAN, team, 12 * H, gang=16) for team in ("a", "b", "c")]
    offers = [offer(r, Option.ON_DEMAND, 2.0) for r in ("r1", "r2")]
    got = reasons(demand, offers, [quota(r, Market.ON_DEMAND, 16) for r in ("r1", "r2")])
    assert len(got) == 1
    (reason,) = got.values()
    assert reason.startswith("a gang runs in one region: served in aws/r")
    assert reason.endswith("whose quota is full; idle quota in aws/r1 would split it") or reason.endswith(
        "whose quota is full; idle quota in aws/r2 would split it")


def test_cheaper_unserved_when_the_penalty_is_below_the_price() -> None:
    got = reasons([row(JAN, "a", 100)], [offer("r1", Option.ON_DEMAND, 5.0)], [quota("r1", Market.ON_DEMAND, 8)],
                  penalty=4.0)
    assert got == {"a": "cheaper unserved: using the idle quota in aws/r1 costs more than the penalty of 4 "
                        "USD/GPU-hour"}
