"""Storage in the cost: a Lustre file system's monthly cost from its own inputs (capacity x its throughput tier's
rate, capacity.prices.lustre), read the same way by the budget policy, `gpufleet preview` and the PR comment; and
the advisory that a Lustre file system is far larger than the stack's GPUs could use.

Buckets (S3, GCS, Blob storage accounts) are excluded by name: they bill for what they hold, which no stack input
says, so any figure would be a guess. Every cost line names them as not counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from capacity.prices.lustre import rate
from policies.props import (
    AZURE_LUSTRE,
    AZURE_STORAGE,
    BUCKETS,
    FSX_LUSTRE,
    GCP_LUSTRE,
    GCS_BUCKET,
    LUSTRES,
    NODE_POOLS,
    S3_BUCKET,
    UNKNOWN,
    get,
    must_pool,
)
from policies.rule import ADVISORY, Config, Node, Stack, stack_policy

# Per type: cloud, the capacity input and its unit (the unit a rate must be in), TiB per unit as the cloud counts
# (FSx and Managed Lustre count 1 TiB as 1,000 GiB: components/aws/storage.py, components/gcp/storage.py).
CAPACITY = {FSX_LUSTRE: ("aws", "storageCapacity", "GB-month", 1 / 1000),
            GCP_LUSTRE: ("gcp", "capacityGib", "GiB-month", 1 / 1000),
            AZURE_LUSTRE: ("azure", "storageCapacityTiB", "TiB-month", 1.0)}
SERVICE = {FSX_LUSTRE: "FSx for Lustre", GCP_LUSTRE: "Managed Lustre", AZURE_LUSTRE: "Azure Managed Lustre"}
BUCKET_KIND = {S3_BUCKET: "S3", GCS_BUCKET: "GCS", AZURE_STORAGE: "Blob"}
BUCKETS_EXCLUDED = "buckets (S3, GCS, Blob: billed by what they hold, which the stack does not say)"


TIER_INPUTS = {FSX_LUSTRE: ("deploymentType", "storageType", "perUnitStorageThroughput"),
               GCP_LUSTRE: ("perUnitStorageThroughput",), AZURE_LUSTRE: ("sku.name",)}


def lustre_inputs(type_: str, props: Mapping[str, Any]) -> list[Any]:
    """The inputs that size and price a file system: a masked one makes its cost unknown."""
    return [get(props, p) for p in (CAPACITY[type_][1], *TIER_INPUTS[type_])]


def tier(type_: str, props: Mapping[str, Any]) -> str:
    """The throughput tier as capacity/data/prices/typed.json keys it (capacity.prices.lustre)."""
    return "/".join(_part(get(props, p, "")) for p in TIER_INPUTS[type_])


def _part(value: Any) -> str:
    """500, 500.0 and "500" are the same tier."""
    number = _number(value)
    return f"{number:g}" if number is not None else str(value)


@dataclass(frozen=True)
class LustreCost:
    name: str
    cloud: str
    region: str | None
    tier: str
    capacity: float | None  # in the capacity input's own unit; None: masked ([unknown]/[secret]) until apply
    unit: str
    tib: float | None
    usd_per_unit_month: float | None  # None: no sourced rate for this cloud, region and tier
    source: str

    @property
    def monthly_usd(self) -> float | None:
        if self.capacity is None or self.usd_per_unit_month is None:
            return None
        return self.capacity * self.usd_per_unit_month

    @property
    def described(self) -> str:
        """"train-lustre-fsx (FSx for Lustre 4.8 TiB, tier PERSISTENT_2/SSD/1000, us-east-1)"."""
        size = "size unknown until apply" if self.tib is None else f"{_figure(self.tib)} TiB"
        return f"{self.name} ({self.service} {size}, tier {self.tier}, {self.region or 'region unknown'})"

    @property
    def service(self) -> str:
        return {"aws": "FSx for Lustre", "gcp": "Managed Lustre", "azure": "Azure Managed Lustre"}[self.cloud]


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def lustre_cost(type_: str, name: str, props: Mapping[str, Any], region: str | None) -> LustreCost:
    cloud, field, unit, tib_per_unit = CAPACITY[type_]
    capacity = None if get(props, field) == UNKNOWN else _number(get(props, field))
    grade = tier(type_, props)
    found = rate(cloud, region, grade)
    if found is not None and found.unit != unit:
        raise ValueError(f"capacity/data/prices/typed.json: the {cloud} Lustre rate for {region}/{grade} is per "
                         f"{found.unit}; {SERVICE[type_]} is sized in {field}, so its rate must be per {unit}")
    source = found.provenance if found else (f"unpriced: no sourced {SERVICE[type_]} rate for tier {grade} in "
                                             f"{region or 'an unknown region'} (capacity/data/prices/typed.json)")
    return LustreCost(name, cloud, region, grade, capacity, unit,
                      None if capacity is None else capacity * tib_per_unit,
                      found.usd_per_unit_month if found else None, source)


def buckets_named(resources: Iterable[tuple[str, str]]) -> list[str]:
    """(type, name) -> "checkpoints (S3)" for every bucket: what the cost leaves out, by name."""
    return sorted({f"{name} ({BUCKET_KIND[t]})" for t, name in resources if t in BUCKETS})


def stack_gpus(stack: Stack) -> int:
    """GPUs of every pool at its max nodes (what the stack could run at once)."""
    return sum((p := must_pool(r.type, r.props)).max_nodes * p.gpus_per_node for r in stack.of_type(*NODE_POOLS))


def _tib(node: Node) -> float | None:
    _, field, _, tib_per_unit = CAPACITY[node.type]
    value = _number(get(node.props, field))
    return None if value is None else value * tib_per_unit


def _figure(value: float) -> str:
    """1,600.001 / 15 / 0.5625: the digits that matter, no float noise."""
    return f"{value:,.6f}".rstrip("0").rstrip(".")


def lustre_fits(stack: Stack, config: Config) -> Iterable[tuple[str, Node | None]]:
    limit = float(config["max_tib_per_gpu"])
    gpus = stack_gpus(stack)
    for node in stack.of_type(*LUSTRES):
        tib = _tib(node)
        if tib is not None and tib > limit * gpus:
            per_gpu = f"{_figure(tib / gpus)} TiB per GPU" if gpus else "and the stack has no GPU pool"
            yield (f"{SERVICE[node.type]} {node.name} is {_figure(tib)} TiB for {gpus:,} GPUs ({per_gpu}), above "
                   f"lustre-fits-the-gpus.max_tib_per_gpu {limit:g} TiB per GPU: a capacity meant in GiB written as "
                   "TiB? Lustre bills every provisioned TiB whether it is read or not", node)


def lustre_lines(costs: Sequence[LustreCost]) -> tuple[float, list[str], list[str]]:
    """(USD per month of the priced file systems, one line per priced one, one per unpriced one)."""
    total, lines, unpriced = 0.0, [], []
    for c in costs:
        usd = c.monthly_usd
        if usd is None:
            unpriced.append(f"{c.described}: {c.source}")
            continue
        total += usd
        size = f"{_figure(c.capacity or 0)} {c.unit.split('-')[0]}"
        lines.append(f"{c.name}: {size} x ${c.usd_per_unit_month:g}/{c.unit} (tier {c.tier}) = ${usd:,.0f}")
    return total, lines, unpriced


POLICIES = [
    stack_policy("lustre-fits-the-gpus", "A Lustre file system is not far larger than the stack's GPUs could use "
                 "(TiB per GPU, every pool at its max nodes): 2.4 PB for 128 GPUs is a size typed in the wrong unit, "
                 "and every provisioned TiB is billed.", ADVISORY, lustre_fits,
                 config={"max_tib_per_gpu": {"type": "number", "exclusiveMinimum": 0, "default": 10,
                                             "description": "TiB of Lustre per GPU above which the size is flagged; "
                                                            "see docs/policies.md for why 10"}}),
]
