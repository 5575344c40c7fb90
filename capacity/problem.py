"""A planning problem: demand, offers and quotas gathered per site (cloud, region, GPU) and month.

Aggregation here is exact under the planning semantics (docs/capacity.md): usage is priced per GPU-hour
and quotas count per (cloud, region, gpu), so only the cheapest on-demand and spot offer of a site matter;
commitments keep every (machine type, term) since node size and rate both matter.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from capacity.csvio import InputError, RowProblem
from capacity.schema import (
    DemandRow,
    HeldRow,
    Market,
    OfferRow,
    Option,
    QuotaRow,
    charged_hours,
    covered_hours,
    hours,
    month_span,
)
from components.catalog import Cloud

DEFAULT_PENALTY_USD_PER_GPU_HOUR = 1000.0
DEFAULT_GAP = 1e-3  # 0.1 %: "proven optimal" for planning purposes
DEFAULT_STAY_THRESHOLD = 0.001  # a move must save more than 0.1 % of the moved hours' on-demand cost (stay.py)
DEFAULT_TIME_LIMIT_S = 300.0  # a hard, quota-bound plan reaches 0.1 % within it (benchmarks/capacity_bench.py)
SiteKey = tuple[Cloud, str, str]  # (cloud, region, gpu)
# Demand rows one plan takes. Memory grows linearly with rows (benchmarks/capacity_bench.py --rows: 100,000
# quota-bound rows peak well under 4 GB); beyond this a plan is refused up front, before anything is built.
MAX_DEMAND_ROWS = 200_000


def too_many_rows(rows: int, label: str) -> InputError | None:
    """The error for a demand file or list over MAX_DEMAND_ROWS, naming the limit and how to get under it."""
    if rows <= MAX_DEMAND_ROWS:
        return None
    return InputError([RowProblem(label, None, None, str(rows), f"demand rows: more than the {MAX_DEMAND_ROWS:,} "
                                  "one plan takes (memory grows with rows; docs/capacity.md, \"Limits\").",
                                  "Aggregate rows of the same month, team, GPU, gang_gpus and spot_ok, plan fewer "
                                  "months at a time, or split the teams over several plans.")])
USAGE_OPTIONS = (Option.ON_DEMAND, Option.FLEX_START)  # priced per GPU-hour used, on the on-demand quota


@dataclass(frozen=True)
class CommitOffer:
    offer: OfferRow

    @property
    def gpus(self) -> int:
        return self.offer.gpus_per_node

    @property
    def term_months(self) -> int:
        return self.offer.option.term_months

    def charge(self, start_month: str) -> float:
        """The whole term's charge for one node bought in ``start_month``: GPUs x charged hours x rate."""
        return self.offer.gpus_per_node * charged_hours(self.offer.option, start_month) * self.offer.usd_per_gpu_hour


@dataclass(eq=False)
class Site:
    key: SiteKey
    on_demand: OfferRow | None = None  # the cheapest usage offer on the on-demand market: on_demand or flex_start
    spot: OfferRow | None = None  # the cheapest spot offer
    commits: list[CommitOffer] = field(default_factory=list)
    quota_on_demand: float = math.inf
    quota_spot: float = math.inf
    # capacity the fleet already holds: horizon month -> (option, GPU-hours it holds that month), at sunk cost
    held: dict[int, list[tuple[Option, float]]] = field(default_factory=dict)

    @property
    def cloud(self) -> Cloud:
        return self.key[0]

    @property
    def region(self) -> str:
        return self.key[1]

    @property
    def gpu(self) -> str:
        return self.key[2]

    def quota(self, market: Market) -> float:
        return self.quota_on_demand if market is Market.ON_DEMAND else self.quota_spot

    @property
    def usage_option(self) -> Option:
        """How on-demand-market GPU-hours are bought here: on_demand, or flex_start where that is cheaper or the
        only usage-priced option (GCP A3 Ultra / A4)."""
        return self.on_demand.option if self.on_demand is not None else Option.ON_DEMAND

    def held_hours(self, m: int) -> float:
        return sum(h for _, h in self.held.get(m, ()))

    def price(self, option: Option) -> float:
        offer = self.spot if option is Option.SPOT else self.on_demand if option in USAGE_OPTIONS else None
        return offer.usd_per_gpu_hour if offer is not None else 0.0


