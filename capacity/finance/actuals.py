"""The finance report's actuals sections, when FOCUS exports are given (`capacity report --focus`): what was bought
and what was used (commitment and capacity reservation utilisation), GPU spend by team and month, and the plan
against the bill, from the gpufleet.actuals/v1 document (capacity/actuals/cli.py, docs/actuals.md). Charts,
an HTML fragment the page includes, and the XLSX sheets."""
# ruff: noqa: E501  (the Jinja template below keeps one HTML table row per line)

from __future__ import annotations

from typing import Any

import jinja2
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from openpyxl import Workbook

Doc = dict[str, Any]

TEMPLATE = """<h2 id="actuals">Actuals: plan against the bill</h2>
<p class="note">From {{ d.files|length }} FOCUS export(s), {{ d.files|sum(attribute='rows')|num }} charges ({{ d.focus_spec }}).</p>
{% for c in charts if c.key == 'actuals_plan_vs_bill' %}<img alt="{{ c.title }}" src="{{ c.data_uri }}">{% endfor %}
{% if v %}<table id="plan-vs-bill"><tr><th>month</th><th>plan</th><th>billed GPU spend</th><th>billed - plan</th><th>plan GPU-hours</th><th>billed GPU-hours</th></tr>
{% for m in v.months %}<tr><td>{{ m.month }}</td><td class="n">{{ m.plan_usd|usd }}</td><td class="n">{{ m.billed_usd|usd }}</td><td class="n">{{ "-" if m.plan_usd is none or m.billed_usd is none else (m.billed_usd - m.plan_usd)|usd(sign=True) }}</td><td class="n">{{ m.plan_gpu_hours|num }}</td><td class="n">{{ m.billed_gpu_hours|num }}</td></tr>
{% endfor %}</table>
<p>Forecast accuracy over the {{ v.months_compared }} month(s) both cover: WAPE {{ v.wape|pct }} (sum of |billed - plan| over sum billed).</p>{% endif %}
<h2 id="actuals-commitments">Actuals: what was bought and what was used</h2>
{% for c in charts if c.key == 'actuals_utilisation' %}<img alt="{{ c.title }}" src="{{ c.data_uri }}">{% endfor %}
{% if d.commitments or d.capacity_reservations %}<table id="utilisation"><tr><th>kind</th><th>id</th><th>cloud</th><th>used</th><th>unused (billed, idle)</th><th>utilisation</th></tr>
{% for kind, rows in (("commitment", d.commitments), ("capacity reservation", d.capacity_reservations)) %}{% for u in rows %}<tr><td>{{ kind }}</td><td>{{ u.id }}</td><td>{{ u.cloud or "unknown" }}</td><td class="n">{{ u.used_cost_usd|usd }}</td><td class="n{{ ' over' if u.unused_cost_usd > 0 else '' }}">{{ u.unused_cost_usd|usd }}</td><td class="n">{{ u.utilization|pct }}</td></tr>
{% endfor %}{% endfor %}</table>
<p class="note">Utilisation = used / (used + unused) cost of the commitment's usage charges (FOCUS CommitmentDiscountStatus / CapacityReservationStatus), purchases excluded.</p>{% else %}<p>No commitment or capacity reservation charges in these exports.</p>{% endif %}
<h2 id="actuals-teams">Actuals: GPU spend by team and month</h2>
{% if d.gpu_spend %}<table id="gpu-spend"><tr><th>month</th><th>team</th><th>cloud</th><th>GPU</th><th>spend</th><th>GPU-hours</th></tr>
{% for s in d.gpu_spend %}<tr><td>{{ s.month }}</td><td>{{ s.team }}</td><td>{{ s.cloud or "unknown" }}</td><td>{{ s.gpu }}</td><td class="n">{{ s.usd|usd }}</td><td class="n">{{ "unknown" if s.gpu_hours is none else s.gpu_hours|num }}</td></tr>
{% endfor %}</table>{% else %}<p>No charge names a catalogue GPU machine type.</p>{% endif %}
"""


