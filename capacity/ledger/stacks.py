"""What the stacks reference, offline: every pool whose capacity names a reservation or capacity block (read through
stacks/config and the resolved fleet, never by grepping YAML), and the purchases the plan makes (commitments.csv,
and pools `capacity apply` added with a pending id)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from capacity.ledger.model import Entry, Kind, Reference
from capacity.reconcile import OPTION_OF, PAID_AT_MAX, Prices
from capacity.schema import CommitmentLine, Option, add_months
from components.fleet import Fleet
from components.k8s.kueue import gpu_shares
from components.spec import PENDING_ID, CapacityType

KINDS = {("aws", CapacityType.CAPACITY_BLOCK): Kind.CAPACITY_BLOCK,
         ("aws", CapacityType.RESERVATION): Kind.CAPACITY_RESERVATION,
         ("gcp", CapacityType.RESERVATION): Kind.RESERVATION,
         ("azure", CapacityType.RESERVATION): Kind.CAPACITY_RESERVATION_GROUP}


def _rate(prices: Prices, cloud: str, region: str, machine: str, gpu: str, option: Option) -> tuple[float | None, str]:
    rate = prices.get(cloud, region, machine, gpu, option)
    if rate is None and option is not Option.CAPACITY_BLOCK:  # a reservation bills the on-demand rate
        rate, option = prices.get(cloud, region, machine, gpu, Option.ON_DEMAND), Option.ON_DEMAND
    return rate, f"price table ({option.value}, per GPU-hour x GPUs)"


def from_stacks(stacks: Sequence[tuple[str, Fleet]], prices: Prices) -> list[Entry]:
    entries: dict[tuple[str, str], Entry] = {}
    for stack, fleet in stacks:
        cloud = fleet.cloud.value
        for cluster in fleet.clusters:
            shares = gpu_shares(cluster)
            for pool in cluster.pools:
                capacity = pool.spec.capacity
                if pool.capacity not in PAID_AT_MAX or not capacity.id:
                    continue
                pending = capacity.id == PENDING_ID
                ident = f"{PENDING_ID}:{stack}/{cluster.name}/{pool.name}" if pending else capacity.id
                rate, how = _rate(prices, cloud, cluster.spec.region, pool.machine.name, pool.machine.gpu,
                                  OPTION_OF[pool.capacity])
                entry = entries.setdefault((cloud, ident.lower()), Entry(
                    cloud=cloud, kind=Kind.PLANNED if pending else KINDS[(cloud, pool.capacity)], id=ident,
                    region=cluster.spec.region, zone=pool.zone, machine_type=pool.machine.name, gpus=0,
                    price_source=None if rate is None else how, source="plan" if pending else "stacks"))
                entry.gpus = (entry.gpus or 0) + pool.max_gpus
                entry.usd_per_hour = None if rate is None else rate * entry.gpus
                entry.references.append(Reference(stack=stack, cluster=cluster.name, pool=pool.name))
                entry.kueue_queues += [f"{cluster.name}/{team}" for team, by_pool in shares.items()
                                       if by_pool.get(pool.name)]
    return list(entries.values())


def from_plan(commitments: Sequence[CommitmentLine]) -> list[Entry]:
    """The plan's purchases: each commitments.csv line, its term from its start month, its charge as the plan prices
    it (a commitment's whole term, a capacity block's or reservation's month)."""
    out = []
    for c in commitments:
        start = dt.datetime.fromisoformat(f"{c.start_month}-01T00:00:00+00:00")
        end = dt.datetime.fromisoformat(f"{add_months(c.start_month, c.option.term_months)}-01T00:00:00+00:00")
        out.append(Entry(cloud=c.cloud.value, kind=Kind.PLANNED,
                         id=f"plan:{c.option.value}:{c.cloud.value}:{c.region}:{c.machine_type}:{c.start_month}",
                         region=c.region, machine_type=c.machine_type, gpus=c.gpus, start=start, end=end,
                         usd_per_hour=c.usd_total / c.option.term_hours if c.option.term_hours else None,
                         usd_total=c.usd_total, price_source="the plan (commitments.csv)", state="planned",
                         active=False, source="plan"))
    return out
