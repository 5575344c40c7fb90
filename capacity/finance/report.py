"""Write the finance report (report.html, report.xlsx, report.md) for a planning run already written to DIR,
and say its headline in the terminal."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from capacity.finance import charts, html, markdown, xlsx
from capacity.finance.budget import BudgetRow
from capacity.finance.headline import Position
from capacity.finance.model import Report, build
from capacity.forecast import Forecast
from capacity.planner import Run
from capacity.schema import HistoryRow
from capacity.terminal import Column, print_table

FILES = ("report.html", "report.xlsx", "report.md")
STYLE = {Position.OVER: "red", Position.WITHIN: "green", Position.UNKNOWN: "yellow"}


def write(run: Run, summary: dict[str, Any], out: Path, budget: Sequence[BudgetRow] | None = None,
          history: Sequence[HistoryRow] | None = None, forecast: Forecast | None = None,
          quantile: str = "P80", on: dt.date | None = None, actuals: dict[str, Any] | None = None) -> Report:
    """``actuals``: the gpufleet.actuals/v1 document of the FOCUS exports given, for the actuals sections."""
    report = build(run, summary, budget, history, forecast, quantile, on)
    report.actuals = actuals
    out.mkdir(parents=True, exist_ok=True)
    html.write(out / "report.html", report, charts.render(report), quantile)
    xlsx.write(out / "report.xlsx", report)
    markdown.write(out / "report.md", report)
    return report


def render(report: Report, console: Console) -> None:
    """The headline finance reads first, and every quota request past its file-by day."""
    h = report.headline
    rows = [("plan spend", html._usd(h.total_usd))]
    if h.granted_total_usd is not None:
        rows.append(("spend if the quota requests are granted",
                     f"{html._usd(h.granted_total_usd)} ({html._num(h.granted_unmet_gpu_hours)} GPU-h unmet)"))
    rows.append(("unmet demand at the penalty rate",
                 f"{html._usd(h.unmet_value_usd)} ({html._num(h.unmet_gpu_hours)} GPU-h; not spend)"))
    if h.position is not None:
        rows.append(("budget position (plan that serves all demand)", f"[{STYLE[h.position]}]{h.position.value}[/]"))
    print_table(console, "Finance report headline", (Column(""), Column("", prose=True)), rows, show_header=False,
                title_justify="left")
    if h.position is not None:
        console.print(h.position_text(), style=STYLE[h.position], highlight=False, markup=False)
    for q in report.requests:
        if report.overdue(q):
            console.print(f"OVERDUE: the {q.cloud.value} {q.region} {q.gpu} {q.market.value} quota request was to be "
                          f"filed by {q.request_by} for {q.month_needed}; filed today it cannot be granted in time.",
                          style="red", highlight=False, markup=False)
