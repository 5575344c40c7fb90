"""Cost: allowed machine types and regions, a GPU cap and a monthly budget per stack, spot only where the fleet
spec asks for it, and the cost-allocation tags on every taggable resource.

The budget and the spot pools are facts of the fleet spec. They reach the pack as policy config
(``stack-monthly-budget.monthly_budget_usd``, ``spot-only-where-allowed.spot_pools``: gpufleet passes them,
and ``gpufleet policy config --stack S`` writes them for the Pulumi CLI); when not configured, the pack reads
them from the stack's own ``gpufleet:fleet`` config, which the Pulumi CLI hands every policy pack in
PULUMI_CONFIG. See docs/policies.md.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from capacity.csvio import InputError
from capacity.prices.table import PREPAID, option_label
from components.catalog import Cloud, offerings
from policies import prices
from policies.props import (
    AKS_CLUSTER,
    AWS_PROVIDER,
    AWS_SUBNET,
    AZURE_LUSTRE,
    AZURE_STORAGE,
    BUCKETS,
    CLUSTERS,
    GCP_LUSTRE,
    GKE_CLUSTER,
    GKE_NODE_POOL,
    LAUNCH_TEMPLATE,
    LUSTRES,
    NODE_POOLS,
    PLACEMENT_GROUP,
    NodePool,
    cloud_of,
    get,
    must_pool,
    pool_region,
    region_of,
    reserved_by_template,
    tags_of,
)
from policies.rule import MANDATORY, Config, Node, Stack, resource_policy, stack_policy
from policies.storage import BUCKETS_EXCLUDED, LustreCost, lustre_cost, lustre_lines

HOURS_PER_MONTH = 730
PROVIDERS = {"pulumi:providers:aws": "region", "pulumi:providers:gcp": "region",
             "pulumi:providers:azure-native": "location"}
LOCATED = {GKE_CLUSTER: "location", GKE_NODE_POOL: "location", GCP_LUSTRE: "location", AKS_CLUSTER: "location",
           AZURE_STORAGE: "location", AZURE_LUSTRE: "location", AWS_SUBNET: "availabilityZone", **PROVIDERS}
TAGGABLE = (*CLUSTERS, *NODE_POOLS, *BUCKETS, *LUSTRES, LAUNCH_TEMPLATE, PLACEMENT_GROUP, "aws:kms/key:Key",
            "aws:ec2/vpc:Vpc", "aws:ec2/natGateway:NatGateway", "aws:ec2/eip:Eip")
DEFAULT_TAGS = {"pulumi:providers:aws": "defaultTags", "pulumi:providers:gcp": "defaultLabels"}


def stack_fleet() -> Mapping[str, Any]:
    """The stack's ``gpufleet:fleet`` from the config the engine passes every policy pack, or {}."""
    try:
        raw = json.loads(os.environ.get("PULUMI_CONFIG") or "{}").get("gpufleet:fleet")
        fleet = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {}
    return fleet if isinstance(fleet, Mapping) else {}


def budget_usd(config: Config) -> float | None:
    value = config.get("monthly_budget_usd") or stack_fleet().get("monthly_budget_usd")
    return float(value) if value else None


def spot_pools(config: Config) -> list[str]:
    """"cluster/pool" ids the fleet spec puts on spot ("*" for any)."""
    if config.get("spot_pools") is not None:
        return list(config["spot_pools"])
    return [f"{c.get('name')}/{p.get('name')}" for c in stack_fleet().get("clusters", [])
            for p in c.get("node_pools", []) if get(p, "capacity.type") == "spot"]


def _pool(r: Node) -> NodePool:
    return must_pool(r.type, r.props)


def allowed_machine_types(r: Node, config: Config) -> Iterable[str]:
    allowed = config["allowed_machine_types"]
    for name in _pool(r).machine_types:
        if allowed and name not in allowed:
            yield f"machine type {name!r} is not in the allow-list {allowed}"


def _catalogue_regions(cloud: Cloud) -> set[str]:
    return {region for (c, _), by_region in offerings().items() if c == cloud for region in by_region}


def allowed_regions(r: Node, config: Config) -> Iterable[str]:
    location = get(r.props, LOCATED[r.type])
    cloud = cloud_of(r.type) or cloud_of(r.type.rsplit(":", 1)[-1])
    if not isinstance(location, str) or not location or cloud is None:
        return
    region = region_of(location)
    allowed = set(config["allowed_regions"]) or _catalogue_regions(cloud)
    if region not in allowed:
        yield f"region {region!r} is not allowed; allowed: {', '.join(sorted(allowed))}"


