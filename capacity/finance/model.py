"""The figures of the finance report, gathered once from a planning run (unrounded; outputs only format).

Spend is money actually paid: usage lines plus commitment charges. A commitment's charge (its whole term,
as in summary.json) is spread evenly over its term months; the part falling after the horizon is shown as
"after the horizon", so every breakdown adds up to summary.json's total_usd. Within a month a commitment's
charge is shared among the teams that used it, by their committed GPU-hours (unused: "(idle commitments)").
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from capacity import staleness
from capacity.finance import headline
from capacity.finance.budget import BudgetRow, VarianceRow, variance
from capacity.finance.headline import Headline
from capacity.forecast import Forecast
from capacity.planner import Run
from capacity.schema import (
    CommitmentLine,
    HistoryRow,
    OfferRow,
    Option,
    QuotaRequest,
    ShortfallLine,
    add_months,
    charged_hours,
    hours,
)

AFTER = "after horizon"
IDLE = "(idle commitments)"
CLOUDS = ("aws", "gcp", "azure")
OPTIONS = tuple(o.value for o in Option)


@dataclass
class TeamRow:
    team: str
    gpu_hours: float
    unmet_gpu_hours: float
    usage_usd: float
    commitment_usd: float
    budget_usd: float | None = None
    planned_in_budget_usd: float | None = None  # the team's planned cost in the budgeted months

    @property
    def total_usd(self) -> float:
        """Everything the plan charges the team, commitment charges after the horizon included."""
        return self.usage_usd + self.commitment_usd

    @property
    def variance_usd(self) -> float | None:
        """Planned cost minus budget over the same (budgeted) months: positive means over budget."""
        if self.budget_usd is None or self.planned_in_budget_usd is None:
            return None
        return self.planned_in_budget_usd - self.budget_usd


@dataclass
class CommitmentAdvice:
    line: CommitmentLine
    usd_per_gpu_hour: float
    on_demand_usd_per_gpu_hour: float | None
    used_gpu_hours: float  # committed GPU-hours the plan uses within the horizon
    capacity_gpu_hours: float  # committed GPUs x hours of the term months inside the horizon
    site_gpu_hours: float  # all on-demand-market GPU-hours of the site in those months
    charge_in_horizon_usd: float

    @property
    def break_even_utilisation(self) -> float | None:
        """Utilisation above which the commitment is cheaper than paying on-demand for the same hours."""
        od = self.on_demand_usd_per_gpu_hour
        return None if not od else self.usd_per_gpu_hour / od

    @property
    def expected_utilisation(self) -> float | None:
        return None if self.capacity_gpu_hours <= 0 else self.used_gpu_hours / self.capacity_gpu_hours

    @property
    def coverage(self) -> float | None:
        """Share of the site's non-spot GPU-hours (in the term months inside the horizon) it serves."""
        return None if self.site_gpu_hours <= 0 else self.used_gpu_hours / self.site_gpu_hours

    @property
    def saving_vs_on_demand_usd(self) -> float | None:
        od = self.on_demand_usd_per_gpu_hour
        return None if od is None else self.used_gpu_hours * od - self.charge_in_horizon_usd


@dataclass
class Headroom:
    label: str  # "aws us-east-1 H100 on_demand"
    quota_gpus: float
    used_gpus: list[float]  # per month of the horizon

    def headroom(self) -> list[float]:
        return [self.quota_gpus - u for u in self.used_gpus]


@dataclass
class Fan:
    gpu: str
    history_months: list[str]
    history_gpu_hours: list[float]
    months: list[str]
    p50: list[float]
    p80: list[float]
    p90: list[float]


@dataclass
class Report:
    summary: dict[str, Any]
    months: list[str]
    by_cloud: dict[str, dict[str, float]]  # month (or AFTER) -> cloud -> USD
    by_option: dict[str, dict[str, float]]  # month (or AFTER) -> option -> USD
    teams: list[TeamRow]
    team_month: dict[tuple[str, str], float]  # (month, team) -> USD, horizon months only
    commitments: list[CommitmentAdvice]
    requests: list[QuotaRequest]
    headroom: list[Headroom]
    fans: list[Fan]
    variance: list[VarianceRow] | None
    prices: list[OfferRow]
    headline: Headline
    assumptions: list[tuple[str, str]] = field(default_factory=list)
    shortfall: list[ShortfallLine] = field(default_factory=list)  # largest first, each with its reason
    on: dt.date = field(default_factory=staleness.today)  # the day quota requests are judged overdue against
    actuals: dict[str, Any] | None = None  # the gpufleet.actuals/v1 document when FOCUS exports were given

    @property
    def held(self) -> dict[str, Any] | None:
        """summary.json's "held" when the plan had held capacity (a ledger), else None."""
        found = self.summary.get("held")
        return found if found and (found["capacity"] or found["left_out"]) else None

    def overdue(self, request: QuotaRequest) -> bool:
        return staleness.overdue(request.request_by, self.on)

    @property
    def total_usd(self) -> float:
        return sum(sum(v.values()) for v in self.by_cloud.values())

    @property
    def budget_usd(self) -> float | None:
        return None if self.variance is None else sum(v.budget_usd for v in self.variance)

    @property
    def buckets(self) -> list[str]:
        """The months, then AFTER when a commitment runs past the horizon."""
        return self.months + ([AFTER] if AFTER in self.by_cloud else [])


