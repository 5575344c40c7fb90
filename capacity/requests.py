"""Quota increases that remove shortfall, read from the relaxed-quota solve.

The relaxed solve (capacity/milp.py, relax=True) may raise any quota at a price per GPU well above what
any saving could justify but below the penalty for unserved demand, so it raises a quota only to serve
demand. Each raised quota becomes one request: how many GPUs, in the cloud's own units, the first month
it is needed, and the day to file it given the cloud's usual lead time.
"""

from __future__ import annotations

import datetime as dt
import math

from capacity.optimize import Solution
from capacity.problem import Problem, Site
from capacity.quotas.convert import primary
from capacity.schema import Market, QuotaRequest
from components.catalog import Cloud

# Usual time from filing a GPU quota increase to its approval, in days. Guidance from experience, not a
# promise: small increases can be automatic, large GPU requests can take weeks or need an account team.
LEAD_TIME_DAYS = {Cloud.AWS: 10, Cloud.GCP: 7, Cloud.AZURE: 14}
EPS_GPUS = 1e-6


def quota_requests(problem: Problem, relaxed: Solution) -> list[QuotaRequest]:
    out = []
    for (site, market_name), increase in sorted(relaxed.usage.increase.items(),
                                                 key=lambda kv: (kv[0][0].key, kv[0][1])):
        if increase <= EPS_GPUS:
            continue
        market = Market(market_name)
        current = site.quota(market)
        if math.isinf(current):
            continue
        requested = math.ceil(current + increase - 1e-6)
        if requested <= current:
            continue
        first, enabled = _need(problem, relaxed, site, market, current)
        native = primary(site.cloud, site.gpu, market)
        lead = LEAD_TIME_DAYS[site.cloud]
        month = problem.months[first]
        by = dt.date(int(month[:4]), int(month[5:7]), 1) - dt.timedelta(days=lead)
        out.append(QuotaRequest(
            cloud=site.cloud, region=site.region, gpu=site.gpu, market=market, current_max_gpus=int(current),
            requested_max_gpus=requested, increase_gpus=requested - int(current),
            native_quota=native.name if native else "", native_unit=native.unit.value if native else "gpus",
            native_increase=native.to_native(requested - int(current)) if native else requested - int(current),
            month_needed=month, lead_time_days=lead, request_by=by.isoformat(), gpu_hours_enabled=enabled))
    return out


def _need(problem: Problem, relaxed: Solution, site: Site, market: Market, current: float) -> tuple[int, float]:
    """The first month the relaxed plan goes past the quota, and the GPU-hours it serves thanks to the
    increase: per month, the larger of the hours above the quota and the hours of gangs too big for it."""
    usage = relaxed.usage
    first = None
    enabled = 0.0
    for m, h in enumerate(problem.hours):
        gangs = 0.0
        if market is Market.ON_DEMAND:
            used = usage.committed.get((m, site), 0.0) * h + usage.on_demand.get((m, site), 0.0)
            gangs = sum(hrs for month, s, g, hrs in usage.gangs if month == m and s is site and g > current)
        else:
            used = usage.spot.get((m, site), 0.0)
        above = max(used - current * h, 0.0)
        if above > EPS_GPUS * h or gangs > 0:
            first = m if first is None else first
            enabled += max(above, gangs)
    return (first if first is not None else 0), enabled
