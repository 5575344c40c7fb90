"""What the FOCUS specification says, from the digest capacity/data/recorded/focus_spec.json (written by
capacity/actuals/digest_focus.py from FinOps-Open-Cost-and-Usage-Spec/FOCUS_Spec at a pinned tag), and the header
check of an export: the columns gpufleet reads, which FOCUS version a header is, and what to do when it is not 1.x.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from capacity.csvio import RowProblem

DIGEST = Path(__file__).resolve().parents[1] / "data" / "recorded" / "focus_spec.json"
READ = ("1.0", "1.1", "1.2")  # the released 1.x versions the digest holds; later 1.x columns are read by name too

# The columns gpufleet reads and their DuckDB types; every other column of an export is left alone.
TYPES: dict[str, str] = {
    "ChargePeriodStart": "TIMESTAMPTZ", "ChargePeriodEnd": "TIMESTAMPTZ", "ChargeCategory": "VARCHAR",
    "EffectiveCost": "DOUBLE", "BilledCost": "DOUBLE", "BillingCurrency": "VARCHAR", "ProviderName": "VARCHAR",
    "PricingCategory": "VARCHAR", "ResourceId": "VARCHAR", "RegionId": "VARCHAR",
    "CommitmentDiscountId": "VARCHAR", "CommitmentDiscountStatus": "VARCHAR",
    "CapacityReservationId": "VARCHAR", "CapacityReservationStatus": "VARCHAR",
    "ConsumedQuantity": "DOUBLE", "ConsumedUnit": "VARCHAR", "Tags": "VARCHAR",
    # where a charge names its machine type (searched for catalogue GPU machine types)
    "ChargeDescription": "VARCHAR", "SkuMeter": "VARCHAR", "SkuPriceDetails": "VARCHAR", "ResourceType": "VARCHAR",
    "ResourceName": "VARCHAR", "SkuId": "VARCHAR",
}
NEEDED = ("ChargePeriodStart", "ChargePeriodEnd", "ChargeCategory", "EffectiveCost")
DESCRIBING = ("ChargeDescription", "SkuMeter", "SkuPriceDetails", "ResourceType", "ResourceName", "SkuId")
CHECKED = ("ChargeCategory", "CommitmentDiscountStatus", "CapacityReservationStatus", "PricingCategory")


@cache
def digest() -> dict[str, Any]:
    return json.loads(DIGEST.read_text())


def source() -> str:
    s = digest()["source"]
    return f"{s['repository']} {s['tag']} ({s['commit'][:12]}), digested {s['generated']}"


def columns(version: str) -> dict[str, dict[str, Any]]:
    return digest()["columns"][version]


def allowed(column: str) -> list[str]:
    """The values FOCUS 1.2 allows in a column (empty: any)."""
    return list(columns("1.2").get(column, {}).get("allowed", []))


def known_1x() -> set[str]:
    return {c for v in READ for c in columns(v)}


def check_header(file: str, header: list[str], currency_given: bool) -> list[RowProblem]:
    """Problems with an export's columns: another FOCUS version, or a column gpufleet needs that is missing."""
    present = set(header)
    old = set(columns("0.5")) - known_1x()
    if present & old and not present & {"ChargeCategory", "EffectiveCost"}:
        return [RowProblem(file, 1, ", ".join(sorted(present & old)), None,
                           "is a FOCUS 0.5 export (columns that FOCUS 1.0 replaced; no ChargeCategory or "
                           "EffectiveCost). gpufleet reads FOCUS 1.x.",
                           "Export the data again as FOCUS 1.0 or later (every cloud's FOCUS export offers 1.x).")]
    needed = list(NEEDED) + ([] if currency_given else ["BillingCurrency"])
    problems = []
    for column in needed:
        if column in present:
            continue
        guess = next((h for h in header if h.lower() == column.lower()), None)
        hint = f" The export has {guess!r}: column names are case-sensitive." if guess else ""
        fix = ("Export with the BillingCurrency column, or say the currency with --currency USD."
               if column == "BillingCurrency" else f"Export with the {column} column (Mandatory in FOCUS 1.x).")
        problems.append(RowProblem(file, 1, column, None, f"is missing: FOCUS 1.x requires it and gpufleet reads "
                                   f"it.{hint}", fix))
    return problems