def _split(total: float, weights: dict[str, float]) -> dict[str, float]:
    whole = sum(weights.values())
    if whole <= 0:
        return {IDLE: total}
    return {k: total * w / whole for k, w in weights.items() if w > 0}


def build(run: Run, summary: dict[str, Any], budget: Sequence[BudgetRow] | None = None,
          history: Sequence[HistoryRow] | None = None, forecast: Forecast | None = None,
          quantile: str | None = None, on: dt.date | None = None) -> Report:
    months = list(run.problem.months)
    index = {m: i for i, m in enumerate(months)}
    by_cloud: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    by_option: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    team_month: dict[tuple[str, str], float] = defaultdict(float)
    team_commit: dict[str, float] = defaultdict(float)
    team_usage: dict[str, float] = defaultdict(float)
    team_hours: dict[str, float] = defaultdict(float)
    committed: dict[tuple, dict[str, float]] = defaultdict(lambda: defaultdict(float))  # (site, option, month)
    site_hours: dict[tuple, float] = defaultdict(float)  # (site, month) on-demand market GPU-hours
    for line in run.plan.lines:
        site = (line.cloud.value, line.region, line.gpu)
        by_cloud[line.month][line.cloud.value] += line.usd
        by_option[line.month][line.option.value] += line.usd
        team_month[(line.month, line.team)] += line.usd
        team_usage[line.team] += line.usd
        team_hours[line.team] += line.gpu_hours
        if line.option.is_commit:
            committed[(site, line.option.value, line.month)][line.team] += line.gpu_hours
        if line.option is not Option.SPOT:
            site_hours[(site, line.month)] += line.gpu_hours
    # capacity of commitments per (site, option, month): usage is shared among them by capacity
    capacity: dict[tuple, float] = defaultdict(float)
    for c in run.plan.commitments:
        for k in range(c.option.term_months):
            m = add_months(c.start_month, k)
            if m in index:
                capacity[((c.cloud.value, c.region, c.gpu), c.option.value, m)] += c.gpus * hours(m)
    advice = []
    for c in run.plan.commitments:
        site = (c.cloud.value, c.region, c.gpu)
        per_month = c.usd_total / c.option.term_months
        used = cap = around = in_horizon = 0.0
        total_share: dict[str, float] = defaultdict(float)
        for k in range(c.option.term_months):
            m = add_months(c.start_month, k)
            bucket = m if m in index else AFTER
            by_cloud[bucket][c.cloud.value] += per_month
            by_option[bucket][c.option.value] += per_month
            if bucket == AFTER:
                continue
            in_horizon += per_month
            key = (site, c.option.value, m)
            mine = c.gpus * hours(m)
            share = mine / capacity[key] if capacity[key] else 0.0
            users = {t: h * share for t, h in committed[key].items()}
            for team, usd in _split(per_month, users).items():
                team_month[(m, team)] += usd
                team_commit[team] += usd
            for t, h in users.items():
                total_share[t] += h
            used += sum(users.values())
            cap += mine
            around += site_hours[(site, m)]
        after = c.usd_total - in_horizon
        if after:
            for team, usd in _split(after, total_share).items():
                team_commit[team] += usd
        offer = next((x.offer for x in run.problem.sites[(c.cloud, c.region, c.gpu)].commits
                      if x.offer.machine_type == c.machine_type and x.offer.option is c.option), None)
        rate = offer.usd_per_gpu_hour if offer else c.usd_total / (c.gpus * charged_hours(c.option, c.start_month))
        od = run.problem.sites[(c.cloud, c.region, c.gpu)].on_demand
        advice.append(CommitmentAdvice(c, rate, od.usd_per_gpu_hour if od else None, used, cap, around, in_horizon))
    unmet: dict[str, float] = defaultdict(float)
    for s in run.plan.shortfall:
        unmet[s.team] += s.unmet_gpu_hours
    variance_rows = None
    budget_by_team: dict[str, float] = defaultdict(float)
    outside = 0
    if budget is not None:
        outside = sum(1 for b in budget if b.month not in index)
        budget = [b for b in budget if b.month in index]  # only the planned months are compared
        variance_rows = variance(budget, team_month)
        for b in budget:
            budget_by_team[b.cost_center] += b.usd
    budget_months = {b.month for b in budget or []}
    planned: dict[str, float] = defaultdict(float)
    for (m, team), usd in team_month.items():
        if m in budget_months:
            planned[team] += usd
    names = sorted(set(team_usage) | set(team_commit) | set(unmet) | set(budget_by_team))
    teams = [TeamRow(t, team_hours.get(t, 0.0), unmet.get(t, 0.0), team_usage.get(t, 0.0), team_commit.get(t, 0.0),
                     None if budget is None else budget_by_team.get(t, 0.0),
                     None if budget is None else planned.get(t, 0.0)) for t in names]
    return Report(summary=summary, months=months, by_cloud={k: dict(v) for k, v in by_cloud.items()},
                  by_option={k: dict(v) for k, v in by_option.items()}, teams=teams, team_month=dict(team_month),
                  commitments=advice, requests=list(run.requests), headroom=_headroom(run, months),
                  fans=_fans(history, forecast) if history and forecast else [], variance=variance_rows,
                  prices=_prices(run), assumptions=_assumptions(run, summary, quantile, forecast is not None)
                  + ([("Budget", f"{outside} budget.csv row(s) outside the horizon are not compared")]
                     if outside else []),
                  shortfall=sorted(run.plan.shortfall, key=lambda x: (-x.unmet_gpu_hours, x.month, x.team)),
                  headline=headline.build(run, None if budget is None else sum(b.usd for b in budget), budget_months),
                  on=on or staleness.today())