@dataclass(frozen=True)
class Problem:
    demand: tuple[DemandRow, ...]
    months: tuple[str, ...]
    sites: dict[SiteKey, Site]
    hours: tuple[int, ...]  # hours(month) per month of the horizon
    penalty: float = DEFAULT_PENALTY_USD_PER_GPU_HOUR
    quotas_given: bool = True
    never_saving: tuple[OfferRow, ...] = ()  # prepaid offers left out: rate >= the site's pay-per-use rate
    held: tuple[HeldRow, ...] = ()  # capacity already held, used first (docs/capacity.md, "Held capacity")

    def charge(self, commit: CommitOffer, start: int) -> float:
        """One node of ``commit`` bought in horizon month ``start``, charged in full."""
        return commit.charge(self.months[start])

    def held_gpus(self, m: int, site: Site) -> float:
        """GPUs held at the site in horizon month ``m``; a part-month counts its share (half a month of 64 GPUs
        is 32)."""
        return site.held_hours(m) / self.hours[m]

    def sites_for(self, gpu: str) -> list[Site]:
        return [s for s in self.sites.values() if s.gpu == gpu]


def build(demand: Sequence[DemandRow], offers: Sequence[OfferRow], quotas: Sequence[QuotaRow] | None,
          penalty: float = DEFAULT_PENALTY_USD_PER_GPU_HOUR, held: Sequence[HeldRow] = ()) -> Problem:
    """Gather offers, quotas and held capacity per site. Without a quotas file nothing is limited; with one, a
    (cloud, region, gpu, market) it does not list has a quota of 0 GPUs. Refuses more than MAX_DEMAND_ROWS."""
    error = too_many_rows(len(demand), "demand")
    if error is not None:
        raise error
    months = tuple(month_span(min(d.month for d in demand), max(d.month for d in demand)))
    sites: dict[SiteKey, Site] = {}
    for offer in sorted(offers, key=lambda o: (o.key, o.usd_per_gpu_hour)):
        site = sites.setdefault((offer.cloud, offer.region, offer.gpu), Site((offer.cloud, offer.region, offer.gpu)))
        if offer.option in USAGE_OPTIONS:
            if site.on_demand is None or offer.usd_per_gpu_hour < site.on_demand.usd_per_gpu_hour:
                site.on_demand = offer
        elif offer.option is Option.SPOT:
            if site.spot is None or offer.usd_per_gpu_hour < site.spot.usd_per_gpu_hour:
                site.spot = offer
        else:
            _add_commit(site, offer)
    never_saving = tuple(c.offer for site in sites.values() for c in _drop_never_saving(site))
    for row in held:
        for m, month in enumerate(months):
            covered = covered_hours(row.start, row.end, month)
            if covered > 0:
                site = sites.setdefault((row.cloud, row.region, row.gpu), Site((row.cloud, row.region, row.gpu)))
                site.held.setdefault(m, []).append((row.option, row.gpus * covered))
    if quotas is not None:
        limits = {(q.cloud, q.region, q.gpu, q.market): float(q.max_gpus) for q in quotas}
        for site in sites.values():
            site.quota_on_demand = limits.get((*site.key, Market.ON_DEMAND), 0.0)
            site.quota_spot = limits.get((*site.key, Market.SPOT), 0.0)
    return Problem(tuple(demand), months, sites, tuple(hours(m) for m in months), penalty, quotas is not None,
                   never_saving, tuple(held))


def _drop_never_saving(site: Site) -> list[CommitOffer]:
    """Prepaid offers whose rate is at or above the site's pay-per-use rate can never save: they are charged
    for every hour whether used or not, count against the same quota and hold no more GPUs. Leaving them out
    is where "ties go to the flexible option" starts (an ODCR billed at the on-demand rate was bought, at $0
    saving, in every 31-day month: its 744 charged hours then equal the hours it can serve)."""
    if site.on_demand is None:
        return []
    dropped = [c for c in site.commits if c.offer.usd_per_gpu_hour >= site.on_demand.usd_per_gpu_hour]
    site.commits = [c for c in site.commits if c not in dropped]
    return dropped


def _add_commit(site: Site, offer: OfferRow) -> None:
    """Keep the cheapest rate per (term, node size): a dearer one with the same shape is never chosen."""
    for i, existing in enumerate(site.commits):
        same = existing.offer.option is offer.option and existing.gpus == offer.gpus_per_node
        if same:
            if offer.usd_per_gpu_hour < existing.offer.usd_per_gpu_hour:
                site.commits[i] = CommitOffer(offer)
            return
    site.commits.append(CommitOffer(offer))
