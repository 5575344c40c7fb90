"""report.md: a short summary of the report for an email or a pull request."""

from __future__ import annotations

from pathlib import Path

from capacity.finance import held
from capacity.finance.html import _num, _pct, _usd
from capacity.finance.model import Report


def render(report: Report) -> str:
    s = report.summary
    h = report.headline
    lines = [f"# GPU capacity plan {report.months[0]} to {report.months[-1]}", "",
             f"- **Plan spend:** {_usd(s['total_usd'])} (usage {_usd(s['usage_usd'])}, commitments "
             f"{_usd(s['commitment_usd'])})"]
    if h.granted_total_usd is not None:
        lines.append(f"- **If the quota requests are granted:** {_usd(h.granted_total_usd)} ({h.requests} request(s); "
                     f"unmet GPU-hours fall to {_num(h.granted_unmet_gpu_hours)})")
    lines.append(f"- **Unmet demand:** {_num(h.unmet_gpu_hours)} GPU-hours, worth {_usd(h.unmet_value_usd)} at the "
                 f"penalty rate of {_usd(h.penalty_usd_per_gpu_hour)}/GPU-hour (a value, not spend)")
    if h.position is not None:
        lines.append(f"- **Budget position (plan that serves all demand):** {h.position_text()}")
    lines += [f"- **Versus greedy plan:** {_usd(s['total_usd'] - s['greedy_total_usd'], sign=True)} "
              f"(greedy {_usd(s['greedy_total_usd'])})",
              f"- **Plan status:** {s['status']}, proven within {s['gap']:.3%} of the cheapest plan",
              f"- **Prices as of:** {s['prices']['as_of'] or 'an unstated date'}"
              + (f" ({s['prices']['age_days']} days old)" if s["prices"]["age_days"] is not None else ""), ""]
    if s["prices"]["warning"]:
        lines += [f"> **Warning:** {s['prices']['warning']}", ""]
    late = [q for q in report.requests if report.overdue(q)]
    if late:
        lines += [f"> **Overdue:** {len(late)} quota request(s) are past their file-by day: filed today they cannot be "
                  "granted in time for the month they are needed.", ""]
    if report.requests:
        lines += ["## Quota requests to file", "", "| cloud | region | GPU | market | ask | file by |",
                  "|---|---|---|---|---:|---|"]
        lines += [f"| {q.cloud.value} | {q.region} | {q.gpu} | {q.market.value} | +{q.increase_gpus} GPUs "
                  f"(+{q.native_increase} {q.native_unit} {q.native_quota}) | {q.request_by}"
                  + (" **overdue**" if report.overdue(q) else "") + " |"
                  for q in report.requests]
        lines.append("")
    if report.commitments:
        lines += ["## Commitments", "", "| cloud | region | machine type | term | from | GPUs | charge | break-even "
                  "| expected use |", "|---|---|---|---|---|---:|---:|---:|---:|"]
        lines += [f"| {a.line.cloud.value} | {a.line.region} | {a.line.machine_type} | {a.line.option.value} | "
                  f"{a.line.start_month} | {a.line.gpus} | {_usd(a.line.usd_total)} | {_pct(a.break_even_utilisation)}"
                  f" | {_pct(a.expected_utilisation)} |" for a in report.commitments]
        lines.append("")
    if report.held:
        lines += held.markdown(report.held)
    lines += ["## Spend by team", "",
              "| team | unmet GPU-hours | total | budget | planned in budgeted months | variance |",
              "|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {t.team} | {_num(t.unmet_gpu_hours)} | {_usd(t.total_usd)} | {_usd(t.budget_usd)} | "
              f"{_usd(t.planned_in_budget_usd)} | {_usd(t.variance_usd, sign=True)}"
              + (" (demand unmet)" if t.variance_usd is not None and t.variance_usd <= 0 and t.unmet_gpu_hours > 0
                 else "") + " |" for t in report.teams]
    lines += ["", "Full report: report.html (charts) and report.xlsx (every figure)."]
    return "\n".join(lines) + "\n"


def write(path: Path, report: Report) -> None:
    path.write_text(render(report), encoding="utf-8")
