"""Prices per node-hour for the budget policy.

First choice: the capacity planner's price snapshot ``capacity/data/offers.csv``, through gpufleet.cost.Prices
(the one reader of it). Otherwise (CPU machine types, which offers.csv does not price, or machine types the
snapshot lacks) the minimal on-demand list-price table ``policies/data/on_demand_prices.csv``, one row per
machine type with its source and date.
"""

from __future__ import annotations

import csv
from functools import cache
from pathlib import Path

from gpufleet.cost import Offer, Prices

TABLE = Path(__file__).resolve().parent / "data" / "on_demand_prices.csv"


@cache
def _snapshot() -> Prices:
    return Prices.load()


@cache
def _table(path: Path = TABLE) -> dict[tuple[str, str], Offer]:
    with path.open(newline="") as fh:
        return {(r["cloud"], r["machine_type"]): Offer(float(r["usd_per_node_hour"]), f"{r['source']} "
                                                       f"({r['region']}, {r['as_of']})")
                for r in csv.DictReader(fh)}


def node_hour(cloud: str, machine_type: str, region: str | None, spot: bool) -> Offer | None:
    """Spot pools at the spot offer when there is one; otherwise on-demand (an upper bound), from the snapshot
    (another region when this one has no offer), then from the minimal table."""
    for option in ("spot", "on_demand") if spot else ("on_demand",):
        offer = _snapshot().node_hour(cloud, region, machine_type, option)
        if offer:
            return offer
    return _table().get((cloud, machine_type))