def _headroom(run: Run, months: list[str]) -> list[Headroom]:
    if not run.problem.quotas_given:
        return []
    used: dict[tuple[str, str, str, str], list[float]] = defaultdict(lambda: [0.0] * len(months))
    index = {m: i for i, m in enumerate(months)}
    for line in run.plan.lines:
        key = (line.cloud.value, line.region, line.gpu, line.option.market.value)
        used[key][index[line.month]] += line.gpu_hours / hours(line.month)
    out = []
    for site in sorted(run.problem.sites.values(), key=lambda s: (s.gpu, s.key[0].value, s.region)):
        for market in ("on_demand", "spot"):
            quota = site.quota_on_demand if market == "on_demand" else site.quota_spot
            key = (site.cloud.value, site.region, site.gpu, market)
            if quota > 0 or key in used:
                out.append(Headroom(" ".join(key), quota, used[key] if key in used else [0.0] * len(months)))
    return out


def _fans(history: Sequence[HistoryRow], forecast: Forecast) -> list[Fan]:
    past: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for h in history:
        past[h.gpu][h.month] += h.gpu_hours
    ahead: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0, 0.0]))
    for r in forecast.intervals:
        row = ahead[r.gpu][r.month]
        row[0] += r.p50_gpu_hours
        row[1] += r.p80_gpu_hours
        row[2] += r.p90_gpu_hours
    fans = []
    for gpu in sorted(past):
        hm = sorted(past[gpu])
        fm = sorted(ahead[gpu])
        fans.append(Fan(gpu, hm, [past[gpu][m] for m in hm], fm, [ahead[gpu][m][0] for m in fm],
                        [ahead[gpu][m][1] for m in fm], [ahead[gpu][m][2] for m in fm]))
    return fans


def _prices(run: Run) -> list[OfferRow]:
    """The offers the plan buys from (the price snapshot rows behind every dollar)."""
    used: dict[tuple, OfferRow] = {}
    for line in run.plan.lines:
        site = run.problem.sites[(line.cloud, line.region, line.gpu)]
        offer = site.spot if line.option is Option.SPOT else None if line.option.is_commit else site.on_demand
        if offer is not None:
            used[offer.key] = offer
    for c in run.plan.commitments:
        for x in run.problem.sites[(c.cloud, c.region, c.gpu)].commits:
            if x.offer.machine_type == c.machine_type and x.offer.option is c.option:
                used[x.offer.key] = x.offer
    return [used[k] for k in sorted(used)]


def _assumptions(run: Run, summary: dict[str, Any], quantile: str | None, forecast: bool) -> list[tuple[str, str]]:
    months = run.problem.months
    dates = sorted({o.as_of for o in _prices(run) if o.as_of})
    return [
        ("Horizon", f"{months[0]} to {months[-1]} ({len(months)} months)"),
        ("Hours per month", "days in the month x 24 (" + ", ".join(f"{m}: {hours(m)}" for m in months[:3])
         + (", ..." if len(months) > 3 else "") + "); commitments charge 8,760 h a year"),
        ("Price snapshot dates", ", ".join(dates) or "not stated in the offers file"),
        ("Price sources", "the source column of each offer (sheet Assumptions of report.xlsx lists every price "
         "the plan buys at); rows derived by a billing rule are marked 'derived'"),
        ("Penalty for unmet demand", f"${run.problem.penalty:,.2f} per GPU-hour (objective only, not spend)"),
        ("Demand quantile", (f"{quantile} of the forecast" if forecast else "demand.csv as given")
         + ("" if quantile is None or forecast else f" (forecast quantile {quantile} unused)")),
        ("Quotas", "from quotas.csv; an unlisted (cloud, region, GPU, market) has none" if run.problem.quotas_given
         else "none given: quotas unlimited"),
        ("Solver status", f"{summary['status']}, proven gap {summary['gap']:.4%}"),
        ("Commitment charges", "each commitment's whole-term charge, spread evenly over its term months"),
    ]
