"""Derive the AWS rows of components/data/offerings.csv from the EC2 offering data moto ships.

AWS maps zone *names* (us-east-1a) to physical zones differently in every account; zone *ids* (use1-az6) are the
same everywhere. moto records `DescribeInstanceTypeOfferings --location-type availability-zone-id` per region
(moto/ec2/resources/instance_type_offerings/availability-zone-id/<region>.json.gz), so the catalogue keys AWS
offerings by zone id. Every AWS machine type of components/data/machine_types.csv gets one row per region that
offers it; GCP and Azure rows are kept as they are. The source (moto version, path, date) is written beside the
data in components/data/offerings_source.json.

    .venv/bin/python scripts/derive_aws_offerings.py          # rewrite the AWS rows
    .venv/bin/python scripts/derive_aws_offerings.py --check  # exit 1 if the file disagrees with moto
"""

from __future__ import annotations

import argparse
import csv
import datetime
import gzip
import io
import json
import sys
from collections import defaultdict
from importlib import metadata, resources
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "components" / "data"
OFFERINGS = DATA / "offerings.csv"
SOURCE = DATA / "offerings_source.json"
MOTO_PATH = "moto/ec2/resources/instance_type_offerings/availability-zone-id"
FIELDS = ["cloud", "machine_type", "region", "zones"]


def moto_offerings() -> dict[str, dict[str, set[str]]]:
    """instance type -> region -> zone ids, from moto's data files."""
    out: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    folder = resources.files("moto").joinpath(*MOTO_PATH.split("/")[1:])
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        region = entry.name.split(".json")[0]
        raw = entry.read_bytes()
        rows = json.loads(gzip.decompress(raw) if entry.name.endswith(".gz") else raw)
        for row in rows:
            out[row["InstanceType"]][region].add(row["Location"])
    return out


def zone_sort_key(zone_id: str) -> tuple[str, int]:
    prefix, _, number = zone_id.rpartition("-az")
    return prefix, int(number) if number.isdigit() else 0


def aws_machine_types() -> list[str]:
    with (DATA / "machine_types.csv").open(newline="") as fh:
        return [row["name"] for row in csv.DictReader(fh) if row["cloud"] == "aws"]


def derived_rows() -> list[dict[str, str]]:
    offered = moto_offerings()
    rows = []
    for machine in aws_machine_types():
        for region in sorted(offered.get(machine, {})):
            zones = sorted(offered[machine][region], key=zone_sort_key)
            rows.append({"cloud": "aws", "machine_type": machine, "region": region, "zones": " ".join(zones)})
    return rows


def render(rows: list[dict[str, str]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 on a difference")
    args = parser.parse_args()
    with OFFERINGS.open(newline="") as fh:
        others = [row for row in csv.DictReader(fh) if row["cloud"] != "aws"]
    text = render(derived_rows() + others)
    if args.check:
        same = OFFERINGS.read_text() == text
        print("offerings.csv agrees with moto" if same else "offerings.csv differs from moto: rerun without --check")
        return 0 if same else 1
    OFFERINGS.write_text(text)
    SOURCE.write_text(json.dumps({"aws": {
        "derived_by": "scripts/derive_aws_offerings.py",
        "source": f"moto {metadata.version('moto')} (https://github.com/getmoto/moto): {MOTO_PATH}/<region>.json.gz",
        "location_type": "availability-zone-id",
        "date": datetime.date.today().isoformat(),
    }}, indent=2) + "\n")
    print(f"wrote {OFFERINGS} and {SOURCE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
