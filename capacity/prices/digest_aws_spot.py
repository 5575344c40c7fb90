"""Digest AWS GPU spot prices and 3-year Reserved Instance rates from tsaol/aws-gpu's
``data/gpu_instances_raw.json`` (the instances.vantage.sh instance data for GPU instance types, committed
2025-11-30 as "real price data from instances.vantage.sh") into capacity/data/prices/aws_spot_3y.csv: one row per
catalogue GPU machine type and region the catalogue offers where the file has a Linux spot price or a 3-year
Standard Reserved Instance, No Upfront, effective hourly rate (an empty cell when it has only one of them).

    git -C <mirror> show PIN:data/gpu_instances_raw.json > raw.json
    python -m capacity.prices.digest_aws_spot raw.json > capacity/data/prices/aws_spot_3y.csv

The spot figure is ``spot_max``, the dearest availability zone's price when the data was taken, as the live fetcher
(capacity/prices/aws.py) takes the dearest zone. The pinned file:
https://github.com/tsaol/aws-gpu/blob/PIN/data/gpu_instances_raw.json. The newer digest (digest_aws.py) stays the
source of on-demand and 1-year rates: for every offering both files price, their on-demand rates agree.
"""

from __future__ import annotations

import csv
import json
import sys

from capacity.prices import gpu_machines
from components.catalog import Cloud

REPOSITORY = "tsaol/aws-gpu"
PIN = "2d0108c7bd261c8e40493fbd35135437bd6c9099"
PATH = "data/gpu_instances_raw.json"
COMMITTED = "2025-11-30"  # the commit's date; the file itself carries none
FIELDS = ("machine_type", "region", "spot_max", "reserved_3y_no_upfront", "committed")


def main(path: str) -> None:
    with open(path) as fh:
        entries = {e["instance_type"]: e for e in json.load(fh)}
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(FIELDS)
    for region, machines in gpu_machines(Cloud.AWS).items():
        for m in machines:
            linux = entries.get(m.name, {}).get("pricing", {}).get(region, {}).get("linux", {})
            spot = linux.get("spot_max", "")
            three_year = linux.get("reserved", {}).get("yrTerm3Standard.noUpfront", "")
            if spot or three_year:
                out.writerow([m.name, region, spot, three_year, COMMITTED])


if __name__ == "__main__":
    main(sys.argv[1])
