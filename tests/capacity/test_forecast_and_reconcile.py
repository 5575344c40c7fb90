"""Demand forecasts (ETS, quantiles, backtest) and the plan-versus-stacks reconciliation."""

from __future__ import annotations

import math
import random

import pytest
from plan_helpers import offer

from capacity import forecast
from capacity.reconcile import reconcile
from capacity.schema import CommitmentLine, HistoryRow, Option, PlanLine, add_months, hours
from components.catalog import Cloud
from components.validate import resolve


def history(months: int, level: float = 40.0, trend: float = 1.0, season: float = 8.0, noise: float = 1.0,
            team: str = "vision", gpu: str = "H100", start: str = "2023-01") -> list[HistoryRow]:
    rnd = random.Random(3)
    rows = []
    for i in range(months):
        month = add_months(start, i)
        gpus = level + trend * i + season * math.sin(2 * math.pi * i / 12) + rnd.gauss(0, noise)
        rows.append(HistoryRow(month=month, team=team, gpu=gpu, gpu_hours=max(gpus, 0) * hours(month)))
    return rows


def test_seasonal_ets_follows_trend_and_season_with_ordered_quantiles() -> None:
    rows = history(36)
    result = forecast.forecast(rows, 12, "P80", backtest_origins=2)
    assert {i.method for i in result.intervals} == {"ets_seasonal"}
    for i in result.intervals:
        assert i.p10_gpu_hours <= i.p50_gpu_hours <= i.p80_gpu_hours <= i.p90_gpu_hours
    start = "2026-01"
    truth = {}
    for k in range(12):
        month = add_months(start, k)
        truth[month] = (40 + (36 + k) + 8 * math.sin(2 * math.pi * (36 + k) / 12)) * hours(month)
    for i in result.intervals:
        assert i.p50_gpu_hours == pytest.approx(truth[i.month], rel=0.12)
    # demand.csv holds the chosen quantile, with gang_gpus and spot_ok defaults
    by_month = {d.month: d for d in result.demand}
    assert by_month["2026-06"].gpu_hours == pytest.approx(
        next(i.p80_gpu_hours for i in result.intervals if i.month == "2026-06"), rel=1e-6)
    assert by_month["2026-06"].gang_gpus == 1 and by_month["2026-06"].spot_ok is False
    assert result.wape is not None and result.wape < 0.1


def test_short_and_flat_histories_fall_back_and_carry_row_traits() -> None:
    rows = history(5, team="tiny", trend=0, season=0)
    rows.append(HistoryRow(month="2023-05", team="one", gpu="A100-40GB", gpu_hours=7200, gang_gpus=32, spot_ok=True))
    result = forecast.forecast(rows, 3, "P90")
    methods = {(i.team, i.method) for i in result.intervals}
    assert methods == {("tiny", "naive"), ("one", "last_value")}
    one = [d for d in result.demand if d.team == "one"]
    assert all(d.gang_gpus == 32 and d.spot_ok for d in one)
    assert one[0].gpu_hours > 7200 * hours("2023-06") / hours("2023-05")  # P90 is above the level


FLEET = {
    "cloud": "aws", "monthly_budget_usd": 1_000_000, "tags": {"team": "ml", "cost_center": "cc-1"},
    "clusters": [{
        "name": "train", "region": "us-east-1", "zones": ["use1-az6", "use1-az4"],
        "admins": ["arn:aws:iam::123456789012:role/ml-admin"],
        "node_pools": [
            {"name": "h100", "machine_type": "p5.48xlarge", "nodes": {"min": 4, "max": 4},
             "zone": "use1-az6", "capacity": {"type": "capacity_block", "id": "cr-0abc0123456789abc"}},
            {"name": "spare", "machine_type": "p5.48xlarge", "nodes": {"min": 1, "max": 2}, "zone": "use1-az6"},
        ],
    }],
}


def test_reconcile_lists_under_and_over_provisioning_with_monthly_cost() -> None:
    fleet = resolve(FLEET)
    jan, feb = "2026-01", "2026-02"
    offers = [offer("us-east-1", Option.ON_DEMAND, 6.88).model_copy(update={"machine_type": "p5.48xlarge"})]

    def line(month: str, gpus: float, usd_rate: float = 6.88) -> PlanLine:
        h = hours(month)
        return PlanLine(month=month, team="t", gpu="H100", cloud=Cloud.AWS, region="us-east-1",
                        option=Option.ON_DEMAND, gpu_hours=gpus * h, usd=gpus * h * usd_rate, gang_gpus=1,
                        spot_ok=False)

    commit = CommitmentLine(cloud=Cloud.AWS, region="us-east-1", machine_type="p5.48xlarge", gpu="H100",
                            option=Option.COMMIT_1Y, start_month=jan, nodes=1, gpus=8, usd_total=1.0)
    rows = reconcile([line(jan, 60.0), line(feb, 10.0)], [commit], [fleet], offers)
    by_month = {r.month: r for r in rows}
    under, over = by_month[jan], by_month[feb]
    # pools hold 4 + 2 nodes = 48 GPUs; the capacity block's 32 and the spare pool's minimum 8 are paid
    assert (under.status, under.provisioned_max_gpus, under.paid_gpus, under.reserved_gpus) == ("under", 48, 40, 32)
    assert under.gpus == pytest.approx(12.0)
    assert under.usd_per_month == pytest.approx(12 * hours(jan) * 6.88)
    assert (over.status, over.gpus) == ("over", pytest.approx(30.0))
    assert over.usd_per_month == pytest.approx(30 * hours(feb) * 6.88)
    assert under.planned_committed_gpus == 8 and "capacity_block:cr-0abc" in under.references