def figures(doc: Doc) -> list[tuple[str, str, Figure]]:
    out = []
    versus = doc.get("plan_vs_bill")
    if versus and versus["months"]:
        out.append(("actuals_plan_vs_bill", "Plan against the bill", _plan_vs_bill(versus["months"])))
    rows = [("C " + u["id"], u) for u in doc["commitments"]] + [("R " + u["id"], u) for u in doc["capacity_reservations"]]
    if rows:
        out.append(("actuals_utilisation", "Commitment and reservation utilisation", _utilisation(rows)))
    return out


def _plan_vs_bill(months: list[dict[str, Any]]) -> Figure:
    fig, ax = plt.subplots(figsize=(11, 4.2), layout="constrained")
    x = np.arange(len(months))
    for offset, key, label, colour in ((-0.2, "plan_usd", "plan", "#9fa8da"), (0.2, "billed_usd", "billed", "#283593")):
        ax.bar(x + offset, [m[key] or 0.0 for m in months], 0.4, label=label, color=colour)
    ax.set_xticks(x, [m["month"] for m in months], rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("USD")
    ax.set_title("GPU spend: plan against the bill (a month without a bar: not covered)")
    ax.legend(fontsize=9, frameon=False)
    return fig


def _utilisation(rows: list[tuple[str, dict[str, Any]]]) -> Figure:
    fig, ax = plt.subplots(figsize=(11, 0.5 + 0.35 * len(rows)), layout="constrained")
    y = np.arange(len(rows))
    used = [u["used_cost_usd"] for _, u in rows]
    ax.barh(y, used, color="#2e7d32", label="used")
    ax.barh(y, [u["unused_cost_usd"] for _, u in rows], left=used, color="#c62828", label="unused (billed, idle)")
    ax.set_yticks(y, [label[:60] for label, _ in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("USD")
    ax.set_title("Used and unused cost per commitment (C) and capacity reservation (R)")
    ax.legend(fontsize=9, frameon=False)
    return fig


def html(env: jinja2.Environment, doc: Doc, charts: list[Any]) -> str:
    return env.from_string(TEMPLATE).render(d=doc, v=doc.get("plan_vs_bill"), charts=charts)


def sheets(wb: Workbook, doc: Doc, sheet: Any, usd: str, pct: str, hours: str) -> None:
    """Sheets Actuals plan vs bill, Actuals utilisation, Actuals GPU spend (``sheet``: xlsx._sheet)."""
    versus = doc.get("plan_vs_bill")
    if versus:
        rows = [[m["month"], m["plan_usd"], m["billed_usd"], m["plan_gpu_hours"], m["billed_gpu_hours"]]
                for m in versus["months"]]
        rows.append(["WAPE (months both cover)", None, None, None, None])
        rows.append([f"{versus['months_compared']} month(s)", versus["wape"], None, None, None])
        sheet(wb, "Actuals plan vs bill", ["month", "plan USD", "billed GPU spend USD", "plan GPU-hours",
                                           "billed GPU-hours"], rows, {1: usd, 2: usd, 3: hours, 4: hours})
        wb["Actuals plan vs bill"].cell(row=len(rows) + 1, column=2).number_format = pct
    rows = [[kind, u["id"], u["cloud"], u["used_cost_usd"], u["unused_cost_usd"], u["utilization"]]
            for kind, key in (("commitment", "commitments"), ("capacity reservation", "capacity_reservations"))
            for u in doc[key]]
    sheet(wb, "Actuals utilisation", ["kind", "id", "cloud", "used USD", "unused USD", "utilisation"], rows,
          {3: usd, 4: usd, 5: pct})
    rows = [[s["month"], s["team"], s["cloud"], s["gpu"], s["usd"], s["gpu_hours"]] for s in doc["gpu_spend"]]
    sheet(wb, "Actuals GPU spend", ["month", "team", "cloud", "GPU", "USD", "GPU-hours"], rows, {4: usd, 5: hours})
