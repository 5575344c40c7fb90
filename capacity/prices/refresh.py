"""Rebuild the bundled snapshot capacity/data/offers.csv from the price digests and the typed facts.

    python -m capacity.prices.refresh            # writes capacity/data/offers.csv

Where each row comes from, said in its ``source``:
- AWS: the digest capacity/data/prices/aws_instances.csv (capacity/prices/digest_aws.py, a pinned, dated public
  file): ``on_demand`` and ``commit_1y`` (a 1-year Standard Reserved Instance, No Upfront); and the digest
  capacity/data/prices/aws_spot_3y.csv (digest_aws_spot.py, an older file of the same repository): ``spot`` and
  ``commit_3y`` (a 3-year Standard Reserved Instance, No Upfront); and the digest
  capacity/data/prices/aws_capacity_blocks.csv (digest_aws_blocks.py, a dated scrape of the Capacity Blocks
  pricing page): ``capacity_block``; and, for offerings neither tsaol/aws-gpu file prices, the digest
  capacity/data/prices/aws_vms.csv (digest_aws_vms.py, SkyPilot's AWS catalogue as anycloud-sh/catalog holds it):
  ``on_demand``;
- GCP: the digest capacity/data/prices/gcp_machines.csv (capacity/prices/digest_gcp.py): ``on_demand``, ``spot``,
  ``commit_1y`` / ``commit_3y``; and the few facts typed into capacity/data/prices/typed.json for machine types
  the digest lacks;
- Azure: the digest capacity/data/prices/azure_vms.csv (digest_azure.py, a pinned, dated snapshot of the Retail
  Prices API): ``on_demand`` (pay-as-you-go) and ``spot``.
A spot price is kept only below the on-demand rate of the same offering: at that rate it saves nothing (AWS caps
spot there; the Azure snapshot repeats pay-as-you-go for some sizes), and a spot row would only invite a plan to
trade availability for no saving.
A typed fact says "typed from <page> on <date>"; nothing here is a captured API response, and none is called one.
A row that applies a documented billing rule to a sourced price (a capacity reservation billed at the on-demand
rate) starts with ``derived:`` and cites the rule. The live fetchers (capacity/prices/aws.py, gcp.py, azure.py)
remain the way to refresh from the clouds' APIs with credentials (`gpufleet capacity prices`).
"""

from __future__ import annotations

import csv
import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from capacity.csvio import write_models
from capacity.inputs import DEFAULT_OFFERS
from capacity.prices import (
    DERIVED,
    digest_aws,
    digest_aws_blocks,
    digest_aws_spot,
    digest_aws_vms,
    digest_azure,
    offer,
    sort_rows,
)
from capacity.prices.digest_gcp import PIN as GCP_PIN
from capacity.schema import OfferRow, Option
from components import catalog
from components.catalog import Cloud, MachineType

DATA = Path(__file__).resolve().parents[1] / "data" / "prices"
HOURS_PER_MONTH = 730  # the GCP digest's month (pricing.yml: month = hour x 730)


def typed(fact: dict[str, Any]) -> str:
    return f"typed from {fact['source']} on {fact['as_of']}"


def _machine(cloud: Cloud, name: str) -> MachineType:
    machine = catalog.by_name(cloud, name)
    if machine is None:
        raise ValueError(f"{name}: not a {cloud.title} machine type of the catalogue (components/data/"
                         "machine_types.csv); drop the row or add the machine type")
    return machine


def _digest(name: str) -> Iterator[dict[str, str]]:
    with (DATA / name).open(newline="") as fh:
        yield from csv.DictReader(fh)


def _cite(module: Any, what: str) -> str:
    return f"https://github.com/{module.REPOSITORY}/blob/{module.PIN}/{module.PATH} ({what})"


def _spot_below(on_demand: float | None, spot: str) -> float | None:
    """The spot rate when the file has one below on-demand (see the module's docstring), else None."""
    if not spot or float(spot) <= 0 or (on_demand is not None and float(spot) >= on_demand):
        return None
    return float(spot)