def _stack_pools(stack: Stack) -> list[tuple[Node, NodePool]]:
    return [(r, _pool(r)) for r in stack.of_type(*NODE_POOLS)]


def gpu_cap(stack: Stack, config: Config) -> Iterable[tuple[str, Node | None]]:
    total = sum(pool.max_nodes * pool.gpus_per_node for _, pool in _stack_pools(stack))
    if total > int(config["max_gpus"]):
        yield f"the stack asks for up to {total:,} GPUs (every pool at its max nodes); the cap is " \
              f"{int(config['max_gpus']):,}", None


def stack_pool_region(stack: Stack, r: Node) -> str | None:
    deps = [(d.type, d.props) for d in stack.depends_on(r, AWS_SUBNET, AKS_CLUSTER)]
    return pool_region(r.type, r.props, deps, [p.props for p in stack.of_type(AWS_PROVIDER)])


def _option(stack: Stack, r: Node, pool: NodePool) -> str:
    """The option the pool buys; an EKS pool on a reservation shows it in its launch template."""
    templates = stack.depends_on(r, LAUNCH_TEMPLATE)
    if pool.capacity == "on_demand" and any(reserved_by_template(t.props) for t in templates):
        return "reservation"
    return pool.capacity


def monthly_cost(stack: Stack, hours: float, offers: Path | None = None) -> tuple[float, list[str], list[str]]:
    """(USD per month with every pool at its max nodes, one line per priced pool, one line per unpriced pool).
    Reservations and capacity blocks are prepaid: a sunk cost billed whether nodes run or not, said in the line."""
    total, lines, unpriced = 0.0, [], []
    for r, pool in _stack_pools(stack):
        for machine in pool.machine_types[:1]:
            option, region = _option(stack, r, pool), stack_pool_region(stack, r)
            label = option_label(pool.cloud.value, option) + (", sunk cost" if option in PREPAID else "")
            price = prices.node_hour(pool.cloud.value, machine, region, option, offers)
            if price is None:
                unpriced.append(f"{machine} (pool {r.name}, {label}, {region or 'region unknown'})")
                continue
            usd = price.usd_per_node_hour * pool.max_nodes * hours
            total += usd
            lines.append(f"{r.name}: {pool.max_nodes} x {machine} ({label}) at "
                         f"${price.usd_per_node_hour:,.2f}/h = ${usd:,.0f}")
    return total, lines, unpriced


def stack_lustres(stack: Stack) -> list[LustreCost]:
    return [lustre_cost(r.type, r.name, r.props, stack_pool_region(stack, r)) for r in stack.of_type(*LUSTRES)]


def budget(stack: Stack, config: Config) -> Iterable[tuple[str, Node | None]]:
    limit = budget_usd(config)
    if limit is None:
        yield "no monthly budget is known for this stack: set stack-monthly-budget.monthly_budget_usd in the " \
              "policy pack config (gpufleet policy config --stack NAME writes it), or gpufleet:fleet." \
              "monthly_budget_usd in the stack config", None
        return
    offers = prices.project_path(config.get("offers_csv"))
    if offers is not None and not offers.is_file():
        yield f"stack-monthly-budget.offers_csv {config['offers_csv']!r} is not a file (a relative path is read from " \
              "the project root): point it at an offers file with the columns of capacity/data/offers.csv, or set " \
              "it to null for the bundled snapshot", None
        return
    try:
        total, lines, unpriced = monthly_cost(stack, float(config["hours_per_month"]), offers)
        lustres = stack_lustres(stack)
        storage_total, storage_lines, storage_unpriced = lustre_lines(lustres)
    except InputError as err:
        yield f"stack-monthly-budget.offers_csv {config['offers_csv']!r} is not a valid offers file: {err}", None
        return
    if unpriced:
        table = config.get("offers_csv") or "capacity/data/offers.csv"
        yield f"cannot estimate the monthly cost: no price for {'; '.join(sorted(set(unpriced)))} in {table} or " \
              "capacity/data/on_demand_prices.csv: add a row with its source (docs/capacity.md, Prices)", None
    total += storage_total
    if total > limit:
        known = " (the priced pools alone)" if unpriced else ""
        least = "at least " if storage_unpriced else ""
        left = f"; Lustre not priced: {'; '.join(storage_unpriced)}" if storage_unpriced else ""
        sized = ", Lustre at its capacity" if lustres else ""
        yield f"estimated {least}${total:,.0f}/month{known} (every pool at its max nodes, " \
              f"{config['hours_per_month']} h{sized}) exceeds the budget of ${limit:,.0f}: " \
              + "; ".join(lines + storage_lines) + left + f"; not counted: {BUCKETS_EXCLUDED}", None


