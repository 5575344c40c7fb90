"""Monthly cost of a stack's node pools, from its resources (captured graph or engine state) and the price table.

One model: every node pool at its max nodes, 730 hours a month (8,760 h / 12), priced per node-hour by
capacity.prices.table.Prices.price at the option the pool buys (read from the pool's resources, policies.props).
The budget policy prices pools through the same function, so both agree. Reservations and capacity blocks are
prepaid: a pool that keeps one but shrinks still pays for the nodes it had.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from capacity.prices.table import HOURS_PER_MONTH, PREPAID, Prices, option_label
from gpufleet.engine.capture import SECRET_MASK, UNKNOWN_MASK, Resource
from policies.props import (
    AKS_AGENT_POOL,
    AKS_RESERVATION_GROUP,
    AWS_PROVIDER,
    EKS_NODE_GROUP,
    GKE_NODE_POOL,
    LAUNCH_TEMPLATE,
    LUSTRES,
    NODE_POOLS,
    NodePool,
    get,
    node_pool,
    pool_region,
    reserved_by_template,
)
from policies.storage import BUCKETS_EXCLUDED, LustreCost, buckets_named, lustre_cost, lustre_inputs

# What the cost does not cover: said on every cost line, so nobody reads the figure as the whole bill.
NOT_COUNTED = f"{BUCKETS_EXCLUDED}, network and egress, control-plane fees, support"


def buckets(resources: Sequence[Resource]) -> list[str]:
    """The stack's buckets by name ("checkpoints (S3)"): excluded from every cost, and said so."""
    return buckets_named((r.type, r.name) for r in resources)


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

    @property
    def priced(self) -> bool:
        return self.usd_per_node_hour is not None

    @property
    def described(self) -> str:
        """"train-h200 (16 x Standard_ND96isr_H200_v5, spot, swedencentral)": what an unpriced pool is."""
        return f"{self.key.split('::')[-1]} ({self.nodes} x {self.machine_type}, {self.label}, " \
               f"{self.region or 'region unknown'})"

    @property
    def identity(self) -> tuple[Any, ...]:
        return (self.key, self.machine_type, self.region, self.option, self.nodes, self.paid_nodes)


@dataclass(frozen=True)
class StorageCost:
    """A Lustre file system at its capacity x its tier's sourced rate (policies.storage, the budget policy's own
    reading); unpriced when no rate is sourced for its cloud, region and tier, unknown when its size is masked."""

    key: str
    lustre: LustreCost
    hidden: str = ""  # "[unknown]" / "[secret]": its size or tier is not known until apply

    @property
    def cloud(self) -> str:
        return self.lustre.cloud

    @property
    def region(self) -> str | None:
        return self.lustre.region

    @property
    def priced(self) -> bool:
        return self.lustre.usd_per_unit_month is not None

    @property
    def monthly_usd(self) -> float:
        return self.lustre.monthly_usd or 0.0

    @property
    def described(self) -> str:
        return self.lustre.described

    @property
    def identity(self) -> tuple[Any, ...]:
        return (self.key, self.lustre.tier, self.region, self.lustre.capacity)


Cost = PoolCost | StorageCost


def pool_option(r: Resource, by_key: Mapping[str, Resource]) -> str:
    """The offers.csv option a pool buys; an EKS pool on a reservation shows it in its launch template."""
    pool = node_pool(r.type, r.inputs)
    capacity = pool.capacity if pool else "on_demand"
    templates = [by_key[d].inputs for d in r.dependencies if d in by_key and by_key[d].type == LAUNCH_TEMPLATE]
    if capacity == "on_demand" and any(reserved_by_template(t) for t in templates):
        return "reservation"
    return capacity


def aws_providers(resources: Iterable[Resource]) -> list[Mapping[str, Any]]:
    """The inputs of every AWS provider: an EKS pool's region is its provider's (found once per graph, not per
    pool: a 50-cluster stack has 150 pools in 7,700 resources)."""
    return [p.inputs for p in resources if p.type == AWS_PROVIDER]


def pool_region_in(r: Resource, by_key: Mapping[str, Resource], providers: list[Mapping[str, Any]]) -> str | None:
    deps = [(by_key[d].type, by_key[d].inputs) for d in r.dependencies if d in by_key]
    return pool_region(r.type, r.inputs, deps, providers)


# The inputs that size and price a pool: a masked value in any of them makes the pool's cost unknown.
SIZING = {EKS_NODE_GROUP: ("instanceTypes", "scalingConfig", "capacityType"),
          GKE_NODE_POOL: ("nodeConfig.machineType", "nodeConfig.spot", "nodeConfig.preemptible", "autoscaling",
                          "nodeCount", "initialNodeCount", "nodeLocations", "nodeConfig.flexStart",
                          "nodeConfig.reservationAffinity", "queuedProvisioning"),
          AKS_AGENT_POOL: ("vmSize", "count", "maxCount", "enableAutoScaling", "scaleSetPriority",
                           AKS_RESERVATION_GROUP)}
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
    providers = aws_providers(resources)
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
        machine, region, option = pool.machine_types[0], pool_region_in(r, by_key, providers), pool_option(r, by_key)
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