def aws_rows(rule: str) -> list[OfferRow]:
    cite = _cite(digest_aws, "instances.vantage.sh data, from the AWS Price List; digest "
                             "capacity/data/prices/aws_instances.csv")
    later = _cite(digest_aws_spot, f"instances.vantage.sh data committed {digest_aws_spot.COMMITTED}; digest "
                                   "capacity/data/prices/aws_spot_3y.csv")
    skypilot = _cite(digest_aws_vms, f"SkyPilot's AWS catalogue, committed {digest_aws_vms.COMMITTED}; digest "
                                     "capacity/data/prices/aws_vms.csv")
    rows, on_demand = [], {}
    lines = [(line, cite, line["updated"]) for line in _digest("aws_instances.csv")]
    lines += [(line, skypilot, line["committed"]) for line in _digest("aws_vms.csv")]
    for line, source, as_of in lines:
        m, region = _machine(Cloud.AWS, line["machine_type"]), line["region"]
        if (m.name, region) in on_demand:
            raise ValueError(f"{m.name} in {region}: on-demand in two AWS digests; the later one should skip it")
        on_demand[m.name, region] = float(line["on_demand"])
        rows.append(offer(m, region, Option.ON_DEMAND, on_demand[m.name, region], f"{source}: on-demand Linux", as_of))
        rows.append(offer(m, region, Option.RESERVATION, on_demand[m.name, region],
                          f"{DERIVED}{rule} applied to {source}: on-demand Linux", as_of))
        if line.get("reserved_1y_no_upfront"):
            rows.append(offer(m, region, Option.COMMIT_1Y, float(line["reserved_1y_no_upfront"]),
                              f"{cite}: 1-year Standard Reserved Instance, No Upfront", as_of))
    for line in _digest("aws_spot_3y.csv"):
        m, region, as_of = _machine(Cloud.AWS, line["machine_type"]), line["region"], line["committed"]
        spot = _spot_below(on_demand.get((m.name, region)), line["spot_max"])
        if spot is not None:
            rows.append(offer(m, region, Option.SPOT, spot, f"{later}: spot Linux, the dearest zone's", as_of))
        if line["reserved_3y_no_upfront"]:
            rows.append(offer(m, region, Option.COMMIT_3Y, float(line["reserved_3y_no_upfront"]),
                              f"{later}: 3-year Standard Reserved Instance, No Upfront", as_of))
    return rows + aws_block_rows()


def aws_block_rows() -> list[OfferRow]:
    rows = []
    for line in _digest("aws_capacity_blocks.csv"):
        cite = _cite(digest_aws_blocks, f"a scrape of https://aws.amazon.com/ec2/capacityblocks/pricing/ taken "
                                        f"{line['scraped']}; digest capacity/data/prices/aws_capacity_blocks.csv")
        rows.append(offer(_machine(Cloud.AWS, line["machine_type"]), line["region"], Option.CAPACITY_BLOCK,
                          float(line["usd_per_instance_hour"]),
                          f"{cite}: effective instance hourly rate (the reservation fee; not the OS fee)",
                          line["scraped"]))
    return rows


def azure_rows(rule: str) -> list[OfferRow]:
    cite = _cite(digest_azure, f"a third-party snapshot of the Azure Retail Prices API committed "
                               f"{digest_azure.COMMITTED}; digest capacity/data/prices/azure_vms.csv")
    rows = []
    for line in _digest("azure_vms.csv"):
        m, region, as_of = _machine(Cloud.AZURE, line["machine_type"]), line["region"], line["committed"]
        pay_as_you_go = float(line["pay_as_you_go"])
        rows.append(offer(m, region, Option.ON_DEMAND, pay_as_you_go, f"{cite}: pay-as-you-go Linux", as_of))
        rows.append(offer(m, region, Option.RESERVATION, pay_as_you_go,
                          f"{DERIVED}{rule} applied to {cite}: pay-as-you-go Linux", as_of))
        spot = _spot_below(pay_as_you_go, line["spot"])
        if spot is not None:
            rows.append(offer(m, region, Option.SPOT, spot, f"{cite}: Spot", as_of))
    return rows


def gcp_rows(facts: dict[str, Any]) -> list[OfferRow]:
    rows = []
    for line in _digest("gcp_machines.csv"):
        machine = _machine(Cloud.GCP, line["machine_type"])
        as_of = dt.datetime.strptime(line["generated"], "%a %b %d %H:%M:%S %Y").date().isoformat()
        cite = (f"https://github.com/Cyclenerd/google-cloud-pricing-cost-calculator/blob/{GCP_PIN}/pricing.yml "
                f"(a third-party whole-machine price generated {line['generated']} from the Cloud Billing Catalog "
                "API; digest capacity/data/prices/gcp_machines.csv: ")
        for field, option, per in (("hour", Option.ON_DEMAND, 1), ("hour_spot", Option.SPOT, 1),
                                   ("month_1y", Option.COMMIT_1Y, HOURS_PER_MONTH),
                                   ("month_3y", Option.COMMIT_3Y, HOURS_PER_MONTH), ("hour", Option.RESERVATION, 1)):
            if not line[field]:
                continue
            source = cite + field + (f" / {per} h" if per > 1 else "") + ")"
            if option is Option.RESERVATION:
                source = f"{DERIVED}{facts['reservation_rule']} applied to {source}"
            rows.append(offer(machine, line["region"], option, float(line[field]) / per, source, as_of))
    for f in facts["extra"]:  # machine types the digest lacks (Google sells them only reserved, flex-start, spot)
        rows.append(offer(_machine(Cloud.GCP, f["machine_type"]), f["region"], Option(f["option"]),
                          f["usd_per_hour"], typed(f), f["as_of"]))
    return rows


def refresh() -> list[OfferRow]:
    facts = json.loads((DATA / "typed.json").read_text())
    return sort_rows(aws_rows(facts["aws"]["reservation_rule"]) + gcp_rows(facts["gcp"]) +
                     azure_rows(facts["azure"]["reservation_rule"]))


if __name__ == "__main__":
    write_models(DEFAULT_OFFERS, OfferRow, refresh())
    print(f"wrote {DEFAULT_OFFERS}")
