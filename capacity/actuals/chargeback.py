"""Chargeback: each team's GPU-hours (Kueue's admission records per ClusterQueue and ResourceFlavor) times the
effective rate of the capacity it ran on, with the idle remainder as explicit unallocated rows, in FOCUS 1.3's
allocation columns (capacity/data/recorded/focus_allocation_columns.json) so finance can join them to the clouds'
own exports.

gpufleet's Kueue layout (components/k8s/kueue.py) makes the record's cohort the cluster, its cluster_queue the team
and its flavor the node pool, so each record names a pool of the stacks. A pool's capacity is its *source*:
  a reservation or capacity block pool: its id; the bill's charges of that CapacityReservationId (or
    CommitmentDiscountId), used and unused, are the origin charge, and its paid GPU-hours the denominator;
  any other pool: the bill's charges of its cluster (the gpufleet-cluster tag), machine type and market (spot:
    PricingCategory Dynamic), reservations excluded; commitments are in them amortised (EffectiveCost).
Effective rate = the origin charge / its GPU-hours. A source the bill does not show is priced from the price table
(a capacity block at its own price, spot at its price); a prepaid pool then costs nodes.max x GPUs x the month's
hours whether used or not. Allocated = team GPU-hours x rate; unallocated = origin - allocated. A rate that cannot
be known leaves the team rows' cost unknown (None), never 0, and the whole origin unallocated.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
from pydantic import Field

from capacity.csvio import InputError, RowProblem
from capacity.reconcile import OPTION_OF, PAID_AT_MAX, Prices
from capacity.schema import GpuHours, Month, Name, OfferRow, Option, Row, add_months, hours
from components.errors import did_you_mean
from components.fleet import Cluster, Fleet, Pool
from components.spec import CapacityType

METHOD = "gpufleet-kueue-gpu-hours"
UNIT = "GPU-Hours"  # FOCUS Unit Format <singular-unit>-<plural-time-units>
COLUMNS = ("ChargePeriodStart", "ChargePeriodEnd", "BillingCurrency", "ProviderName", "ResourceId", "EffectiveCost",
           "ConsumedQuantity", "ConsumedUnit", "AllocatedMethodId", "AllocatedMethodDetails", "AllocatedResourceId",
           "AllocatedResourceName", "AllocatedTags", "x_GpufleetSource", "x_GpufleetRateSource",
           "x_GpufleetUsdPerGpuHour")


class UsageRow(Row):
    """One line of the Kueue usage file: GPU-hours a ClusterQueue was admitted in a ResourceFlavor in a month."""

    month: Month
    cohort: Name = Field(description="the Kueue cohort: the gpufleet cluster's name")
    cluster_queue: Name = Field(description="the ClusterQueue: the team")
    flavor: Name = Field(description="the ResourceFlavor: the node pool's name")
    gpu_hours: GpuHours


@dataclass(frozen=True)
class Source:
    key: str  # what the origin charge is: a reservation id, or cluster/machine/market
    fleet: Fleet
    cluster: Cluster
    pool: Pool

    @property
    def reserved(self) -> bool:
        return self.pool.capacity in PAID_AT_MAX and bool(self.pool.spec.capacity.id)

    @property
    def spot(self) -> bool:
        return self.pool.capacity is CapacityType.SPOT


def source_of(fleet: Fleet, cluster: Cluster, pool: Pool) -> Source:
    if pool.capacity in PAID_AT_MAX and pool.spec.capacity.id:
        return Source(pool.spec.capacity.id, fleet, cluster, pool)
    market = "spot" if pool.capacity is CapacityType.SPOT else "on_demand"
    return Source(f"{cluster.name}/{pool.machine.name}/{market}", fleet, cluster, pool)


def _pools(fleets: Sequence[Fleet], usage: Sequence[UsageRow], label: str) -> dict[tuple[str, str], Source]:
    known = {(c.name, p.name): source_of(f, c, p) for f in fleets for c in f.clusters for p in c.pools}
    problems = []
    for line, u in enumerate(usage, start=2):
        if (u.cohort, u.flavor) not in known:
            names = [f"{c}/{p}" for c, p in known]
            guess = did_you_mean(f"{u.cohort}/{u.flavor}", names)
            problems.append(RowProblem(label, line, "cohort, flavor", f"{u.cohort}/{u.flavor}",
                                       "is no cluster/node pool of the stacks." + (f" Did you mean {guess!r}?"
                                                                                     if guess else ""),
                                       f"Name a cluster and pool of the stacks given: {', '.join(sorted(names))}."))
    if problems:
        raise InputError(problems)
    return known


def _billed(con: duckdb.DuckDBPyConnection, keys: Sequence[str], month: str, s: Source) -> tuple[int, float, float]:
    """(charges, cost, GPU-hours) of the source's origin charge in the month (GPU-hours paid for a reservation)."""
    if s.reserved:
        where, hours_col, args = "(reservation_id = ? OR commitment_id = ?)", "paid_gpu_hours", [s.key, s.key]
    else:
        where = ("reservation_id IS NULL AND cluster = ? AND machine_type = ? AND "
                 + ("pricing_category = 'Dynamic'" if s.spot else "coalesce(pricing_category, '') <> 'Dynamic'"))
        hours_col, args = "gpu_hours", [s.cluster.name, s.pool.machine.name]
    return con.execute(f"SELECT count(*), coalesce(sum(effective_cost), 0), sum({hours_col}) FROM charges "
                       f"WHERE file IN (SELECT unnest(?)) AND category = 'Usage' AND month = ? AND {where}",
                       [list(keys), month, *args]).fetchone()


