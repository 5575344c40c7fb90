"""Digest AWS GPU instance prices from tsaol/aws-gpu's ``data/all_gpu_instances.js`` (generated from the
instances.vantage.sh dataset, which reads the AWS Price List) into capacity/data/prices/aws_instances.csv: one row per
catalogue GPU machine type and region the catalogue offers and the file prices, with the on-demand Linux rate and
the 1-year Standard Reserved Instance, No Upfront, effective hourly rate (empty when the file has none; the
generator's scripts/utils.py reads ``reserved['yrTerm1Standard.noUpfront']``).

    git -C <mirror> show PIN:data/all_gpu_instances.js > all.js
    python -m capacity.prices.digest_aws all.js > capacity/data/prices/aws_instances.csv

The pinned file: https://github.com/tsaol/aws-gpu/blob/PIN/data/all_gpu_instances.js ("Last updated: 2026-01-21").
The file carries no spot price or 3-year rate: those come from an older file of the same repository
(capacity/prices/digest_aws_spot.py) and from the live fetcher (capacity/prices/aws.py).
"""

from __future__ import annotations

import csv
import json
import re
import sys

from capacity.prices import gpu_machines
from components.catalog import Cloud

REPOSITORY = "tsaol/aws-gpu"
PIN = "7412fd256c5eda04a70a17742a68e8e44824b2cb"
PATH = "data/all_gpu_instances.js"
FIELDS = ("machine_type", "region", "on_demand", "reserved_1y_no_upfront", "updated")


def parse(text: str) -> tuple[dict[str, dict], str]:
    """(instance type -> its entry, the file's "Last updated" date)."""
    updated = re.search(r"Last updated: (\d{4}-\d{2}-\d{2})", text)
    if updated is None:
        raise ValueError(f"{PATH}: no 'Last updated: YYYY-MM-DD' line")
    entries = json.loads(text[text.index("["):text.rindex("]") + 1])
    return {e.get("apiName") or e["name"]: e for e in entries}, updated.group(1)


def main(path: str) -> None:
    with open(path) as fh:
        entries, updated = parse(fh.read())
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(FIELDS)
    for region, machines in gpu_machines(Cloud.AWS).items():
        for m in machines:
            price = entries.get(m.name, {}).get("pricing", {}).get(region, {})
            if price.get("onDemand"):
                out.writerow([m.name, region, price["onDemand"], price.get("reserved", ""), updated])


if __name__ == "__main__":
    main(sys.argv[1])
