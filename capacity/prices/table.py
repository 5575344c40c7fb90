"""The price table: (cloud, region, machine type, purchase option) -> USD per node-hour, and what an option bills at
when the snapshot has no offer for it.

Read from ``capacity/data/offers.csv`` through the planner's loader (capacity.inputs.load_offers, the one reader of
that file), at the option a pool buys: spot, on_demand, reservation, capacity_block or flex_start. A region without
an offer falls back to the same machine and option in another region (named in the source); an option without any
offer to the rate it bills at (a reservation: the on-demand rate) or, for spot, flex-start and capacity blocks, the
on-demand rate as an upper bound (spot and flex-start: the reserved rate where Google sells no on-demand, A3 Ultra /
A4), said in the source; a machine type offers.csv does not price (CPU system pools) to the on-demand list-price
table capacity/data/on_demand_prices.csv. It sits below both the policy pack (the budget policy) and the CLI (the
PR comment's cost), so the two price every pool with the same function.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

HOURS_PER_MONTH = 730
LIST_PRICES = Path(__file__).resolve().parents[1] / "data" / "on_demand_prices.csv"
PREPAID = frozenset({"reservation", "capacity_block"})  # billed whether nodes run or not
# when an option has no offer: what it bills at, or an upper bound
FALLBACK = {"reservation": [("on_demand", "a reservation bills the on-demand rate")],
            "spot": [("on_demand", "on-demand rate, an upper bound"),
                     ("reservation", "the reserved (on-demand-equivalent) rate, an upper bound")],
            "flex_start": [("on_demand", "on-demand rate, an upper bound"),
                           ("reservation", "the reserved (on-demand-equivalent) rate, an upper bound")],
            "capacity_block": [("on_demand", "on-demand rate, an upper bound")]}


@dataclass(frozen=True)
class Offer:
    usd_per_node_hour: float
    source: str


class Prices:
    """(cloud, region, machine type, option) -> price per node-hour."""

    def __init__(self, offers: Mapping[tuple[str, str, str, str], Offer], origin: str = "",
                 list_prices: Mapping[tuple[str, str], Offer] | None = None, as_of: str = ""):
        self.offers = dict(offers)
        self.origin = origin
        self.list_prices = dict(list_prices or {})
        self.as_of = as_of  # the oldest price date of the snapshot, YYYY-MM-DD ("" when unknown)

    @classmethod
    def load(cls, path: Path | None = None) -> Prices:
        """The snapshot via capacity.inputs.load_offers; empty (every pool unpriced) when there is none."""
        from capacity.inputs import DEFAULT_OFFERS, load_offers

        path = path or DEFAULT_OFFERS
        if not path.exists():
            return cls({}, f"{path} (missing)", _list_prices())
        rows = load_offers(path)
        dates = sorted(r.as_of for r in rows if r.as_of)
        return cls({r.key: Offer(r.usd_per_gpu_hour * r.gpus_per_node, f"{r.source or path.name} ({r.region}, "
                                 f"{r.option.value}, {r.as_of})") for r in rows}, str(path), _list_prices(),
                   dates[0] if dates else "")

    def node_hour(self, cloud: str, region: str | None, machine: str, option: str) -> Offer | None:
        if region and (cloud, region, machine, option) in self.offers:
            return self.offers[(cloud, region, machine, option)]
        others = sorted(k for k in self.offers if (k[0], k[2], k[3]) == (cloud, machine, option))
        return self.offers[others[0]] if others else None

    def price(self, cloud: str, region: str | None, machine: str, option: str) -> Offer | None:
        """The option's own offer; else the rate it bills at or an upper bound (FALLBACK); else the on-demand
        list-price table. The source says which. ``option`` must be an offers.csv option: anything else (say a
        bool from an older signature) would silently skip the snapshot and price from the list table alone."""
        from capacity.schema import Option

        known = [o.value for o in Option]
        if option not in known:
            raise ValueError(f"unknown purchase option {option!r}; expected one of {', '.join(known)}")
        offer = self.node_hour(cloud, region, machine, option)
        for other, why in FALLBACK.get(option, []) if offer is None else []:
            found = self.node_hour(cloud, region, machine, other)
            if found:
                offer = Offer(found.usd_per_node_hour, f"no {option} offer: {why}; {found.source}")
                break
        if offer is None and (cloud, machine) in self.list_prices:
            listed = self.list_prices[(cloud, machine)]
            note = "" if option == "on_demand" else f"no {option} offer: on-demand list price, an upper bound; "
            offer = Offer(listed.usd_per_node_hour, note + listed.source)
        return offer


def _list_prices(path: Path = LIST_PRICES) -> dict[tuple[str, str], Offer]:
    if not path.exists():
        return {}
    with path.open(newline="") as fh:
        return {(r["cloud"], r["machine_type"]): Offer(float(r["usd_per_node_hour"]), f"{r['source']} "
                                                       f"({r['region']}, on-demand list price, {r['as_of']})")
                for r in csv.DictReader(fh)}


def option_label(cloud: str, option: str) -> str:
    """How the cloud calls an offers.csv option; anything else (a masked "[unknown]") as it is."""
    from capacity.schema import Option
    from capacity.schema import option_label as label

    return label(cloud, option) if option in {o.value for o in Option} else option
