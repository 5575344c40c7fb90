"""The bundled example starts today: `gpufleet capacity example` dates the plan from the first month whose quota
requests can still be filed on time (its first day minus the longest usual lead time, Azure's 14 days)."""

from __future__ import annotations

import datetime as dt

import pytest
from typer.testing import CliRunner

from capacity import example
from capacity.cli import app


@pytest.mark.parametrize(("today", "first"), [
    ("2026-12-01", "2027-01"),
    ("2026-12-18", "2027-01"),  # 1 January - 14 days = 18 December: filed on that day, not late
    ("2026-12-19", "2027-02"),
    ("2027-02-15", "2027-03"),  # 1 March - 14 days = 15 February
    ("2027-02-16", "2027-04"),
])
def test_the_plan_starts_with_the_first_month_whose_requests_are_not_late(today: str, first: str) -> None:
    assert example.first_month(dt.date.fromisoformat(today)) == first


def test_history_runs_to_the_month_before_the_plan_and_the_budget_covers_the_plan(tmp_path) -> None:
    result = CliRunner().invoke(app, ["example", "--out", str(tmp_path), "--today", "2026-12-01"])
    assert result.exit_code == 0, result.output
    history = (tmp_path / "history.csv").read_text().splitlines()[1:]
    budget = (tmp_path / "budget.csv").read_text().splitlines()[1:]
    assert (history[0][:7], history[-1][:7]) == ("2025-01", "2026-12")  # 24 months
    assert (budget[0][:7], budget[-1][:7]) == ("2027-01", "2027-12")  # the 12 months planned
    again = tmp_path / "again"
    assert CliRunner().invoke(app, ["example", "--out", str(again), "--today", "2026-12-01"]).exit_code == 0
    assert all((again / n).read_text() == (tmp_path / n).read_text() for n in ("history.csv", "budget.csv"))


def test_a_day_that_is_not_a_day_is_a_clear_error(tmp_path) -> None:
    result = CliRunner().invoke(app, ["example", "--out", str(tmp_path), "--today", "2026-13-01"])
    assert result.exit_code == 2 and "YYYY-MM-DD" in result.output
