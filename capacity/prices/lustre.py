"""Lustre capacity rates: the rows typed into capacity/data/prices/typed.json ("lustre"), each for one cloud, region
and throughput tier, with the page it was typed from and the day. A file system whose (cloud, region, tier) has no
row is unpriced: never priced at another region's or tier's rate, never $0.

Tiers, as the resources spell them: AWS ``<deploymentType>/<storageType>/<perUnitStorageThroughput>`` (e.g.
``PERSISTENT_2/SSD/500``), GCP ``<perUnitStorageThroughput>`` MBps per TiB (e.g. ``500``), Azure the SKU name
(e.g. ``AMLFS-Durable-Premium-500``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from functools import cache
from pathlib import Path

TYPED = Path(__file__).resolve().parents[1] / "data" / "prices" / "typed.json"
UNITS = ("GB-month", "GiB-month", "TiB-month")  # per unit of the capacity input the resource takes


@dataclass(frozen=True)
class LustreRate:
    cloud: str
    region: str
    tier: str
    unit: str
    usd_per_unit_month: float
    as_of: str
    source: str

    @property
    def provenance(self) -> str:
        return f"typed from {self.source} on {self.as_of}"


FIELDS = {f.name for f in fields(LustreRate)}


@cache
def rates(path: Path = TYPED) -> dict[tuple[str, str, str], LustreRate]:
    rows = json.loads(path.read_text()).get("lustre", {}).get("rates", [])
    out = {}
    for i, row in enumerate(rows):
        where = f"{path}: lustre.rates[{i}]"
        missing, unknown = sorted(FIELDS - set(row)), sorted(set(row) - FIELDS)
        if missing or unknown:
            raise ValueError(f"{where}: needs exactly the fields {', '.join(sorted(FIELDS))}; missing "
                             f"{', '.join(missing) or 'none'}, unknown {', '.join(unknown) or 'none'}")
        text = sorted(f for f in FIELDS - {"usd_per_unit_month"} if not isinstance(row[f], str) or not row[f])
        if text:
            raise ValueError(f"{where}: {', '.join(text)} must be non-empty text")
        rate = LustreRate(**row)
        if rate.unit not in UNITS:
            raise ValueError(f"{where}: unit {rate.unit!r} is not one of {', '.join(UNITS)}")
        price = rate.usd_per_unit_month
        if isinstance(price, bool) or not isinstance(price, int | float) or not 0 < price < float("inf"):
            raise ValueError(f"{where}: usd_per_unit_month {rate.usd_per_unit_month!r} must be a positive number "
                             "(a rate nobody sourced has no row at all)")
        out[(rate.cloud, rate.region, rate.tier)] = rate
    return out


def rate(cloud: str, region: str | None, tier: str) -> LustreRate | None:
    """The rate of exactly this cloud, region and tier, else None (unpriced)."""
    return rates().get((cloud, region or "", tier))