def _priced(s: Source, prices: Prices, month: str, used: float) -> tuple[float | None, float | None, str]:
    """(origin cost, rate, what priced it) from the price table, for a source the bill does not show."""
    region = s.cluster.spec.region
    option = OPTION_OF[s.pool.capacity]
    rate = prices.get(s.fleet.cloud.value, region, s.pool.machine.name, s.pool.machine.gpu, option)
    if rate is None and option is not Option.SPOT:  # a reservation bills the on-demand rate when none is listed
        rate = prices.get(s.fleet.cloud.value, region, s.pool.machine.name, s.pool.machine.gpu, Option.ON_DEMAND)
    if rate is None:
        return None, None, "no bill and no price"
    paid = s.pool.max_gpus * hours(month) if s.pool.capacity in PAID_AT_MAX else used
    return paid * rate, rate, f"price table ({option.value})"


def chargeback(con: duckdb.DuckDBPyConnection, keys: Sequence[str], usage: Sequence[UsageRow],
               fleets: Sequence[Fleet], offers: Sequence[OfferRow], label: str = "usage.csv") -> list[dict[str, Any]]:
    pools = _pools(fleets, usage, label)
    used: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))  # (month, source) -> team
    sources: dict[str, Source] = {}
    for u in usage:
        s = pools[(u.cohort, u.flavor)]
        sources[s.key] = s
        used[(u.month, s.key)][f"{u.cohort}/{u.cluster_queue}"] += u.gpu_hours
    prices = Prices(offers)
    rows: list[dict[str, Any]] = []
    for (month, key), teams in sorted(used.items()):
        s = sources[key]
        count, cost, billed_hours = _billed(con, keys, month, s)
        if count:
            rate = cost / billed_hours if billed_hours else None
            origin, how = cost, "bill (EffectiveCost / GPU-hours)" if rate is not None else "bill, GPU-hours unknown"
        else:
            origin, rate, how = _priced(s, prices, month, sum(teams.values()))
        rows += _rows(month, s, teams, origin, rate, how)
    return rows


def _rows(month: str, s: Source, teams: dict[str, float], origin: float | None, rate: float | None,
          how: str) -> list[dict[str, Any]]:
    base = {"ChargePeriodStart": f"{month}-01T00:00:00Z", "ChargePeriodEnd": f"{add_months(month, 1)}-01T00:00:00Z",
            "BillingCurrency": "USD", "ProviderName": s.fleet.cloud.title,
            "ResourceId": s.key if s.reserved else None, "ConsumedUnit": UNIT, "AllocatedMethodId": METHOD,
            "x_GpufleetSource": s.key, "x_GpufleetRateSource": how, "x_GpufleetUsdPerGpuHour": rate}
    out = []
    for team, h in sorted(teams.items()):
        cost = None if rate is None else h * rate
        ratio = None if cost is None or not origin else cost / origin
        details = {"Elements": [{"AllocatedRatio": ratio, "UsageUnit": UNIT, "UsageQuantity": h}]}
        out.append({**base, "EffectiveCost": cost, "ConsumedQuantity": h, "AllocatedResourceId": team,
                    "AllocatedResourceName": team.split("/", 1)[1], "AllocatedMethodDetails": json.dumps(details),
                    "AllocatedTags": json.dumps({"team": team.split("/", 1)[1]})})
    allocated = sum(r["EffectiveCost"] for r in out) if rate is not None else 0.0
    if origin is not None:
        rest = origin - allocated
        details = {"Elements": [{"AllocatedRatio": rest / origin if origin else None, "UsageUnit": UNIT}]}
        out.append({**base, "EffectiveCost": rest, "ConsumedQuantity": None, "AllocatedResourceId": None,
                    "AllocatedResourceName": None, "AllocatedMethodDetails": json.dumps(details),
                    "AllocatedTags": None})
    return out
