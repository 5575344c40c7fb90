"""A stack's monthly cost as `gpufleet preview` shows it: each pool's price and where it comes from, the total
against the fleet's budget, and what the figure leaves out. The same pool costs as the PR comment and the budget
policy (gpufleet/review/cost.py, capacity/prices/table.py); unknown is never $0."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from capacity.prices.table import HOURS_PER_MONTH, Prices
from capacity.terminal import Column, names, print_table
from gpufleet.engine.preview import Preview
from gpufleet.review import cost


def document(preview: Preview, prices: Prices) -> dict[str, Any]:
    """The ``cost`` of a preview document (docs/preview-json.md)."""
    resources = preview.graph.resources if preview.graph else []
    costs = cost.costs(resources, prices)
    budget = preview.fleet.spec.monthly_budget_usd if preview.fleet else None
    missing = cost.unpriced(costs)
    known = not cost.hidden(costs)
    return {"hours_per_month": HOURS_PER_MONTH, "monthly_usd": round(cost.total(costs), 2) if known else None,
            "at_least": bool(missing), "budget_usd": budget, "prices_as_of": prices.as_of or None,
            "unpriced_pools": [c.key for c in cost.pools(missing)],
            "unpriced_storage": [c.key for c in cost.storage(missing)], "hidden_pools": cost.hidden(costs),
            "not_counted": cost.NOT_COUNTED, "buckets_not_counted": cost.buckets(resources),
            "storage": [cost.storage_json(c) for c in cost.storage(costs)],
            "pools": [{"pool": c.key, "machine_type": c.machine_type, "nodes": c.nodes, "option": c.option,
                       "region": c.region, "usd_per_node_hour": c.usd_per_node_hour,
                       "monthly_usd": None if c.usd_per_node_hour is None else round(c.monthly_usd, 2),
                       "source": c.source} for c in cost.pools(costs)]}


def headline(doc: dict[str, Any]) -> str:
    """'$1,234,567 a month, within its $1,500,000 budget' (or over by, or at least, or unknown)."""
    if doc["monthly_usd"] is None:
        return f"unknown ({', '.join(doc['hidden_pools'])}: sized only at apply)"
    total = f"{'at least ' if doc['at_least'] else ''}${doc['monthly_usd']:,.0f} a month"
    budget = doc["budget_usd"]
    if budget is None:
        return total
    if doc["monthly_usd"] > budget:
        return f"{total}, over its ${budget:,.0f} budget by ${doc['monthly_usd'] - budget:,.0f}"
    if doc["at_least"]:
        return f"{total}, so maybe over its ${budget:,.0f} budget: what is unpriced is not counted"
    return f"{total}, within its ${budget:,.0f} budget"


def print_cost(console: Console, stack: str, doc: dict[str, Any]) -> None:
    rows = [(p["pool"].split("::")[-1], p["machine_type"], str(p["nodes"]), p["option"],
             "unpriced" if p["usd_per_node_hour"] is None else f"{p['usd_per_node_hour']:,.2f}",
             "unpriced" if p["monthly_usd"] is None else f"{p['monthly_usd']:,.0f}", p["source"])
            for p in doc["pools"]]
    if rows:
        print_table(console, f"stack {stack}: monthly cost of its node pools ({doc['hours_per_month']} h, at "
                    "nodes.max)", [*names("pool", "machine type", "nodes#", "option", "USD/node-h#", "USD/month#"),
                                   Column("price source", prose=True)], rows, show_edge=False)
    storage = [(s["resource"].split("::")[-1], s["service"], s["tier"], "unknown" if s["capacity_tib"] is None
                else f"{s['capacity_tib']:,g}", "unpriced" if s["monthly_usd"] is None else f"{s['monthly_usd']:,.0f}",
                s["source"]) for s in doc["storage"]]
    if storage:
        print_table(console, f"stack {stack}: monthly cost of its Lustre (capacity x the tier's rate)",
                    [*names("file system", "service", "tier", "TiB#", "USD/month#"),
                     Column("price source", prose=True)], storage, show_edge=False)
    console.print(f"[bold]stack {stack}: {headline(doc)}[/]; prices as of {doc['prices_as_of'] or 'an unstated date'}"
                  f"; not counted: {doc['not_counted']}"
                  + (f"; buckets left out: {', '.join(doc['buckets_not_counted'])}" if doc["buckets_not_counted"]
                     else ""), highlight=False)
