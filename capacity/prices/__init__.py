"""Live price fetchers, one module per cloud, each producing offers.csv rows (USD per GPU-hour) and warnings.

Every row carries ``source`` (the API and what was read) and ``as_of`` (the day it was read). A row a cloud's
API cannot give (a capacity reservation billed at the on-demand rate) is computed from a fetched row and says
so: its source starts with ``derived:``. Which machine types and regions: the catalogue's
(components/data/offerings.csv), so a fetched offer always agrees with what the stacks can build.
Retries and backoff are the quota fetchers' (capacity.quotas.with_retries); one failing region is a warning,
the other regions still count.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from capacity.schema import OfferRow, Option
from components import catalog
from components.catalog import Cloud, MachineType

DERIVED = "derived: "


@dataclass
class PriceResult:
    rows: list[OfferRow] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def today() -> str:
    return dt.datetime.now(dt.UTC).date().isoformat()


def gpu_machines(cloud: Cloud, regions: Iterable[str] | None = None) -> dict[str, list[MachineType]]:
    """Region -> the catalogue GPU machine types offered there (every offered region when none is named)."""
    wanted = set(regions) if regions is not None else None
    out: dict[str, list[MachineType]] = {}
    for m in catalog.for_cloud(cloud):
        if m.gpus == 0:
            continue
        for region in catalog.regions(cloud, m.name):
            if wanted is None or region in wanted:
                out.setdefault(region, []).append(m)
    for region in sorted(wanted or ()):
        out.setdefault(region, [])
    return dict(sorted(out.items()))


def offer(machine: MachineType, region: str, option: Option, usd_per_node_hour: float, source: str,
          as_of: str) -> OfferRow:
    return OfferRow(cloud=machine.cloud, region=region, machine_type=machine.name, gpu=machine.gpu,
                    gpus_per_node=machine.gpus, option=option,
                    usd_per_gpu_hour=round(usd_per_node_hour / machine.gpus, 6), source=source, as_of=as_of)


def per_region(cloud: Cloud, machines: dict[str, list[MachineType]],
               fetch_one: Callable[[str, list[MachineType]], list[OfferRow]]) -> PriceResult:
    """Fetch region by region; a region that fails becomes a warning and the others still count."""
    result = PriceResult()
    for region, types in machines.items():
        if not types:
            result.warnings.append(f"{cloud.title} {region}: the catalogue offers no GPU machine type there "
                                   "(components/data/offerings.csv); nothing fetched.")
            continue
        try:
            result.rows.extend(fetch_one(region, types))
        except Exception as err:  # one region's failure must not lose the others: reported, not raised
            text = " ".join(str(err).split())[:200]
            result.warnings.append(f"{cloud.title} {region}: prices not fetched ({type(err).__name__}: {text}). "
                                   "The rows for this region are missing; retry later.")
    return result


def sort_rows(rows: Iterable[OfferRow]) -> list[OfferRow]:
    order = list(Option)
    return sorted(rows, key=lambda r: (r.cloud.value, r.region, r.machine_type, order.index(r.option)))


def fetch(cloud: Cloud, regions: list[str] | None = None) -> PriceResult:
    """One cloud's prices with its default clients (credentials from the environment; Azure needs none)."""
    if cloud is Cloud.AWS:
        from capacity.prices import aws

        return aws.fetch(regions)
    if cloud is Cloud.GCP:
        from capacity.prices import gcp

        return gcp.fetch(regions)
    from capacity.prices import azure

    return azure.fetch(regions)