def storage_costs(resources: Sequence[Resource]) -> list[StorageCost]:
    """Every Lustre file system's cost at its capacity and tier (policies.storage.lustre_cost)."""
    by_key, providers = {r.key: r for r in resources}, aws_providers(resources)
    out = []
    for r in (r for r in resources if r.type in LUSTRES):
        masked = next((m for m in (hidden_value(v) for v in lustre_inputs(r.type, r.inputs)) if m), "")
        region = pool_region_in(r, by_key, providers)
        out.append(StorageCost(r.key, lustre_cost(r.type, r.name, r.inputs, region), masked))
    return out


def costs(resources: Sequence[Resource], prices: Prices, base: Sequence[Cost] = ()) -> list[Cost]:
    """Every pool's cost (``pool_costs``) and every Lustre file system's (``storage_costs``)."""
    pools = pool_costs(resources, prices, [c for c in base if isinstance(c, PoolCost)])
    return [*pools, *storage_costs(resources)]


def pools(costs: Iterable[Cost]) -> list[PoolCost]:
    return [c for c in costs if isinstance(c, PoolCost)]


def storage(costs: Iterable[Cost]) -> list[StorageCost]:
    return [c for c in costs if isinstance(c, StorageCost)]


def storage_json(c: StorageCost) -> dict[str, Any]:
    """One Lustre file system (docs/pr-comment.md, docs/preview-json.md): monthly_usd null when unpriced or its
    size is unknown, never 0."""
    fs = c.lustre
    return {"resource": c.key, "cloud": c.cloud, "region": c.region, "service": fs.service, "tier": fs.tier,
            "capacity": fs.capacity, "capacity_unit": fs.unit.split("-")[0], "capacity_tib": fs.tib,
            "usd_per_unit_month": fs.usd_per_unit_month, "unit": fs.unit,
            "monthly_usd": None if fs.monthly_usd is None or c.hidden else round(fs.monthly_usd, 2),
            "source": c.hidden or fs.source}


def total(costs: Iterable[Cost]) -> float:
    """USD per month of the pools and file systems whose cost is known (see ``hidden`` and ``unpriced``): a lower
    bound when any is unpriced, never a figure that counts an unknown as $0."""
    return sum(c.monthly_usd for c in costs)


def unpriced(costs: Iterable[Cost]) -> list[Cost]:
    """Pools and file systems with no sourced price (a known size): unknown, never $0."""
    return [c for c in costs if not c.priced and not c.hidden]


def leaves_out(costs: Iterable[Cost]) -> str:
    return "; ".join(sorted({c.described for c in unpriced(costs)}))


def money(costs: Sequence[Cost]) -> str:
    """"$1,234" per month; "at least $1,234" when a pool is unpriced; "unknown (pools ...)" when a pool's size or
    machine type is masked."""
    hid = hidden(costs)
    if hid:
        return f"unknown ({', '.join(hid)}: not known until apply)"
    missing = sorted({c.key.split("::")[-1] for c in unpriced(costs)})
    return f"at least ${total(costs):,.0f} ({', '.join(missing)} unpriced)" if missing else f"${total(costs):,.0f}"


def bound(before: Sequence[Cost], after: Sequence[Cost]) -> str:
    """How the priced pools' delta relates to the true one: "exact"; "at_least" when only the head has unpriced
    pools (each adds an unknown amount >= 0); "at_most" when only the base has; "unknown" when both do, or a
    pool is masked. An unpriced pool the change leaves as it was cancels out."""
    if hidden([*before, *after]):
        return "unknown"
    old, new = {c.identity for c in unpriced(before)}, {c.identity for c in unpriced(after)}
    gone, added = old - new, new - old
    return "unknown" if gone and added else "at_most" if gone else "at_least" if added else "exact"


def money_delta(before: Sequence[Cost], after: Sequence[Cost]) -> str:
    delta, how = total(after) - total(before), bound(before, after)
    if how == "unknown":
        return "change unknown"
    return {"exact": "", "at_least": "at least ", "at_most": "at most "}[how] + f"{delta:+,.0f} USD"


def hidden(costs: Iterable[Cost]) -> list[str]:
    """Pools and file systems whose cost is unknown (a masked machine type or size), by name."""
    return sorted({c.key.split("::")[-1] for c in costs if c.hidden})


def by_cloud(costs: Iterable[Cost]) -> dict[str, float]:
    out: dict[str, float] = {}
    for c in costs:
        out[c.cloud] = out.get(c.cloud, 0.0) + c.monthly_usd
    return dict(sorted(out.items()))
