"""report.html: one self-contained page (inline CSS, charts as base64 PNG, no network) for finance readers."""
# ruff: noqa: E501  (the Jinja template below keeps one HTML table row per line)

from __future__ import annotations

from pathlib import Path

import jinja2
import markupsafe

from capacity.finance import actuals, held
from capacity.finance.charts import Chart
from capacity.finance.model import Report

SECTIONS = ("Headline", "Monthly spend", "Demand forecast", "Quota headroom and requests", "Commitments",
            "Spend by team", "Assumptions", "Method")

TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>GPU capacity report {{ r.months[0] }} to {{ r.months[-1] }}</title>
<style>
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1280px;color:#222}
h1{margin-bottom:0}h2{border-bottom:2px solid #4285f4;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:1em 0;font-size:13px}th,td{border:1px solid #ddd;padding:4px 8px}
th{background:#f3f5f8;text-align:left}td{white-space:nowrap}td.w{white-space:normal}td.n{text-align:right;font-variant-numeric:tabular-nums}
.cards{display:flex;gap:1em;flex-wrap:wrap}.card{border:1px solid #ddd;border-radius:6px;padding:.8em 1.2em;min-width:200px;flex:1 1 0}
.card .v{font-size:1.6em;font-weight:600}.over{color:#c62828}.under{color:#2e7d32}.unknown{color:#b26a00}.note{color:#555;font-size:13px}
img{max-width:100%;display:block;margin:1em 0}
</style></head><body>
<h1>GPU capacity report</h1>
<p class="note">Horizon {{ r.months[0] }} to {{ r.months[-1] }} ({{ r.months|length }} months). Plan status
{{ s.status }} (proven within {{ "%.3f"|format(s.gap * 100) }} % of the cheapest possible plan).
Prices as of {{ s.prices.as_of or "an unstated date" }}{% if s.prices.age_days is not none %} ({{ s.prices.age_days }} days old){% endif %}.</p>
{% if s.prices.warning %}<p class="over" id="stale-prices"><b>Warning:</b> {{ s.prices.warning }}</p>{% endif %}

<h2 id="headline">Headline</h2>
<div class="cards">
<div class="card"><div>Plan spend for the horizon</div><div class="v">{{ s.total_usd|usd }}</div>
<div class="note">usage {{ s.usage_usd|usd }} + commitments {{ s.commitment_usd|usd }}{% if h.unmet_gpu_hours > 0 %};<br>serves all but {{ h.unmet_gpu_hours|num }} GPU-hours{% endif %}</div></div>
<div class="card" id="granted"><div>If the quota requests are granted</div>{% if h.granted_total_usd is not none %}<div class="v">{{ h.granted_total_usd|usd }}</div>
<div class="note">{{ h.requests }} request(s) filed and granted; unmet GPU-hours fall to {{ h.granted_unmet_gpu_hours|num }}</div>{% else %}<div class="v">{{ s.total_usd|usd }}</div>
<div class="note">no quota request would serve more demand</div>{% endif %}</div>
<div class="card" id="unmet"><div>Unmet demand at the penalty rate</div><div class="v {{ 'over' if h.unmet_gpu_hours > 0 else '' }}">{{ h.unmet_value_usd|usd }}</div>
<div class="note">{{ h.unmet_gpu_hours|num }} GPU-hours x {{ h.penalty_usd_per_gpu_hour|usd }}/GPU-hour (a value, not spend){% if h.granted_unmet_value_usd is not none %};<br>{{ h.granted_unmet_value_usd|usd }} if the requests are granted{% endif %}</div></div>
{% if h.position is not none %}<div class="card" id="budget-position"><div>Budget position (plan that serves all demand)</div>
<div class="v {{ {'over': 'over', 'within': 'under', 'unknown': 'unknown'}[h.position.value] }}">{{ {'over': 'Over budget', 'within': 'Within budget', 'unknown': 'Not known'}[h.position.value] }}{% if h.variance_usd is not none %} {{ h.variance_usd|usd(sign=True) }}{% endif %}</div>
<div class="note">{{ h.position_text() }}</div></div>{% endif %}
<div class="card"><div>Versus the greedy plan ({{ s.greedy_total_usd|usd }})</div>
<div class="v">{{ (s.total_usd - s.greedy_total_usd)|usd(sign=True) }}</div>
<div class="note">saving incl. unmet-demand penalty {{ s.saving_vs_greedy_usd|usd }}</div></div>
</div>
{% if overdue %}<p class="over" id="overdue"><b>Overdue:</b> {{ overdue }} quota request(s) are past their file-by day: filed today they cannot be granted in time for the month they are needed (see Quota headroom and requests).</p>{% endif %}

<h2 id="monthly-spend">Monthly spend</h2>
{% for c in charts if c.key in ('by_cloud', 'by_option', 'budget') %}<img alt="{{ c.title }}" src="{{ c.data_uri }}">
{% endfor %}
<table><tr><th>month</th>{% for k in clouds %}<th>{{ k }}</th>{% endfor %}{% for k in options %}<th>{{ k }}</th>{% endfor %}<th>total</th></tr>
{% for b in r.buckets %}<tr><td>{{ b }}</td>{% for k in clouds %}<td class="n">{{ r.by_cloud.get(b, {}).get(k, 0)|usd }}</td>{% endfor %}
{% for k in options %}<td class="n">{{ r.by_option.get(b, {}).get(k, 0)|usd }}</td>{% endfor %}<td class="n">{{ r.by_cloud.get(b, {}).values()|sum|usd }}</td></tr>
{% endfor %}<tr><th>total</th>{% for k in clouds %}<th class="n">{{ col(r.by_cloud, k)|usd }}</th>{% endfor %}{% for k in options %}<th class="n">{{ col(r.by_option, k)|usd }}</th>{% endfor %}<th class="n">{{ r.total_usd|usd }}</th></tr></table>
<p class="note">A commitment is charged for its whole term; its charge is spread evenly over its term months, and the part after the last planned month is shown as "after horizon".</p>

<h2 id="demand-forecast">Demand forecast</h2>
{% for c in charts if c.key == 'forecast' %}<img alt="{{ c.title }}" src="{{ c.data_uri }}">
<p class="note">History and forecast per GPU model, summed over teams. The plan uses the {{ quantile }} forecast.</p>
{% else %}<p class="note">No history was given: the plan uses demand.csv as given, so there is no forecast to show.</p>{% endfor %}

<h2 id="quota-headroom">Quota headroom and requests</h2>
{% for c in charts if c.key == 'headroom' %}<img alt="{{ c.title }}" src="{{ c.data_uri }}">
{% else %}<p class="note">No quotas file was given: the plan assumes unlimited quotas.</p>{% endfor %}
{% if r.requests %}<p>Quota increases to file (in the cloud's own units), and by when:</p>
<table><tr><th>cloud</th><th>region</th><th>GPU</th><th>market</th><th>now (GPUs)</th><th>ask (GPUs)</th><th>native request</th><th>needed from</th><th>file by</th><th>GPU-hours it enables</th></tr>
{% for q in r.requests %}<tr><td>{{ q.cloud.value }}</td><td>{{ q.region }}</td><td>{{ q.gpu }}</td><td>{{ q.market.value }}</td><td class="n">{{ q.current_max_gpus|num }}</td><td class="n">{{ q.requested_max_gpus|num }}</td><td>+{{ q.native_increase|num }} {{ q.native_unit }} {{ q.native_quota }}</td><td>{{ q.month_needed }}</td><td{% if r.overdue(q) %} class="over"{% endif %}>{{ q.request_by }}{% if r.overdue(q) %} (overdue){% endif %}</td><td class="n">{{ q.gpu_hours_enabled|num }}</td></tr>
{% endfor %}</table>{% if s.quota_requests_proven == false %}<p class="note">Not proven: the relaxed-quota solve behind these requests stopped at its time limit ({{ s.relaxed_status }}, gap {{ "%.3f"|format(s.relaxed_gap * 100) }} %), so a smaller set of increases may serve the same demand.</p>{% endif %}{% else %}<p>No quota requests are needed.</p>{% endif %}

{% if r.shortfall %}<h2 id="shortfall">Unserved demand and why</h2>
<table><tr><th>month</th><th>team</th><th>GPU</th><th>gang GPUs</th><th>unmet GPU-hours</th><th>why</th></tr>
{% for x in r.shortfall[:50] %}<tr><td>{{ x.month }}</td><td>{{ x.team }}</td><td>{{ x.gpu }}</td><td class="n">{{ x.gang_gpus }}</td><td class="n">{{ x.unmet_gpu_hours|num }}</td><td class="w">{{ x.reason }}</td></tr>
{% endfor %}</table>{% if r.shortfall|length > 50 %}<p class="note">The {{ r.shortfall|length - 50 }} smaller rows are in shortfall.csv and report.xlsx.</p>{% endif %}{% endif %}

<h2 id="commitments">Commitments</h2>
{% if r.commitments %}<table><tr><th>cloud</th><th>region</th><th>machine type</th><th>term</th><th>from</th><th>nodes</th><th>GPUs</th><th>charge (whole term)</th><th>rate $/GPU-h</th><th>on-demand $/GPU-h</th><th>break-even utilisation</th><th>expected utilisation</th><th>coverage</th><th>saving vs on-demand in horizon</th></tr>
{% for a in r.commitments %}<tr><td>{{ a.line.cloud.value }}</td><td>{{ a.line.region }}</td><td>{{ a.line.machine_type }}</td><td>{{ a.line.option.value }}</td><td>{{ a.line.start_month }}</td><td class="n">{{ a.line.nodes }}</td><td class="n">{{ a.line.gpus }}</td><td class="n">{{ a.line.usd_total|usd }}</td><td class="n">{{ "%.4f"|format(a.usd_per_gpu_hour) }}</td><td class="n">{{ "-" if a.on_demand_usd_per_gpu_hour is none else "%.4f"|format(a.on_demand_usd_per_gpu_hour) }}</td><td class="n">{{ a.break_even_utilisation|pct }}</td><td class="n">{{ a.expected_utilisation|pct }}</td><td class="n">{{ a.coverage|pct }}</td><td class="n">{{ a.saving_vs_on_demand_usd|usd }}</td></tr>
{% endfor %}</table>
<p class="note">A commitment pays off when it is used more than its break-even utilisation (its rate over the on-demand rate). Expected utilisation: committed GPU-hours the plan uses over the committed GPU-hours inside the horizon. Coverage: the share of the site's non-spot GPU-hours it serves.</p>
{% else %}<p>The plan buys no commitments.</p>{% endif %}

{{ held_section }}
<h2 id="teams">Spend by team</h2>
<table><tr><th>team / cost center</th><th>GPU-hours served</th><th>unmet GPU-hours</th><th>usage</th><th>commitments</th><th>total</th>{% if r.variance is not none %}<th>budget</th><th>planned in budgeted months</th><th>variance</th>{% endif %}</tr>
{% for t in r.teams %}<tr><td>{{ t.team }}</td><td class="n">{{ t.gpu_hours|num }}</td><td class="n{{ ' over' if t.unmet_gpu_hours > 0 else '' }}">{{ t.unmet_gpu_hours|num }}</td><td class="n">{{ t.usage_usd|usd }}</td><td class="n">{{ t.commitment_usd|usd }}</td><td class="n">{{ t.total_usd|usd }}</td>{% if r.variance is not none %}<td class="n">{{ t.budget_usd|usd }}</td><td class="n">{{ t.planned_in_budget_usd|usd }}</td><td class="n {{ 'over' if t.variance_usd > 0 else 'unknown' if t.unmet_gpu_hours > 0 else 'under' }}">{{ t.variance_usd|usd(sign=True) }}{% if t.variance_usd <= 0 and t.unmet_gpu_hours > 0 %} (demand unmet){% endif %}</td>{% endif %}</tr>
{% endfor %}<tr><th>total</th><th class="n">{{ r.teams|sum(attribute='gpu_hours')|num }}</th><th class="n">{{ r.teams|sum(attribute='unmet_gpu_hours')|num }}</th><th class="n">{{ s.usage_usd|usd }}</th><th class="n">{{ s.commitment_usd|usd }}</th><th class="n">{{ s.total_usd|usd }}</th>{% if r.variance is not none %}<th class="n">{{ r.budget_usd|usd }}</th><th class="n">{{ r.teams|sum(attribute='planned_in_budget_usd')|usd }}</th><th class="n">{{ (r.teams|sum(attribute='planned_in_budget_usd') - r.budget_usd)|usd(sign=True) }}</th>{% endif %}</tr></table>
{% if r.variance is not none %}<p class="note">Budget, planned cost and variance cover the budgeted months only (variance = planned - budget, positive = over budget); "total" also holds commitment charges after the horizon. A team whose demand is partly unmet is never shown as under budget in green: its plan does not buy the GPUs it is short of. Every month and cost center is in report.xlsx (sheet By team).</p>{% endif %}

{{ actuals_section }}
<h2 id="assumptions">Assumptions</h2>
<table>{% for k, v in r.assumptions %}<tr><th>{{ k }}</th><td class="w">{{ v }}</td></tr>{% endfor %}</table>
<table><tr><th>cloud</th><th>price snapshot dates</th><th>offers used</th></tr>
{% for cloud, dates, n in price_dates %}<tr><td>{{ cloud }}</td><td>{{ dates }}</td><td class="n">{{ n }}</td></tr>{% endfor %}</table>

<h2 id="method">Method</h2>
<p>Demand {% if r.fans %}is forecast per team and GPU with exponential smoothing (ETS: damped trend, yearly seasonality with 24+ months of history) and planned at the {{ quantile }} quantile{% else %}is taken from demand.csv{% endif %}.
The plan is the cheapest mix of clouds, regions, on-demand, spot and 1- and 3-year commitments that serves the demand within the quotas,
found by a mixed-integer program (HiGHS) and proven within {{ "%.3f"|format(s.gap * 100) }} % of the lowest possible cost (lower bound {{ s.lower_bound_usd|usd }}).
Demand that cannot be served is priced at a penalty of {{ s.penalty_usd_per_gpu_hour|usd }} per GPU-hour in the optimisation only; it is not spend.
The greedy baseline takes the cheapest offer first, month by month. An independent checker re-verified every line of the plan
({{ 'passed' if s.check.ok else s.check.violations ~ ' violation(s)' }}). Amounts are computed unrounded and rounded only for display; totals match summary.json to the cent.</p>
</body></html>
"""


def _usd(x: float | None, sign: bool = False) -> str:
    if x is None:
        return "-"
    text = f"${abs(x):,.2f}"
    return ("-" if x < 0 else "+" if sign and x > 0 else "") + text


def _num(x: float | int | None) -> str:
    return "-" if x is None else f"{x:,.0f}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def render(report: Report, charts: list[Chart], quantile: str) -> str:
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters.update(usd=_usd, num=_num, pct=_pct)
    from capacity.finance.model import CLOUDS, OPTIONS

    dates: dict[str, tuple[set[str], int]] = {}
    for o in report.prices:
        seen, n = dates.get(o.cloud.value, (set(), 0))
        dates[o.cloud.value] = (seen | {o.as_of or "undated"}, n + 1)
    return env.from_string(TEMPLATE).render(
        r=report, s=report.summary, charts=charts, quantile=quantile, clouds=CLOUDS, options=OPTIONS,
        h=report.headline, overdue=sum(report.overdue(q) for q in report.requests),
        col=lambda by, k: sum(v.get(k, 0.0) for v in by.values()),
        price_dates=[(c, ", ".join(sorted(d)), n) for c, (d, n) in sorted(dates.items())],
        actuals_section=markupsafe.Markup(actuals.html(env, report.actuals, charts)) if report.actuals else "",
        held_section=markupsafe.Markup(held.html(env, report.held, charts)) if report.held else "")


def write(path: Path, report: Report, charts: list[Chart], quantile: str) -> None:
    path.write_text(render(report, charts, quantile), encoding="utf-8")
