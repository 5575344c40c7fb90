"""The forecast's quantiles are the quantiles they are named after, and the naive forecast is the mean of the last
three months, on series short enough to compute by hand (docs/capacity.md: "naive: the mean of the last three
months, with the spread of month-to-month changes"; the spread grows with the square root of the steps ahead).

A quantile Pq of a normal forecast with mean m and standard deviation s is m + z_q s, z_q the standard normal
quantile: z_0.9 = 1.2816, z_0.8 = 0.8416, z_0.1 = -1.2816 (NIST/SEMATECH e-Handbook of Statistical Methods,
1.3.6.7.1, "Cumulative distribution function of the standard normal distribution", to four decimals).

The series, in average GPUs: 10, 20, 30, 60, 30 from January to May 2026 (GPU-hours = GPUs x the month's hours:
744, 672, 744, 720, 744).
  level            the last three months: (30 + 60 + 30) / 3 = 40 GPUs (the whole history would be 150 / 5 = 30)
  spread           changes 10, 10, 30, -30, mean 5; squared deviations 25 + 25 + 625 + 1225 = 1900; sample
                   variance 1900 / 3; s = sqrt(633.33) = 25.166 GPUs one month ahead, s x sqrt(2) two months ahead
  June (720 h)     P50 = 40 x 720 = 28,800; P90 = (40 + 1.2816 x 25.166) x 720 = 52,022;
                   P80 = (40 + 0.8416 x 25.166) x 720 = 44,050; P10 = (40 - 1.2816 x 25.166) x 720 = 5,578
  July (744 h)     P90 = (40 + 1.2816 x 25.166 x sqrt(2)) x 744
"""

from __future__ import annotations

import math

import pytest

from capacity import forecast
from capacity.schema import HistoryRow, hours

Z90, Z80 = 1.2816, 0.8416  # the table's four decimals: off the exact quantile by < 5e-5, so rel=1e-4 below
GPUS = {"2026-01": 10, "2026-02": 20, "2026-03": 30, "2026-04": 60, "2026-05": 30}
SPREAD = math.sqrt(1900 / 3)


def history(gpus: dict[str, float], team: str = "t") -> list[HistoryRow]:
    return [HistoryRow(month=m, team=team, gpu="H100", gpu_hours=g * hours(m)) for m, g in gpus.items()]


@pytest.fixture(scope="module")
def five_months() -> forecast.Forecast:
    return forecast.forecast(history(GPUS), 2, "P90")


def test_the_months_forecast_are_june_and_july_with_their_hours(five_months: forecast.Forecast) -> None:
    assert [(i.month, i.method) for i in five_months.intervals] == [("2026-06", "naive"), ("2026-07", "naive")]
    assert (hours("2026-06"), hours("2026-07")) == (720, 744)


def test_the_naive_level_is_the_mean_of_the_last_three_months(five_months: forecast.Forecast) -> None:
    june, july = five_months.intervals
    assert june.p50_gpu_hours == pytest.approx(40 * 720)  # the whole history's mean would give 30 x 720 = 21,600
    assert july.p50_gpu_hours == pytest.approx(40 * 744)


def test_p90_and_p80_are_the_normal_quantiles_of_the_forecast(five_months: forecast.Forecast) -> None:
    june, july = five_months.intervals
    assert june.p90_gpu_hours == pytest.approx((40 + Z90 * SPREAD) * 720, rel=1e-4)  # 52,022
    assert june.p80_gpu_hours == pytest.approx((40 + Z80 * SPREAD) * 720, rel=1e-4)  # 44,050
    assert june.p10_gpu_hours == pytest.approx((40 - Z90 * SPREAD) * 720, rel=1e-3)  # 5,578
    assert july.p90_gpu_hours == pytest.approx((40 + Z90 * SPREAD * math.sqrt(2)) * 744, rel=1e-4)
    assert july.p80_gpu_hours == pytest.approx((40 + Z80 * SPREAD * math.sqrt(2)) * 744, rel=1e-4)


def test_the_demand_at_p90_is_the_p90(five_months: forecast.Forecast) -> None:
    """The plan is built on the demand rows: asked for P90, they carry the P90, not another quantile."""
    june, july = five_months.demand
    assert june.gpu_hours == pytest.approx((40 + Z90 * SPREAD) * 720, rel=1e-4)
    assert july.gpu_hours == pytest.approx((40 + Z90 * SPREAD * math.sqrt(2)) * 744, rel=1e-4)
    p80 = forecast.forecast(history(GPUS), 1, "P80").demand
    assert p80[0].gpu_hours == pytest.approx((40 + Z80 * SPREAD) * 720, rel=1e-4)
    p50 = forecast.forecast(history(GPUS), 1, "P50").demand
    assert p50[0].gpu_hours == pytest.approx(40 * 720)


def test_nine_months_are_still_naive_and_still_the_last_three() -> None:
    """The boundary below the ETS models (10 months): 9 months, the last three 50, 20, 50 GPUs (mean 40); the six
    before them 100 each (a whole-history mean would be (600 + 120) / 9 = 80)."""
    months = [f"2025-{m:02d}" for m in range(4, 13)]
    result = forecast.forecast(history(dict(zip(months, [100] * 6 + [50, 20, 50], strict=True))), 1, "P50")
    assert [(i.month, i.method) for i in result.intervals] == [("2026-01", "naive")]
    assert result.demand[0].gpu_hours == pytest.approx(40 * 744)


def test_two_months_fall_back_to_the_last_value_with_a_quarter_of_it_as_spread() -> None:
    """Below 3 months: the last value (30 GPUs), spread 0.25 x 30 = 7.5 GPUs: P90 = (30 + 1.2816 x 7.5) x 720."""
    result = forecast.forecast(history({"2026-04": 60, "2026-05": 30}), 1, "P90")
    (june,) = result.intervals
    assert june.method == "last_value"
    assert june.p50_gpu_hours == pytest.approx(30 * 720)
    assert june.p90_gpu_hours == pytest.approx((30 + Z90 * 7.5) * 720, rel=1e-4)
    assert result.demand[0].gpu_hours == pytest.approx((30 + Z90 * 7.5) * 720, rel=1e-4)
