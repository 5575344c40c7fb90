"""Write FOCUS exports for the actuals tests: the specification's own examples (rows from the digest
capacity/data/recorded/focus_spec.json) and small hand-made exports, as CSV or as Parquet (written by DuckDB)."""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb
from typer.testing import CliRunner

from gpufleet.cli import app

DIGEST = json.loads((Path(__file__).resolve().parents[2] / "capacity/data/recorded/focus_spec.json").read_text())
# The columns a hand-made export carries: FOCUS 1.2 names (tests/capacity/test_actuals_focus.py holds each to the
# digest), enough for every question the actuals answer.
COLUMNS = ("BillingPeriodStart", "ChargePeriodStart", "ChargePeriodEnd", "ChargeCategory", "BilledCost",
           "EffectiveCost", "BillingCurrency", "ProviderName", "PricingCategory", "ResourceId", "RegionId",
           "CommitmentDiscountId", "CommitmentDiscountStatus", "CapacityReservationId", "CapacityReservationStatus",
           "ConsumedQuantity", "ConsumedUnit", "ChargeDescription", "Tags")


def write_csv(path: Path, rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None) -> Path:
    columns = list(columns or rows[0])
    with path.open("w", newline="", encoding="utf-8") as fh:
        out = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore")
        out.writeheader()
        for row in rows:
            out.writerow({c: "null" if row.get(c) is None else row[c] for c in columns})
    return path


def to_parquet(csv_path: Path) -> Path:
    """The same export as Parquet, its columns typed as a cloud writes them (DuckDB's own type detection)."""
    target = csv_path.with_suffix(".parquet")
    duckdb.sql(f"COPY (SELECT * FROM read_csv('{csv_path}', nullstr = 'null')) TO '{target}' (FORMAT PARQUET)")
    return target


def charge(month: str, cost: float, **fields: Any) -> dict[str, Any]:
    """One hand-made FOCUS 1.2 row: a Usage charge of one hour on the first day of the month, in USD."""
    row: dict[str, Any] = {"BillingPeriodStart": f"{month}-01T00:00:00Z", "ChargePeriodStart": f"{month}-01T00:00:00Z",
                           "ChargePeriodEnd": f"{month}-01T01:00:00Z", "ChargeCategory": "Usage",
                           "BilledCost": cost, "EffectiveCost": cost, "BillingCurrency": "USD",
                           "PricingCategory": "Standard"}
    row.update(fields)
    return row


def run(*args: str) -> Any:
    return CliRunner().invoke(app, ["capacity", "actuals", *args])


def actuals_json(db: Path, *args: str) -> dict[str, Any]:
    result = run(*args, "--db", str(db), "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)
