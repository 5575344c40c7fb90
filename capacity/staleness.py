"""How old the prices are, and which quota requests are past their file-by date.

Every figure a plan, a report or a PR comment shows rests on prices with an ``as_of`` date; they say the
oldest one, and warn when it is older than a threshold (STALE_AFTER_DAYS by default).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

STALE_AFTER_DAYS = 90


def today() -> dt.date:
    return dt.datetime.now(dt.UTC).date()


@dataclass(frozen=True)
class Staleness:
    as_of: str | None  # the oldest price date, YYYY-MM-DD; None when no price states one
    age_days: int | None
    threshold_days: int

    @property
    def stale(self) -> bool:
        return self.age_days is None or self.age_days > self.threshold_days

    @property
    def warning(self) -> str | None:
        if self.as_of is None:
            return "The prices state no as_of date: their age is unknown. Refresh them with `gpufleet capacity prices`."
        if not self.stale:
            return None
        return (f"Prices are as of {self.as_of}, {self.age_days} days old (more than {self.threshold_days}): "
                "refresh them with `gpufleet capacity prices` (or pass current rates with --offers) before a "
                "budget decision.")

    def as_dict(self) -> dict[str, object]:
        return {"as_of": self.as_of, "age_days": self.age_days, "stale_after_days": self.threshold_days,
                "stale": self.stale, "warning": self.warning}


def of(dates: Iterable[str], threshold_days: int = STALE_AFTER_DAYS, on: dt.date | None = None) -> Staleness:
    known = sorted(d for d in dates if d)
    if not known:
        return Staleness(None, None, threshold_days)
    oldest = known[0]
    return Staleness(oldest, ((on or today()) - dt.date.fromisoformat(oldest)).days, threshold_days)


def overdue(request_by: str, on: dt.date | None = None) -> bool:
    """A quota request whose file-by day has passed: it cannot be granted in time for the month it is needed."""
    return dt.date.fromisoformat(request_by) < (on or today())
