"""report.md: a short summary of the report for an email or a pull request."""

from __future__ import annotations

from pathlib import Path

from capacity import staleness
from capacity.finance.html import _num, _pct, _usd
from capacity.finance.model import Report


def render(report: Report) -> str:
    s = report.summary
    lines = [f"# GPU capacity plan {report.months[0]} to {report.months[-1]}", "",
             f"- **Total spend:** {_usd(s['total_usd'])} (usage {_usd(s['usage_usd'])}, commitments "
             f"{_usd(s['commitment_usd'])})"]
    if report.budget_usd is not None:
        budgeted = {v.month for v in report.variance or []}
        in_budget = sum(v for (m, _), v in report.team_month.items() if m in budgeted)
        lines.append(f"- **Versus budget:** {_usd(in_budget - report.budget_usd, sign=True)} (plan {_usd(in_budget)} "
                     f"in budgeted months, budget {_usd(report.budget_usd)})")
    lines += [f"- **Versus greedy plan:** {_usd(s['total_usd'] - s['greedy_total_usd'], sign=True)} "
              f"(greedy {_usd(s['greedy_total_usd'])})",
              f"- **Unmet GPU-hours:** {_num(s['unmet_gpu_hours'])}"
              + ("" if s["unmet_after_requests_gpu_hours"] is None
                 else f" ({_num(s['unmet_after_requests_gpu_hours'])} if the quota requests are granted)"),
              f"- **Plan status:** {s['status']}, proven within {s['gap']:.3%} of the cheapest plan",
              f"- **Prices as of:** {s['prices']['as_of'] or 'an unstated date'}"
              + (f" ({s['prices']['age_days']} days old)" if s["prices"]["age_days"] is not None else ""), ""]
    if s["prices"]["warning"]:
        lines += [f"> **Warning:** {s['prices']['warning']}", ""]
    if report.requests:
        lines += ["## Quota requests to file", "", "| cloud | region | GPU | market | ask | file by |",
                  "|---|---|---|---|---:|---|"]
        lines += [f"| {q.cloud.value} | {q.region} | {q.gpu} | {q.market.value} | +{q.increase_gpus} GPUs "
                  f"(+{q.native_increase} {q.native_unit} {q.native_quota}) | {q.request_by}"
                  + (" **overdue**" if staleness.overdue(q.request_by) else "") + " |"
                  for q in report.requests]
        lines.append("")
    if report.commitments:
        lines += ["## Commitments", "", "| cloud | region | machine type | term | from | GPUs | charge | break-even "
                  "| expected use |", "|---|---|---|---|---|---:|---:|---:|---:|"]
        lines += [f"| {a.line.cloud.value} | {a.line.region} | {a.line.machine_type} | {a.line.option.value} | "
                  f"{a.line.start_month} | {a.line.gpus} | {_usd(a.line.usd_total)} | {_pct(a.break_even_utilisation)}"
                  f" | {_pct(a.expected_utilisation)} |" for a in report.commitments]
        lines.append("")
    lines += ["## Spend by team", "", "| team | total | budget | variance |", "|---|---:|---:|---:|"]
    lines += [f"| {t.team} | {_usd(t.total_usd)} | {_usd(t.budget_usd)} | {_usd(t.variance_usd, sign=True)} |"
              for t in report.teams]
    lines += ["", "Full report: report.html (charts) and report.xlsx (every figure)."]
    return "\n".join(lines) + "\n"


def write(path: Path, report: Report) -> None:
    path.write_text(render(report), encoding="utf-8")
