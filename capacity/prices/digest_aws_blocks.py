"""Digest AWS Capacity Blocks for ML prices from koyakimu/ec2-capacity-blocks-for-ml-pricing-json's
``data/pricing.json`` (a scheduled scrape of https://aws.amazon.com/ec2/capacityblocks/pricing/, with the time it
was taken in ``metadata.last_updated``) into capacity/data/prices/aws_capacity_blocks.csv: one row per catalogue
GPU machine type and region the catalogue offers and the table prices, with the table's effective instance hourly
rate (the reservation fee per instance-hour; the operating-system fee, billed while instances run, is not in it).

    git -C <mirror> show PIN:data/pricing.json > pricing.json
    python -m capacity.prices.digest_aws_blocks pricing.json > capacity/data/prices/aws_capacity_blocks.csv

AWS updates the table from time to time, and a block is charged the rate in force when it is bought: this is the
table as scraped on the date in each row. The pinned file:
https://github.com/koyakimu/ec2-capacity-blocks-for-ml-pricing-json/blob/PIN/data/pricing.json.
"""

from __future__ import annotations

import csv
import json
import sys

from capacity.prices import gpu_machines
from components.catalog import Cloud

REPOSITORY = "koyakimu/ec2-capacity-blocks-for-ml-pricing-json"
PIN = "b3a54aee92b6ef6b3c50ea6cacbcc03536675c7e"
PATH = "data/pricing.json"
FIELDS = ("machine_type", "region", "usd_per_instance_hour", "scraped")


def main(path: str) -> None:
    with open(path) as fh:
        data = json.load(fh)
    scraped = data["metadata"]["last_updated"][:10]
    rates = {(name, p["region_code"]): p["hourly_rate_usd"]
             for name, entry in data["instance_types"].items() for p in entry["pricing"]}
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(FIELDS)
    for region, machines in gpu_machines(Cloud.AWS).items():
        for m in machines:
            if (m.name, region) in rates:
                out.writerow([m.name, region, rates[m.name, region], scraped])


if __name__ == "__main__":
    main(sys.argv[1])
