"""The greedy baseline: what a careful person does by hand, so the MILP's saving is visible.

Month by month, gang rows first (largest gang first), then the rest by size: each row takes the cheapest
offer first until its quota runs out, then the next cheapest. A gang row goes wholly to the one region
that serves most of it at the lowest cost. A commitment is priced at its charge spread over the hours it
can still be used inside the horizon, and bought in whole nodes when that makes it the cheapest offer (for
a gang row only when the site then holds the whole gang). A gang on fewer prepaid GPUs than it needs takes
them only when the paid hours there can top it up for the whole row (docs/capacity.md, "Concurrency").
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from capacity.plan import EPS_GPU_HOURS, Plan, PlanBuilder
from capacity.problem import CommitOffer, Problem, Site
from capacity.schema import DemandRow, Option

COMMIT_OPTIONS = [o for o in Option if o.is_commit]


@dataclass
class _Ledger:
    problem: Problem
    committed: dict[tuple[int, Site], float] = field(default_factory=lambda: defaultdict(float))  # GPUs
    commit_left: dict[tuple[int, Site, Option], float] = field(default_factory=lambda: defaultdict(float))
    od_used: dict[tuple[int, Site], float] = field(default_factory=lambda: defaultdict(float))
    sp_used: dict[tuple[int, Site], float] = field(default_factory=lambda: defaultdict(float))

    def od_room(self, m: int, site: Site) -> float:
        if site.on_demand is None:
            return 0.0
        h = self.problem.hours[m]
        return max(0.0, h * (site.quota_on_demand - self.committed[(m, site)]) - self.od_used[(m, site)])

    def sp_room(self, m: int, site: Site) -> float:
        return 0.0 if site.spot is None else max(0.0, self.problem.hours[m] * site.quota_spot - self.sp_used[(m, site)])

    def headroom_nodes(self, commit: CommitOffer, site: Site, m: int) -> int:
        """Whole nodes that fit the on-demand quota in every month the commitment would be active."""
        hours = self.problem.hours
        spare = min(site.quota_on_demand - self.committed[(k, site)] - self.od_used[(k, site)] / hours[k]
                    for k in self.span(commit, m))
        return int(min(spare, 1e9) // commit.gpus) if spare > 0 else 0

    def span(self, commit: CommitOffer, m: int) -> range:
        return range(m, min(m + commit.term_months, len(self.problem.months)))


@dataclass
class _Gang:
    """What a gang row may take from prepaid capacity while it is filled at one site."""

    row: DemandRow
    paid_room: float  # pay-per-use GPU-hours the site has left for the row when its fill starts
    prepaid: float = 0.0  # taken so far

    def allowance(self, held_gpus: float) -> float:
        gang, need = self.row.gang_gpus, self.row.gpu_hours
        if held_gpus >= gang:
            return need
        if self.paid_room < (1 - held_gpus / gang) * need - EPS_GPU_HOURS:
            return 0.0  # no top-up for the whole row: the gang runs on paid hours only
        return max(0.0, held_gpus / gang * need - self.prepaid)


Choice = tuple[float, str, Site, object]  # (price, kind, site, option or commit offer)
RANK = {"commit": 0, "spot": 1, "od": 2, "buy": 3}  # at equal prices: what is held, then the flexible options


def _options(ledger: _Ledger, m: int, site: Site, row: DemandRow, buy: bool) -> list[Choice]:
    out: list[Choice] = []
    for option in COMMIT_OPTIONS:
        if ledger.commit_left[(m, site, option)] > EPS_GPU_HOURS:
            out.append((0.0, "commit", site, option))
    if row.spot_ok and site.spot is not None:
        out.append((site.spot.usd_per_gpu_hour, "spot", site, None))
    if site.on_demand is not None:
        out.append((site.on_demand.usd_per_gpu_hour, "od", site, None))
    if buy:
        for commit in site.commits:
            usable = sum(ledger.problem.hours[k] for k in ledger.span(commit, m)) * commit.gpus
            out.append((ledger.problem.charge(commit, m) / usable, "buy", site, commit))
    return out


def _take(ledger: _Ledger, builder: PlanBuilder | None, r: int, m: int, choice: Choice, need: float,
          gang: _Gang | None = None) -> float:
    """Serve up to ``need`` GPU-hours from one choice; only measure when builder is None."""
    _, kind, site, what = choice
    h = ledger.problem.hours[m]
    if kind == "buy":
        commit: CommitOffer = what  # type: ignore[assignment]
        nodes = min(int(need // (h * commit.gpus)), ledger.headroom_nodes(commit, site, m))
        if gang is not None and ledger.committed[(m, site)] + nodes * commit.gpus < gang.row.gang_gpus:
            nodes = 0  # nodes a gang could only partly use are not worth their charge to it
        if nodes <= 0 or builder is None:
            return 0.0
        builder.buy(commit, m, nodes)
        for k in ledger.span(commit, m):
            ledger.committed[(k, site)] += nodes * commit.gpus
            ledger.commit_left[(k, site, commit.offer.option)] += nodes * commit.gpus * ledger.problem.hours[k]
        kind, what = "commit", commit.offer.option
    if kind == "commit":
        take = min(need, ledger.commit_left[(m, site, what)])  # type: ignore[index]
        if gang is not None:
            take = min(take, gang.allowance(ledger.committed[(m, site)]))
            gang.prepaid += take
        if builder is not None:
            ledger.commit_left[(m, site, what)] -= take  # type: ignore[index]
            builder.serve(r, site, what, take)  # type: ignore[arg-type]
    elif kind == "spot":
        take = min(need, ledger.sp_room(m, site))
        if builder is not None:
            ledger.sp_used[(m, site)] += take
            builder.serve(r, site, Option.SPOT, take)
    else:
        take = min(need, ledger.od_room(m, site))
        if builder is not None:
            ledger.od_used[(m, site)] += take
            builder.serve(r, site, site.usage_option, take)
    return take


def _fill(ledger: _Ledger, builder: PlanBuilder | None, r: int, m: int, choices: list[Choice],
          need: float, gang: _Gang | None = None) -> tuple[float, float]:
    """Serve up to ``need`` GPU-hours, cheapest choice first. Returns (served, usage cost)."""
    served = cost = 0.0
    for choice in sorted(choices, key=lambda c: (c[0], RANK[c[1]], c[2].key)):
        if need <= EPS_GPU_HOURS:
            break
        take = _take(ledger, builder, r, m, choice, need, gang)
        served, cost, need = served + take, cost + take * choice[0], need - take
    return served, cost


def _gang(ledger: _Ledger, m: int, site: Site, row: DemandRow) -> _Gang:
    return _Gang(row, ledger.od_room(m, site) + (ledger.sp_room(m, site) if row.spot_ok else 0.0))


def greedy(problem: Problem) -> Plan:
    builder = PlanBuilder(problem)
    ledger = _Ledger(problem)
    for site in problem.sites.values():  # held capacity: committed already, at no further cost
        for m, pieces in site.held.items():
            for option, gpu_hours in pieces:
                ledger.committed[(m, site)] += gpu_hours / problem.hours[m]
                ledger.commit_left[(m, site, option)] += gpu_hours
    index = {month: i for i, month in enumerate(problem.months)}
    order = sorted(range(len(problem.demand)), key=lambda r: (index[problem.demand[r].month],
                                                               -problem.demand[r].gang_gpus,
                                                               -problem.demand[r].gpu_hours, r))
    for r in order:
        row = problem.demand[r]
        m = index[row.month]
        sites = problem.sites_for(row.gpu)
        if row.gang_gpus == 1:
            choices = [c for s in sites for c in _options(ledger, m, s, row, buy=True)]
            _fill(ledger, builder, r, m, choices, row.gpu_hours)
            continue
        trials = [(_fill(ledger, None, r, m, _options(ledger, m, s, row, buy=False), row.gpu_hours,
                         _gang(ledger, m, s, row)), s)
                  for s in sites if max(s.quota_on_demand, problem.held_gpus(m, s)) >= row.gang_gpus]
        if trials:
            (served, _), best = max(trials, key=lambda t: (round(t[0][0], 6), -t[0][1], t[1].key))
            if served > EPS_GPU_HOURS:
                _fill(ledger, builder, r, m, _options(ledger, m, best, row, buy=True), row.gpu_hours,
                      _gang(ledger, m, best, row))
    return builder.finish()
