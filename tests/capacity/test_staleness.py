"""Price age and overdue quota requests, at their boundaries (dates hand computed)."""

from __future__ import annotations

import datetime as dt

from capacity import staleness

ON = dt.date(2026, 12, 1)


def test_ninety_days_is_fresh_ninety_one_is_stale() -> None:
    fresh = staleness.of(["2026-09-02", "2026-11-30"], on=ON)  # Sep 2 -> Dec 1: 29 + 31 + 30 = 90 days
    assert (fresh.as_of, fresh.age_days, fresh.stale, fresh.warning) == ("2026-09-02", 90, False, None)
    stale = staleness.of(["2026-11-30", "2026-09-01"], on=ON)  # the oldest date counts: 91 days
    assert (stale.as_of, stale.age_days, stale.stale) == ("2026-09-01", 91, True)
    assert "2026-09-01" in stale.warning and "91 days" in stale.warning


def test_a_threshold_can_be_given_and_no_date_is_unknown_age() -> None:
    assert staleness.of(["2026-11-01"], threshold_days=29, on=ON).stale  # 30 days > 29
    assert not staleness.of(["2026-11-01"], threshold_days=30, on=ON).stale
    unknown = staleness.of(["", ""], on=ON)
    assert unknown.as_of is None and unknown.stale and "unknown" in unknown.warning


def test_a_request_is_overdue_only_after_its_file_by_day() -> None:
    assert staleness.overdue("2026-11-30", on=ON)
    assert not staleness.overdue("2026-12-01", on=ON)
