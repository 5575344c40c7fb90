"""Monthly cost of a stack's node pools, from its resources (captured graph or engine state) and the price snapshot.

One model: every node pool at its max nodes, 730 hours a month (8,760 h / 12), priced per node-hour from
``capacity/data/offers.csv`` read through the planner's loader (capacity.inputs.load_offers, the one reader of
that file), at the option the pool buys: spot, on_demand, reservation, capacity_block or flex_start (read from
the pool's resources, policies.props). A region without an offer falls back to the same machine and option in
another region (named in the source); an option without any offer to the rate it bills at (a reservation: the
on-demand rate) or, for spot, flex-start and capacity blocks, the on-demand rate as an upper bound (spot and
flex-start: the reserved rate where Google sells no on-demand, A3 Ultra / A4), said in the source; a machine
type offers.csv does not price (CPU system pools) to the on-demand list-price table
policies/data/on_demand_prices.csv. The budget policy prices pools through the same function, so both agree.
Reservations and capacity blocks are prepaid: a pool that keeps one but shrinks still pays for the nodes it had.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpufleet.capture import SECRET_MASK, UNKNOWN_MASK, Resource
from policies.props import (
    AKS_AGENT_POOL,
    AWS_PROVIDER,
    EKS_NODE_GROUP,
    GKE_NODE_POOL,
    LAUNCH_TEMPLATE,
    NODE_POOLS,
    NodePool,
    get,
    node_pool,
    pool_region,
    reserved_by_template,
)

HOURS_PER_MONTH = 730
LIST_PRICES = Path(__file__).resolve().parents[1] / "policies" / "data" / "on_demand_prices.csv"
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


@dataclass(frozen=True)
class PoolCost:
    key: str
    cloud: str
    region: str | None
    machine_type: str
    nodes: int
    gpus: int
    gpu: str
    option: str
    usd_per_node_hour: float | None  # None: no price in the snapshot, or the pool's size or machine is unknown
    source: str
    hidden: str = ""  # "[unknown]" / "[secret]": a sizing input the preview cannot see; the cost is unknown
    paid_nodes: int | None = None  # prepaid options: the nodes still paid for (None: nodes)

    @property
    def monthly_usd(self) -> float:
        nodes = self.nodes if self.paid_nodes is None else self.paid_nodes
        return (self.usd_per_node_hour or 0.0) * nodes * HOURS_PER_MONTH

    @property
    def label(self) -> str:
        """The option as the cloud sells it, e.g. "EC2 Capacity Block for ML (prepaid)"."""
        return option_label(self.cloud, self.option)


def pool_option(r: Resource, by_key: Mapping[str, Resource]) -> str:
    """The offers.csv option a pool buys; an EKS pool on a reservation shows it in its launch template."""
    pool = node_pool(r.type, r.inputs)
    capacity = pool.capacity if pool else "on_demand"
    templates = [by_key[d].inputs for d in r.dependencies if d in by_key and by_key[d].type == LAUNCH_TEMPLATE]
    if capacity == "on_demand" and any(reserved_by_template(t) for t in templates):
        return "reservation"
    return capacity


def _region(r: Resource, by_key: Mapping[str, Resource]) -> str | None:
    deps = [(by_key[d].type, by_key[d].inputs) for d in r.dependencies if d in by_key]
    providers = [p.inputs for p in by_key.values() if p.type == AWS_PROVIDER]
    return pool_region(r.type, r.inputs, deps, providers)


# The inputs that size and price a pool: a masked value in any of them makes the pool's cost unknown.
SIZING = {EKS_NODE_GROUP: ("instanceTypes", "scalingConfig", "capacityType"),
          GKE_NODE_POOL: ("nodeConfig.machineType", "nodeConfig.spot", "nodeConfig.preemptible", "autoscaling",
                          "nodeCount", "initialNodeCount", "nodeLocations", "nodeConfig.flexStart",
                          "nodeConfig.reservationAffinity", "queuedProvisioning"),
          AKS_AGENT_POOL: ("vmSize", "count", "maxCount", "enableAutoScaling", "scaleSetPriority",
                           "capacityReservationGroupId")}
_CLOUDS = {"aws": "aws", "gcp": "gcp", "azure-native": "azure"}


def hidden_value(value: Any) -> str:
    """The mask ("[unknown]" or "[secret]") found anywhere in ``value``, else ""."""
    if value in (UNKNOWN_MASK, SECRET_MASK):
        return str(value)
    children = value.values() if isinstance(value, Mapping) else value if isinstance(value, list) else ()
    return next((m for m in map(hidden_value, children) if m), "")


def read_pool(type_: str, inputs: Mapping[str, Any]) -> tuple[NodePool | None, str]:
    """(the pool, "") or (None, mask) when a sizing input is unknown or secret: never a guessed $0 or 0 nodes."""
    hidden = next((m for m in (hidden_value(get(inputs, p)) for p in SIZING.get(type_, ())) if m), "")
    if hidden:
        return None, hidden
    return (node_pool(type_, inputs) if type_ in NODE_POOLS else None), ""


def pool_costs(resources: Sequence[Resource], prices: Prices, base: Sequence[PoolCost] = ()) -> list[PoolCost]:
    """Every pool's cost; with ``base`` (the same stack before a change), a prepaid pool that shrinks keeps
    paying for the nodes it had."""
    by_key = {r.key: r for r in resources}
    before = {c.key: c for c in base}
    out = []
    for r in resources:
        pool, hidden = read_pool(r.type, r.inputs)
        if hidden:
            out.append(PoolCost(r.key, _CLOUDS.get(r.type.split(":")[0], r.type), None, hidden, 0, 0, "", hidden,
                                None, f"{hidden} until the preview is applied: the pool's machine type or size is "
                                "not known", hidden))
            continue
        if pool is None or not pool.machine_types:
            continue
        machine, region, option = pool.machine_types[0], _region(r, by_key), pool_option(r, by_key)
        offer = prices.price(pool.cloud.value, region, machine, option)
        model = pool.machine.gpu if pool.machine else ""
        old = before.get(r.key)
        paid = None
        if option in PREPAID and old and (old.machine_type, old.option) == (machine, option):
            paid = max(pool.max_nodes, old.paid_nodes if old.paid_nodes is not None else old.nodes)
        out.append(PoolCost(r.key, pool.cloud.value, region, machine, pool.max_nodes,
                            pool.max_nodes * pool.gpus_per_node, model, option,
                            offer.usd_per_node_hour if offer else None, offer.source if offer else "no offer",
                            paid_nodes=paid))
    return out


def total(costs: Iterable[PoolCost]) -> float:
    """USD per month of the pools whose cost is known (see ``hidden``)."""
    return sum(c.monthly_usd for c in costs)


def money(costs: Sequence[PoolCost]) -> str:
    """"$1,234" per month, or "unknown (pools ...)" when a pool's size or machine type is masked."""
    hid = hidden(costs)
    return f"unknown ({', '.join(hid)}: not known until apply)" if hid else f"${total(costs):,.0f}"


def money_delta(before: Sequence[PoolCost], after: Sequence[PoolCost]) -> str:
    if hidden([*before, *after]):
        return "change unknown"
    return f"{total(after) - total(before):+,.0f} USD"


def hidden(costs: Iterable[PoolCost]) -> list[str]:
    """Pools whose cost is unknown (a masked machine type or size), by name."""
    return sorted({c.key.split("::")[-1] for c in costs if c.hidden})


def by_cloud(costs: Iterable[PoolCost]) -> dict[str, float]:
    out: dict[str, float] = {}
    for c in costs:
        out[c.cloud] = out.get(c.cloud, 0.0) + c.monthly_usd
    return dict(sorted(out.items()))
