"""report.xlsx: sheets Summary, Monthly plan, By team, Quota requests, Commitments, Assumptions (and, when FOCUS
exports are given, Actuals plan vs bill, Actuals utilisation, Actuals GPU spend).

Cells hold unrounded values; number formats do the rounding for display, so sums in the workbook agree with
summary.json to the cent. Headers are bold and frozen; columns are sized to their content.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from openpyxl import Workbook
from openpyxl.styles import Font, PatternFill
from openpyxl.utils import get_column_letter

from capacity.finance import actuals, held
from capacity.finance.model import CLOUDS, OPTIONS, Report

USD = '"$"#,##0.00;[Red]-"$"#,##0.00'
RATE = '"$"#,##0.0000'
THOUSANDS = "#,##0"
HOURS = "#,##0.0"
PCT = "0.0%"
HEAD = Font(bold=True)
FILL = PatternFill("solid", fgColor="DDE6F3")


def _sheet(wb: Workbook, title: str, header: Sequence[str], rows: Sequence[Sequence[Any]],
           formats: dict[int, str], total: Sequence[Any] | None = None) -> None:
    ws = wb.create_sheet(title)
    ws.append(list(header))
    for cell in ws[1]:
        cell.font, cell.fill = HEAD, FILL
    for row in rows:
        ws.append(list(row))
    if total is not None:
        ws.append(list(total))
        for cell in ws[ws.max_row]:
            cell.font = HEAD
    for col, fmt in formats.items():
        for (cell,) in ws.iter_rows(min_row=2, min_col=col + 1, max_col=col + 1):
            cell.number_format = fmt
    ws.freeze_panes = "A2"
    for i, name in enumerate(header, start=1):
        width = max([len(str(name))] + [len(f"{r[i - 1]:,.2f}" if isinstance(r[i - 1], float) else str(r[i - 1]))
                                        for r in [*rows, *([total] if total else [])] if r[i - 1] is not None])
        ws.column_dimensions[get_column_letter(i)].width = min(max(width + 3, 10), 70)


def write(path: Path, report: Report) -> None:
    s, h = report.summary, report.headline
    wb = Workbook()
    wb.remove(wb.active)
    summary = [
        ("Total spend (usage + commitments)", s["total_usd"], USD), ("Usage", s["usage_usd"], USD),
        ("Commitment charges (whole terms)", s["commitment_usd"], USD),
        ("Greedy plan total", s["greedy_total_usd"], USD), ("Saving vs greedy (incl. penalty)",
                                                            s["saving_vs_greedy_usd"], USD),
        ("Unmet GPU-hours", s["unmet_gpu_hours"], THOUSANDS),
        ("Unmet GPU-hours if quota requests granted", s["unmet_after_requests_gpu_hours"], THOUSANDS),
        ("Unmet demand at the penalty rate (value, not spend)", h.unmet_value_usd, USD),
        ("Spend if the quota requests are granted", h.granted_total_usd, USD),
        ("Unmet demand value if the quota requests are granted", h.granted_unmet_value_usd, USD),
        ("Budget (budgeted months)", report.budget_usd, USD),
        ("Budget position (plan that serves all demand)", None if h.position is None else h.position.value,
         "General"),
        ("Plan serving all demand, in budgeted months", h.full_in_budget_usd, USD),
        ("Variance vs budget (plan serving all demand)", h.variance_usd, USD),
        ("Budget position explained", h.position_text(), "General"),
        ("Proven lower bound (objective)", s["lower_bound_usd"], USD), ("Gap", s["gap"], "0.000%"),
        ("Status", s["status"], "General"), ("First month", s["first_month"], "General"),
        ("Last month", s["last_month"], "General"), ("Quota requests", s["quota_requests"], THOUSANDS),
        ("Quota requests proven (relaxed solve status, gap)",
         "n/a" if s["relaxed_status"] is None else f"{s['relaxed_status']}, gap {s['relaxed_gap']:.3%}", "General"),
        ("Quota requests past their file-by day", sum(report.overdue(q) for q in report.requests), THOUSANDS),
        ("Prices as of (oldest price date)", s["prices"]["as_of"] or "not stated", "General"),
        ("Price age (days)", s["prices"]["age_days"], THOUSANDS),
        ("Price warning", s["prices"]["warning"] or "none", "General"),
    ]
    ws = wb.create_sheet("Summary")
    ws.append(["item", "value"])
    for cell in ws[1]:
        cell.font, cell.fill = HEAD, FILL
    for name, value, fmt in summary:
        ws.append([name, value])
        ws.cell(ws.max_row, 2).number_format = fmt
    ws.freeze_panes = "A2"
    ws.column_dimensions["A"].width, ws.column_dimensions["B"].width = 44, 22

    header = ["month", *CLOUDS, *OPTIONS, "total"]
    rows = []
    for b in report.buckets:
        clouds = [report.by_cloud.get(b, {}).get(k, 0.0) for k in CLOUDS]
        rows.append([b, *clouds, *[report.by_option.get(b, {}).get(k, 0.0) for k in OPTIONS], sum(clouds)])
    total = ["total", *[sum(r[i] for r in rows) for i in range(1, len(header))]]
    _sheet(wb, "Monthly plan", header, rows, dict.fromkeys(range(1, len(header)), USD), total)

    header = ["team / cost center", "GPU-hours served", "unmet GPU-hours", "usage USD", "commitments USD",
              "total USD", "budget USD", "planned in budgeted months USD", "variance USD"]
    rows = [[t.team, t.gpu_hours, t.unmet_gpu_hours, t.usage_usd, t.commitment_usd, t.total_usd, t.budget_usd,
             t.planned_in_budget_usd, t.variance_usd] for t in report.teams]
    planned = None if report.budget_usd is None else sum(r[7] for r in rows)
    total = ["total", *[sum(r[i] or 0.0 for r in rows) for i in range(1, 6)], report.budget_usd, planned,
             None if planned is None or report.budget_usd is None else planned - report.budget_usd]
    _sheet(wb, "By team", header, rows, {1: THOUSANDS, 2: THOUSANDS, **dict.fromkeys(range(3, 9), USD)}, total)
    if report.variance is not None:
        ws = wb["By team"]
        start = ws.max_row + 3
        ws.cell(start - 1, 1, "Budget variance by month and cost center").font = HEAD
        for j, name in enumerate(("month", "cost center", "budget USD", "plan USD", "variance USD"), start=1):
            ws.cell(start, j, name).font = HEAD
        for i, v in enumerate(report.variance, start=start + 1):
            for j, value in enumerate((v.month, v.cost_center, v.budget_usd, v.plan_usd, v.variance_usd), start=1):
                ws.cell(i, j, value).number_format = USD if j > 2 else "General"

    header = ["cloud", "region", "gpu", "market", "current GPUs", "requested GPUs", "increase GPUs", "native quota",
              "native unit", "native increase", "month needed", "file by", "lead time days", "GPU-hours enabled",
              "overdue"]
    rows = [[q.cloud.value, q.region, q.gpu, q.market.value, q.current_max_gpus, q.requested_max_gpus,
             q.increase_gpus, q.native_quota, q.native_unit, q.native_increase, q.month_needed, q.request_by,
             q.lead_time_days, q.gpu_hours_enabled, "overdue" if report.overdue(q) else ""]
            for q in report.requests]
    _sheet(wb, "Quota requests", header, rows, {4: THOUSANDS, 5: THOUSANDS, 6: THOUSANDS, 9: THOUSANDS,
                                                13: THOUSANDS})

    header = ["cloud", "region", "machine type", "gpu", "term", "start month", "nodes", "GPUs", "charge USD (term)",
              "USD/GPU-hour", "on-demand USD/GPU-hour", "break-even utilisation", "expected utilisation",
              "coverage", "charge in horizon USD", "saving vs on-demand USD"]
    rows = [[a.line.cloud.value, a.line.region, a.line.machine_type, a.line.gpu, a.line.option.value,
             a.line.start_month, a.line.nodes, a.line.gpus, a.line.usd_total, a.usd_per_gpu_hour,
             a.on_demand_usd_per_gpu_hour, a.break_even_utilisation, a.expected_utilisation, a.coverage,
             a.charge_in_horizon_usd, a.saving_vs_on_demand_usd] for a in report.commitments]
    total = ["total", *[None] * 7, sum(r[8] for r in rows), *[None] * 7] if rows else None
    _sheet(wb, "Commitments", header, rows, {6: THOUSANDS, 7: THOUSANDS, 8: USD, 9: RATE, 10: RATE, 11: PCT,
                                             12: PCT, 13: PCT, 14: USD, 15: USD}, total)

    header = ["month", "team", "gpu", "gang GPUs", "spot ok", "unmet GPU-hours", "why"]
    rows = [[x.month, x.team, x.gpu, x.gang_gpus, x.spot_ok, x.unmet_gpu_hours, x.reason] for x in report.shortfall]
    _sheet(wb, "Shortfall", header, rows, {5: THOUSANDS})

    header = ["assumption", "value"]
    rows = [list(a) for a in report.assumptions]
    rows.append(["", ""])
    rows.append(["Prices the plan buys at", "cloud | region | machine type | option | USD/GPU-hour | as of | source"])
    for o in report.prices:
        rows.append([f"{o.cloud.value} {o.region} {o.machine_type} {o.option.value}",
                     f"${o.usd_per_gpu_hour:.6g}/GPU-h, as of {o.as_of or 'undated'}: {o.source or 'no source'}"])
    _sheet(wb, "Assumptions", header, rows, {})
    if report.held:
        held.sheet(wb, report.held, _sheet, USD, HOURS)
    if report.actuals:
        actuals.sheets(wb, report.actuals, _sheet, USD, PCT, HOURS)
    wb.save(path)
