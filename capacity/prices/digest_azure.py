"""Digest Azure GPU VM prices from anycloud-sh/catalog's ``azure/vms.csv`` (a daily third-party snapshot of the
Azure Retail Prices API in SkyPilot's catalogue format: ``Price`` the pay-as-you-go Linux rate, ``SpotPrice`` the
Spot meter's) into capacity/data/prices/azure_vms.csv: one row per catalogue GPU VM size and region the catalogue
offers and the file prices.

    git -C <mirror> show PIN:azure/vms.csv > vms.csv
    python -m capacity.prices.digest_azure vms.csv > capacity/data/prices/azure_vms.csv

The file's spot is kept as it is (for some sizes, e.g. ND H200 v5, it equals pay-as-you-go; capacity.prices.refresh
prices spot only below on-demand). The pinned file:
https://github.com/anycloud-sh/catalog/blob/PIN/azure/vms.csv (commit "Update catalogs 2026-05-20").
"""

from __future__ import annotations

import csv
import sys

from capacity.prices import gpu_machines
from components.catalog import Cloud

REPOSITORY = "anycloud-sh/catalog"
PIN = "62ff0a987e0c257a89235415d2877812fb1aaf29"
PATH = "azure/vms.csv"
COMMITTED = "2026-05-20"  # the commit's date and message; the file itself carries none
FIELDS = ("machine_type", "region", "pay_as_you_go", "spot", "committed")


def main(path: str) -> None:
    with open(path, newline="") as fh:
        rows = {(r["InstanceType"], r["Region"]): r for r in csv.DictReader(fh)}
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(FIELDS)
    for region, machines in gpu_machines(Cloud.AZURE).items():
        for m in machines:
            row = rows.get((m.name, region))
            if row is None or not row["Price"] or float(row["Price"]) <= 0:
                continue
            out.writerow([m.name, region, row["Price"], row["SpotPrice"], COMMITTED])


if __name__ == "__main__":
    main(sys.argv[1])
