"""Monthly cost of a stack's node pools, from its resources (captured graph or engine state) and the price snapshot.

One model: every node pool at its max nodes, 730 hours a month (8,760 h / 12), priced per node-hour from
``capacity/data/offers.csv`` read through the planner's loader (capacity.inputs.load_offers, the one reader of
that file). Spot pools use the spot offer; on-demand, reservation, capacity-block and flex-start pools use the
on-demand offer (reservations and capacity blocks bill at their own, often lower, rates: the estimate is an upper
bound). A region without an offer falls back to the same machine and option in another region (named in the
source). Pools without any offer (CPU system pools: offers.csv prices GPUs only) are listed as unpriced.
"""

from __future__ import annotations

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
    NODE_POOLS,
    NodePool,
    get,
    node_pool,
    pool_region,
)

HOURS_PER_MONTH = 730


@dataclass(frozen=True)
class Offer:
    usd_per_node_hour: float
    source: str


class Prices:
    """(cloud, region, machine type, option) -> price per node-hour."""

    def __init__(self, offers: Mapping[tuple[str, str, str, str], Offer], origin: str = ""):
        self.offers = dict(offers)
        self.origin = origin

    @classmethod
    def load(cls, path: Path | None = None) -> Prices:
        """The snapshot via capacity.inputs.load_offers; empty (every pool unpriced) when there is none."""
        from capacity.inputs import DEFAULT_OFFERS, load_offers

        path = path or DEFAULT_OFFERS
        if not path.exists():
            return cls({}, f"{path} (missing)")
        rows = load_offers(path)
        return cls({r.key: Offer(r.usd_per_gpu_hour * r.gpus_per_node, f"{r.source or path.name} ({r.region}, "
                                 f"{r.option.value}, {r.as_of})") for r in rows}, str(path))

    def node_hour(self, cloud: str, region: str | None, machine: str, option: str) -> Offer | None:
        if region and (cloud, region, machine, option) in self.offers:
            return self.offers[(cloud, region, machine, option)]
        others = sorted(k for k in self.offers if (k[0], k[2], k[3]) == (cloud, machine, option))
        return self.offers[others[0]] if others else None


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

    @property
    def monthly_usd(self) -> float:
        return (self.usd_per_node_hour or 0.0) * self.nodes * HOURS_PER_MONTH


def _region(r: Resource, by_key: Mapping[str, Resource]) -> str | None:
    deps = [(by_key[d].type, by_key[d].inputs) for d in r.dependencies if d in by_key]
    providers = [p.inputs for p in by_key.values() if p.type == AWS_PROVIDER]
    return pool_region(r.type, r.inputs, deps, providers)


# The inputs that size and price a pool: a masked value in any of them makes the pool's cost unknown.
SIZING = {EKS_NODE_GROUP: ("instanceTypes", "scalingConfig", "capacityType"),
          GKE_NODE_POOL: ("nodeConfig.machineType", "nodeConfig.spot", "nodeConfig.preemptible", "autoscaling",
                          "nodeCount", "initialNodeCount", "nodeLocations"),
          AKS_AGENT_POOL: ("vmSize", "count", "maxCount", "enableAutoScaling", "scaleSetPriority")}
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


def pool_costs(resources: Sequence[Resource], prices: Prices) -> list[PoolCost]:
    by_key = {r.key: r for r in resources}
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
        machine, region = pool.machine_types[0], _region(r, by_key)
        option = "spot" if pool.spot else "on_demand"
        offer = prices.node_hour(pool.cloud.value, region, machine, option)
        model = pool.machine.gpu if pool.machine else ""
        out.append(PoolCost(r.key, pool.cloud.value, region, machine, pool.max_nodes,
                            pool.max_nodes * pool.gpus_per_node, model, option,
                            offer.usd_per_node_hour if offer else None, offer.source if offer else "no offer"))
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
