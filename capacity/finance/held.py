"""The finance report's held-capacity section, when the plan was given a recorded ledger (`--ledger`): how much of
the capacity the fleet already holds the plan uses and what sits idle, its sunk cost, and each block or reservation
that ends while the plan still runs on it, with what the plan runs from elsewhere after it. Read from summary.json's
"held" (capacity/held.py, docs/capacity.md): a chart, an HTML fragment, an XLSX sheet and Markdown lines."""
# ruff: noqa: E501  (the Jinja template below keeps one HTML table row per line)

from __future__ import annotations

from typing import Any

import jinja2
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from openpyxl import Workbook

from capacity.held import ending

Doc = dict[str, Any]

TEMPLATE = """<h2 id="held">Capacity already held: used and idle</h2>
<p>The plan uses the capacity blocks and reservations the fleet already holds first: {{ d.used_gpu_hours|num }} of their {{ d.gpu_hours|num }} GPU-hours in the horizon ({{ (d.used_gpu_hours / d.gpu_hours if d.gpu_hours else none)|pct }}); {{ d.idle_gpu_hours|num }} sit idle. Already paid for: {{ "unknown (a rate the ledger does not know)" if d.sunk_usd is none else d.sunk_usd|usd }}, not in the plan's spend.</p>
{% for c in charts if c.key == 'held_use' %}<img alt="{{ c.title }}" src="{{ c.data_uri }}">{% endfor %}
<table id="held-capacity"><tr><th>id</th><th>kind</th><th>cloud</th><th>region</th><th>machine type</th><th>GPUs</th><th>end (UTC)</th><th>held GPU-hours</th><th>used</th><th>idle</th><th>sunk cost in horizon</th></tr>
{% for u in d.capacity %}<tr><td>{{ u.id }}</td><td>{{ u.option }}</td><td>{{ u.cloud }}</td><td>{{ u.region }}</td><td>{{ u.machine_type }}</td><td class="n">{{ u.gpus|num }}</td><td{% if u.ends_inside_plan %} class="over"{% endif %}>{{ u.end or "until released" }}</td><td class="n">{{ u.gpu_hours|num }}</td><td class="n">{{ u.used_gpu_hours|num }}</td><td class="n{{ ' over' if u.idle_gpu_hours > 0 else '' }}">{{ u.idle_gpu_hours|num }}</td><td class="n">{{ "unknown" if u.sunk_usd is none else u.sunk_usd|usd }}</td></tr>
{% endfor %}</table>
{% for u in d.capacity if u.ends_inside_plan %}<p class="over ending">{{ ending(u) }}</p>
{% endfor %}{% if d.left_out %}<p class="note">Not used as held capacity: {{ d.left_out|join("; ") }}.</p>{% endif %}
"""


def figures(doc: Doc) -> list[tuple[str, str, Figure]]:
    rows = doc["capacity"]
    if not rows:
        return []
    fig, ax = plt.subplots(figsize=(11, 0.8 + 0.35 * len(rows)), layout="constrained")
    y = np.arange(len(rows))
    used = [u["used_gpu_hours"] for u in rows]
    ax.barh(y, used, color="#2e7d32", label="used by the plan")
    ax.barh(y, [u["idle_gpu_hours"] for u in rows], left=used, color="#c62828", label="idle (paid for)")
    ax.set_yticks(y, [f"{u['id'][-40:]} (ends {u['end'][:10] if u['end'] else 'when released'})" for u in rows],
                  fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("GPU-hours in the horizon")
    ax.set_title("Capacity already held: used and idle")
    ax.legend(fontsize=9, frameon=False)
    return [("held_use", "Capacity already held: used and idle", fig)]


def html(env: jinja2.Environment, doc: Doc, charts: list[Any]) -> str:
    return env.from_string(TEMPLATE).render(d=doc, charts=charts, ending=ending)


def markdown(doc: Doc) -> list[str]:
    lines = ["## Capacity already held", "",
             f"The plan uses {doc['used_gpu_hours']:,.0f} of the {doc['gpu_hours']:,.0f} GPU-hours the fleet already "
             f"holds in the horizon; {doc['idle_gpu_hours']:,.0f} sit idle. Already paid for: "
             + ("unknown" if doc["sunk_usd"] is None else f"${doc['sunk_usd']:,.2f}") + ", not in the plan's spend.", "",
             "| id | cloud | region | machine type | GPUs | end | held GPU-hours | used | idle |",
             "|---|---|---|---|---:|---|---:|---:|---:|"]
    lines += [f"| {u['id']} | {u['cloud']} | {u['region']} | {u['machine_type']} | {u['gpus']} | "
              f"{u['end'] or 'until released'} | {u['gpu_hours']:,.0f} | {u['used_gpu_hours']:,.0f} | "
              f"{u['idle_gpu_hours']:,.0f} |" for u in doc["capacity"]]
    lines.append("")
    lines += [f"> **Ends inside the plan:** {ending(u)}" for u in doc["capacity"] if u["ends_inside_plan"]]
    return [*lines, ""]


def sheet(wb: Workbook, doc: Doc, make: Any, usd: str, hours: str) -> None:
    """Sheet Held capacity (``make``: xlsx._sheet)."""
    rows = [[u["id"], u["option"], u["cloud"], u["region"], u["machine_type"], u["gpus"], u["start"], u["end"],
             u["gpu_hours"], u["used_gpu_hours"], u["idle_gpu_hours"], "unknown" if u["sunk_usd"] is None else u["sunk_usd"],
             ending(u) if u["ends_inside_plan"] else ""] for u in doc["capacity"]]
    make(wb, "Held capacity", ["id", "kind", "cloud", "region", "machine type", "GPUs", "start", "end",
                               "held GPU-hours", "used GPU-hours", "idle GPU-hours", "sunk USD in horizon",
                               "ends inside the plan"], rows, {8: hours, 9: hours, 10: hours, 11: usd})
