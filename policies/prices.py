"""Prices per node-hour for the budget policy: capacity.prices.table.Prices.price, the very function the PR comment
prices pools with, so the two never disagree (system CPU pools included).

First choice: the price snapshot at the option the pool buys: the bundled ``capacity/data/offers.csv``, or the
file named by the policy config ``stack-monthly-budget.offers_csv`` (same columns; tests and teams with negotiated
rates use it); then what that option bills at or an upper bound; then the on-demand list-price table
``capacity/data/on_demand_prices.csv`` (CPU machine types, which offers.csv does not price).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from capacity.prices.table import Offer, Prices

ROOT = Path(__file__).resolve().parents[1]  # a relative offers_csv (or ledger_json) is read from the project root


def project_path(configured: str | None) -> Path | None:
    """A file named in policy config (absolute, or relative to the project root); None when not configured (for
    offers_csv: the bundled snapshot)."""
    if not configured:
        return None
    path = Path(configured)
    return path if path.is_absolute() else ROOT / path


@cache
def _snapshot(path: Path | None) -> Prices:
    return Prices.load(path)


def node_hour(cloud: str, machine_type: str, region: str | None, option: str,
              offers: Path | None = None) -> Offer | None:
    """``option``: the offers.csv option the pool buys (on_demand, spot, reservation, capacity_block, flex_start);
    ``offers``: an offers file instead of the bundled snapshot. Raises capacity.inputs.InputError when that file
    is not a valid offers file."""
    return _snapshot(offers).price(cloud, region, machine_type, option)
