"""Digest AWS on-demand prices from anycloud-sh/catalog's ``aws/vms.csv`` (SkyPilot's AWS catalogue, one row per
instance type and availability zone: ``Price`` the instance's on-demand Linux rate, the same in every zone of a
region) into capacity/data/prices/aws_vms.csv: one row per catalogue GPU machine type and region the catalogue
offers, the file prices, and neither tsaol/aws-gpu digest (digest_aws.py, digest_aws_spot.py) prices on demand.

    python -m capacity.prices.digest_aws_vms vms.csv > capacity/data/prices/aws_vms.csv

The pinned file: https://github.com/anycloud-sh/catalog/blob/PIN/aws/vms.csv. The repository holds one version of
it: committed 2026-04-02 in 69b86f0 ("Bootstrap catalogs with SkyPilot AWS/GCP/Lambda data"), the same blob
(42e7641) through 62ff0a9 of 2026-05-20 (the Azure digest's pin), and the only version the stored copy read for
this digest (at PIN) has. At 5.2 MB it is over the size a repository snapshot carries here, so the committed digest
was made from the file's g5, g6e and p6-b200 rows, read from that stored copy and run through this script; run on
the whole file, the script may add rows for other machine types. Of the rows read, every (machine type, region)
that aws_instances.csv also prices agreed with it to the last digit (170 of 170). The file's ``SpotPrice`` is one zone's
price at an unrecorded moment and is not used.
"""

from __future__ import annotations

import csv
import sys

from capacity.prices import gpu_machines
from components.catalog import Cloud

REPOSITORY = "anycloud-sh/catalog"
PIN = "5134b895047c454c834c6db730af077e06bdbdca"
PATH = "aws/vms.csv"
COMMITTED = "2026-04-02"  # the file's only version, first committed then (see above); it carries no date itself
PRIMARY = "capacity/data/prices/aws_instances.csv"
FIELDS = ("machine_type", "region", "on_demand", "committed")


def on_demand(rows: csv.DictReader) -> dict[tuple[str, str], float]:
    """(instance type, region) -> the on-demand price, refusing a region whose zones disagree."""
    out: dict[tuple[str, str], float] = {}
    for r in rows:
        if not r["Price"]:
            continue
        key, price = (r["InstanceType"], r["Region"]), float(r["Price"])
        if out.setdefault(key, price) != price:
            raise ValueError(f"{PATH}: {key[0]} in {key[1]} has two on-demand prices, {out[key]} and {price}")
    return out


def main(path: str, primary: str = PRIMARY) -> None:
    with open(path, newline="") as fh:
        prices = on_demand(csv.DictReader(fh))
    with open(primary, newline="") as fh:
        priced = {(r["machine_type"], r["region"]) for r in csv.DictReader(fh)}
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(FIELDS)
    for region, machines in gpu_machines(Cloud.AWS).items():
        for m in machines:
            price = prices.get((m.name, region))
            if price and (m.name, region) not in priced:
                out.writerow([m.name, region, price, COMMITTED])


if __name__ == "__main__":
    main(sys.argv[1])
