"""Digest GCP machine prices from google-cloud-pricing-cost-calculator's ``pricing.yml`` (generated from the
Cloud Billing Catalog API) into capacity/data/prices/gcp_machines.csv: one row per catalogue machine type
and region the catalogue offers, for the machine types in MACHINES, with the machine type's bundled Local SSD
(pricing.yml ``local-ssd``, GiB; empty when none is bundled), which its prices include.

    python -m capacity.prices.digest_gcp PATH/TO/pricing.yml > capacity/data/prices/gcp_machines.csv

The pinned file: https://github.com/Cyclenerd/google-cloud-pricing-cost-calculator/blob/PIN/pricing.yml.
"""

from __future__ import annotations

import csv
import sys

import yaml

from capacity.prices import gpu_machines
from components.catalog import Cloud

PIN = "fd66b26ff84fee5cdd94f341ea89206e76c06b99"
MACHINES = ("a2-highgpu-8g", "a2-ultragpu-8g", "a3-highgpu-8g", "a3-megagpu-8g", "g2-standard-4", "g2-standard-8",
            "g2-standard-12", "g2-standard-16", "g2-standard-24", "g2-standard-32", "g2-standard-48", "g2-standard-96")
FIELDS = ("hour", "hour_spot", "month_1y", "month_3y")


def main(path: str) -> None:
    with open(path) as fh:
        data = yaml.safe_load(fh)
    instances = data["compute"]["instance"]
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["machine_type", "region", *FIELDS, "bundled_local_ssd_gib", "generated"])
    for region, machines in gpu_machines(Cloud.GCP).items():
        for m in machines:
            instance = instances.get(m.name, {}) if m.name in MACHINES else {}
            cost = instance.get("cost", {}).get(region)
            if cost:
                out.writerow([m.name, region, *(cost.get(f, "") for f in FIELDS), instance.get("local-ssd", ""),
                              data["about"]["generated"]])


if __name__ == "__main__":
    main(sys.argv[1])
