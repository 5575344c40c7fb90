"""Prices per node-hour for the budget policy: gpufleet.cost.Prices.price, the very function the PR comment
prices pools with, so the two never disagree (system CPU pools included).

First choice: the capacity planner's price snapshot ``capacity/data/offers.csv`` at the option the pool buys;
then what that option bills at or an upper bound; then the on-demand list-price table
``policies/data/on_demand_prices.csv`` (CPU machine types, which offers.csv does not price).
"""

from __future__ import annotations

from functools import cache

from gpufleet.cost import Offer, Prices


@cache
def _snapshot() -> Prices:
    return Prices.load()


def node_hour(cloud: str, machine_type: str, region: str | None, option: str) -> Offer | None:
    """``option``: the offers.csv option the pool buys (on_demand, spot, reservation, capacity_block, flex_start)."""
    return _snapshot().price(cloud, region, machine_type, option)
