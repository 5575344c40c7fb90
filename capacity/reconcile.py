"""Compare a plan with what the stacks provision, per (cloud, region, GPU, month).

From the plan: the average GPUs it runs there (GPU-hours / hours(month)) and the GPUs it commits.
From the stacks (fleet descriptions resolved by components.validate): every GPU node pool's
  provisioned GPUs  nodes.max x GPUs per node: what the pools can scale to;
  paid GPUs         GPUs paid for whether used or not: nodes.max for reservation and capacity_block pools,
                    nodes.min for the rest (their minimum never scales away);
  references        the reservation / capacity block ids the pools name.
Under-provisioned: the plan runs more GPUs than the pools can hold; the monthly cost is what the plan
pays for that work. Over-provisioned: more GPUs are paid for than the plan runs; the monthly cost is
what the idle GPUs cost at the pools' prices (reservations and capacity blocks at the on-demand rate).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from capacity.schema import CommitmentLine, OfferRow, Option, PlanLine, Row, add_months, hours
from components.fleet import Fleet, Pool
from components.spec import CapacityType

Key = tuple[str, str, str]  # (cloud, region, gpu)
OPTION_OF = {CapacityType.ON_DEMAND: Option.ON_DEMAND, CapacityType.SPOT: Option.SPOT,
             CapacityType.RESERVATION: Option.RESERVATION, CapacityType.CAPACITY_BLOCK: Option.CAPACITY_BLOCK,
             CapacityType.FLEX_START: Option.FLEX_START}
PAID_AT_MAX = {CapacityType.RESERVATION, CapacityType.CAPACITY_BLOCK}
TOLERANCE_GPUS = 0.5


class ReconcileRow(Row):
    """One line of reconcile.csv."""

    month: str
    cloud: str
    region: str
    gpu: str
    planned_gpus: float
    planned_committed_gpus: int
    provisioned_max_gpus: int
    paid_gpus: int
    reserved_gpus: int
    status: str  # under | over | ok
    gpus: float  # how far under or over
    usd_per_month: float | None
    references: str


@dataclass
class _Supply:
    max_gpus: int = 0
    paid_gpus: int = 0
    reserved_gpus: int = 0
    paid_usd_per_gpu_hour: list[tuple[int, float | None]] = field(default_factory=list)
    references: list[str] = field(default_factory=list)


class Prices:
    """Per-GPU-hour prices, most specific first: machine type in region, machine type anywhere (cheapest),
    GPU in region, GPU anywhere."""

    def __init__(self, offers: Sequence[OfferRow]):
        self.by: dict[tuple, float] = {}
        for o in offers:
            for key in ((o.cloud.value, o.region, o.machine_type, o.option.value),
                        (o.cloud.value, "*", o.machine_type, o.option.value),
                        (o.cloud.value, o.region, "gpu:" + o.gpu, o.option.value),
                        (o.cloud.value, "*", "gpu:" + o.gpu, o.option.value)):
                self.by[key] = min(self.by.get(key, math.inf), o.usd_per_gpu_hour)

    def get(self, cloud: str, region: str, machine: str, gpu: str, option: Option) -> float | None:
        for key in ((cloud, region, machine), (cloud, "*", machine), (cloud, region, "gpu:" + gpu),
                    (cloud, "*", "gpu:" + gpu)):
            price = self.by.get((*key, option.value))
            if price is not None:
                return price
        return None


def _supply(fleets: Sequence[Fleet], prices: Prices) -> dict[Key, _Supply]:
    out: dict[Key, _Supply] = defaultdict(_Supply)
    for fleet in fleets:
        for cluster in fleet.clusters:
            for pool in cluster.pools:
                _add_pool(out[(fleet.cloud.value, cluster.spec.region, pool.machine.gpu)], fleet, cluster.spec.region,
                          pool, prices)
    return out


def _add_pool(s: _Supply, fleet: Fleet, region: str, pool: Pool, prices: Prices) -> None:
    per_node = pool.machine.gpus
    nodes = pool.spec.nodes
    kind = pool.spec.capacity.type
    paid = (nodes.max if kind in PAID_AT_MAX else nodes.min) * per_node
    s.max_gpus += nodes.max * per_node
    s.paid_gpus += paid
    price = prices.get(fleet.cloud.value, region, pool.machine.name, pool.machine.gpu, OPTION_OF[kind])
    if price is None and kind is not CapacityType.SPOT:  # no offer of its own option: the on-demand rate it bills at
        price = prices.get(fleet.cloud.value, region, pool.machine.name, pool.machine.gpu, Option.ON_DEMAND)
    s.paid_usd_per_gpu_hour.append((paid, price))
    if kind in PAID_AT_MAX:
        s.reserved_gpus += nodes.max * per_node
    if pool.spec.capacity.id:
        s.references.append(f"{kind.value}:{pool.spec.capacity.id}")


def reconcile(lines: Sequence[PlanLine], commitments: Sequence[CommitmentLine], fleets: Sequence[Fleet],
              offers: Sequence[OfferRow]) -> list[ReconcileRow]:
    prices = Prices(offers)
    supply = _supply(fleets, prices)
    planned: dict[tuple[str, Key], float] = defaultdict(float)
    spend: dict[tuple[str, Key], float] = defaultdict(float)
    committed: dict[tuple[str, Key], int] = defaultdict(int)
    for line in lines:
        key = (line.month, (line.cloud.value, line.region, line.gpu))
        planned[key] += line.gpu_hours
        spend[key] += line.usd
    months = {line.month for line in lines}
    for c in commitments:
        for k in range(c.option.term_months):
            month = add_months(c.start_month, k)
            committed[(month, (c.cloud.value, c.region, c.gpu))] += c.gpus
    months |= {m for m, _ in committed if months and min(months) <= m <= max(months)}
    keys = {k for _, k in planned} | {k for _, k in committed} | set(supply)
    rows = []
    for month in sorted(months):
        h = hours(month)
        for key in sorted(keys):
            rows.append(_row(month, key, h, planned.get((month, key), 0.0) / h, spend.get((month, key), 0.0),
                             committed.get((month, key), 0), supply.get(key, _Supply()), prices))
    return rows


def _row(month: str, key: Key, h: int, gpus: float, usd: float, committed: int, s: _Supply,
         prices: Prices) -> ReconcileRow:
    cloud, region, gpu = key
    status, delta, cost = "ok", 0.0, 0.0
    if gpus > s.max_gpus + TOLERANCE_GPUS:
        status, delta = "under", gpus - s.max_gpus
        rate = usd / (gpus * h) if usd > 0 else prices.get(cloud, region, "", gpu, Option.ON_DEMAND)
        cost = None if rate is None else delta * h * rate
    elif s.paid_gpus > gpus + TOLERANCE_GPUS:
        status, delta = "over", s.paid_gpus - gpus
        known = [(n, p) for n, p in s.paid_usd_per_gpu_hour if n > 0]
        if any(p is None for _, p in known):
            cost = None
        else:
            rate = sum(n * p for n, p in known) / max(1, sum(n for n, _ in known))  # type: ignore[operator]
            cost = delta * h * rate
    return ReconcileRow(month=month, cloud=cloud, region=region, gpu=gpu, planned_gpus=round(gpus, 3),
                        planned_committed_gpus=committed, provisioned_max_gpus=s.max_gpus, paid_gpus=s.paid_gpus,
                        reserved_gpus=s.reserved_gpus, status=status, gpus=round(delta, 3),
                        usd_per_month=None if cost is None else round(cost, 2), references=" ".join(s.references))