def spot_allowed(r: Node, config: Config) -> Iterable[str]:
    pool = _pool(r)
    allowed = spot_pools(config)
    pool_id = pool.pool_id(r.name)
    if pool.spot and "*" not in allowed and pool_id not in allowed and pool_id.split("/")[-1] not in allowed:
        yield f"pool {pool_id} runs on spot, but the fleet spec does not ask for spot there (spot pools: " \
              f"{', '.join(allowed) or 'none'}); preemption kills multi-node jobs"


def _provider_tags(r: Node) -> Mapping[str, Any] | None:
    raw = get(r.props, DEFAULT_TAGS[r.type])
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return None
    return get(value, "tags", value) if isinstance(value, Mapping) else None


def cost_tags(r: Node, config: Config) -> Iterable[str]:
    """Providers are checked only when they set default tags (then those must be complete)."""
    tags = _provider_tags(r) if r.type in DEFAULT_TAGS else tags_of(r.type, r.props)
    if tags is None and r.type not in TAGGABLE:
        return
    missing = [k for k in config["required_tags"] if not (tags or {}).get(k)]
    if missing:
        yield f"missing cost tags {', '.join(missing)}: finance cannot allocate this resource's spend"


POLICIES = [
    resource_policy("allowed-machine-types", "Node pools may only use machine types on the allow-list: a typo or a "
                    "bigger machine type multiplies the bill.", MANDATORY, NODE_POOLS, allowed_machine_types,
                    config={"allowed_machine_types": {"type": "array", "items": {"type": "string"}, "default": [],
                                                      "description": "allowed machine types; [] allows every "
                                                                     "catalogue machine type"}}),
    resource_policy("allowed-regions", "Resources may only be created in allowed regions (data residency, quota and "
                    "price agreements).", MANDATORY, tuple(LOCATED), allowed_regions,
                    config={"allowed_regions": {"type": "array", "items": {"type": "string"}, "default": [],
                                                "description": "allowed regions; [] allows the regions where the "
                                                               "catalogue offers GPU machines"}}),
    stack_policy("stack-gpu-cap", "A stack may ask for at most this many GPUs (every pool at its max nodes), so a "
                 "wrong max cannot reserve a data centre.", MANDATORY, gpu_cap,
                 config={"max_gpus": {"type": "integer", "minimum": 1, "default": 2048,
                                      "description": "GPUs per stack at every pool's max nodes"}}),
    stack_policy("stack-monthly-budget", "The stack's estimated monthly cost (catalogue x prices, every pool at its "
                 "max nodes) must fit its monthly budget.", MANDATORY, budget,
                 config={"monthly_budget_usd": {"type": ["number", "null"], "default": None,
                                                "description": "USD per month; null: gpufleet:fleet."
                                                               "monthly_budget_usd from the stack config"},
                         "hours_per_month": {"type": "number", "minimum": 1, "default": HOURS_PER_MONTH,
                                             "description": "hours a node runs in a month"},
                         "offers_csv": {"type": ["string", "null"], "default": None,
                                        "description": "offers file to price pools from (the columns of "
                                                       "capacity/data/offers.csv; a relative path is read from the "
                                                       "project root); null: the bundled snapshot"}}),
    resource_policy("spot-only-where-allowed", "Only pools the fleet spec puts on spot may run on spot: a preempted "
                    "node kills every multi-node job it is part of.", MANDATORY, NODE_POOLS, spot_allowed,
                    config={"spot_pools": {"type": ["array", "null"], "items": {"type": "string"}, "default": None,
                                           "description": "cluster/pool ids allowed on spot ('*' for any); null: "
                                                          "the pools with capacity.type spot in gpufleet:fleet"}}),
    resource_policy("cost-tags-present", "Every taggable resource carries the cost-allocation tags, so finance can "
                    "split the bill by team and cost centre.", MANDATORY, None, cost_tags,
                    config={"required_tags": {"type": "array", "items": {"type": "string"},
                                              "default": ["team", "cost-center"]}}),
]
