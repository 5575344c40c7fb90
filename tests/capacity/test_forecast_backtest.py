"""The forecast's backtest (the WAPE the report shows next to each series) on a series scored by hand.

Average GPUs January to August 2026: 10, 20, 30, 60, 30, 50, 40, 70. A 2-month horizon scores 2 months ahead from
the last 3 origins that leave 2 months (cuts after 4, 5 and 6 months); each refit is naive (under 10 months): the
mean of its last three months. GPU-hours are GPUs x the month's hours (May 744, June 720, July 744, August 744).
  cut 4: level (20 + 30 + 60) / 3 = 36.67; May 30 (error 6.67 x 744 = 4,960), June 50 (13.33 x 720 = 9,600)
  cut 5: level (30 + 60 + 30) / 3 = 40;    June 50 (10 x 720 = 7,200),       July 40 (0)
  cut 6: level (60 + 30 + 50) / 3 = 46.67; July 40 (6.67 x 744 = 4,960),    August 70 (23.33 x 744 = 17,360)
  actual 22,320 + 36,000 + 36,000 + 29,760 + 29,760 + 52,080 = 205,920 GPU-hours; error 44,080; WAPE 0.2141
"""

from __future__ import annotations

import pytest

from capacity import forecast
from capacity.schema import HistoryRow, hours

GPUS = [10, 20, 30, 60, 30, 50, 40, 70]


def test_the_backtest_scores_each_origin_on_the_months_after_it() -> None:
    rows = [HistoryRow(month=f"2026-{m:02d}", team="t", gpu="H100", gpu_hours=g * hours(f"2026-{m:02d}"))
            for m, g in enumerate(GPUS, start=1)]
    (row,) = forecast.forecast(rows, 2, "P50").backtest
    assert (row.method, row.origins) == ("naive", 3)
    assert row.actual_gpu_hours == pytest.approx(205_920)
    assert row.abs_error_gpu_hours == pytest.approx(44_080)
    assert row.wape == pytest.approx(44_080 / 205_920, abs=1e-6)


def test_a_series_too_short_to_refit_has_no_backtest() -> None:
    """Three months leave no origin with 3 months before it and 2 after: nothing is scored, WAPE unknown (not 0)."""
    rows = [HistoryRow(month=f"2026-0{m}", team="t", gpu="H100", gpu_hours=100.0) for m in (1, 2, 3)]
    result = forecast.forecast(rows, 2, "P50")
    (row,) = result.backtest
    assert (row.origins, row.actual_gpu_hours, row.wape) == (0, 0.0, None)
    assert result.wape is None  # the report's overall WAPE: unknown too
