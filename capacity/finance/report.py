"""Write the finance report (report.html, report.xlsx, report.md) for a planning run already written to DIR."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from capacity.finance import charts, html, markdown, xlsx
from capacity.finance.budget import BudgetRow
from capacity.finance.model import Report, build
from capacity.forecast import Forecast
from capacity.planner import Run
from capacity.schema import HistoryRow

FILES = ("report.html", "report.xlsx", "report.md")


def write(run: Run, summary: dict[str, Any], out: Path, budget: Sequence[BudgetRow] | None = None,
          history: Sequence[HistoryRow] | None = None, forecast: Forecast | None = None,
          quantile: str = "P80") -> Report:
    report = build(run, summary, budget, history, forecast, quantile)
    out.mkdir(parents=True, exist_ok=True)
    html.write(out / "report.html", report, charts.render(report), quantile)
    xlsx.write(out / "report.xlsx", report)
    markdown.write(out / "report.md", report)
    return report
