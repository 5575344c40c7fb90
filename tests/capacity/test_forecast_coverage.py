"""Forecast calibration: on series drawn from a known distribution (level + trend + Gaussian noise, so the
next month's true distribution is known exactly), the P50/P80/P90 forecasts and the P10-P90 interval hold the
probability they claim, averaged over many series. Coverage of one forecast is the true normal CDF at its
quantile, computed here, so the only noise is that of fitting. Tolerance: 5 percentage points for ETS
(10+ months of history); 6 for the naive method (3-9 months), which is wide on purpose."""

from __future__ import annotations

import random
from statistics import NormalDist

import pytest

from capacity import forecast
from capacity.schema import HistoryRow, add_months, hours

START = "2024-01"


def coverage(months: int, series: int, seed: int) -> tuple[dict[str, float], set[str]]:
    rnd = random.Random(seed)
    rows, truth = [], {}
    for s in range(series):
        level, sigma, trend = rnd.uniform(50, 150), rnd.uniform(3, 8), rnd.uniform(-0.5, 0.5)
        for i in range(months):
            month = add_months(START, i)
            gpus = level + trend * i + rnd.gauss(0, sigma)
            rows.append(HistoryRow(month=month, team=f"t{s}", gpu="H100", gpu_hours=gpus * hours(month)))
        truth[f"t{s}"] = (level + trend * months, sigma)
    result = forecast.forecast(rows, 1, "P80", backtest_origins=0)
    got = {"P50": 0.0, "P80": 0.0, "P90": 0.0, "P10-P90": 0.0}
    for i in result.intervals:
        mean, sigma = truth[i.team]
        true = NormalDist(mean * hours(i.month), sigma * hours(i.month))
        got["P50"] += true.cdf(i.p50_gpu_hours)
        got["P80"] += true.cdf(i.p80_gpu_hours)
        got["P90"] += true.cdf(i.p90_gpu_hours)
        got["P10-P90"] += true.cdf(i.p90_gpu_hours) - true.cdf(i.p10_gpu_hours)
    return {k: v / series for k, v in got.items()}, {i.method for i in result.intervals}


STATED = {"P50": 0.5, "P80": 0.8, "P90": 0.9, "P10-P90": 0.8}


def test_ets_quantiles_hold_their_stated_coverage() -> None:
    got, methods = coverage(months=15, series=40, seed=11)
    assert methods == {"ets_damped"}
    for name, stated in STATED.items():
        assert got[name] == pytest.approx(stated, abs=0.05), (name, got)


def test_naive_quantiles_hold_their_stated_coverage() -> None:
    got, methods = coverage(months=6, series=300, seed=12)
    assert methods == {"naive"}
    for name, stated in STATED.items():
        assert got[name] == pytest.approx(stated, abs=0.06), (name, got)
