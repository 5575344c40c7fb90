"""AWS prices: the Price List API (on-demand, and capacity reservations, which bill at the rate of the
``UnusedCapacityReservation`` capacity status), Savings Plans offering rates (EC2 Instance Savings Plans, No
Upfront, 1 and 3 years), EC2 spot price history (the current price of every zone; the region's row is the
dearest zone, so a pool in any zone pays at most that) and EC2 Capacity Block offerings (the upfront fee of
the cheapest offering of HOURS_CAPACITY_BLOCK hours, per hour).

Pricing and Savings Plans are global APIs served from us-east-1; EC2 is asked in each region.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterator
from typing import Any

from capacity.prices import PriceResult, gpu_machines, offer, per_region, today
from capacity.quotas import DEFAULT_BACKOFF, Backoff, with_retries
from capacity.quotas.aws import ClientFactory, _throttled, default_clients
from capacity.schema import HOURS_CAPACITY_BLOCK, OfferRow, Option
from components import capabilities
from components.catalog import Cloud, MachineType

PRICE_LIST = "AWS Price List API (pricing.get_products AmazonEC2, {region}, Linux, shared tenancy, {status})"
SAVINGS = "AWS Savings Plans API (describe_savings_plans_offering_rates EC2Instance, No Upfront, {years} year)"
SPOT = "EC2 describe_spot_price_history (Linux/UNIX, latest per zone, dearest of {zones} zone(s))"
BLOCK = "EC2 describe_capacity_block_offerings ({hours} h, cheapest of {count} offering(s): upfront fee / hours)"
CAPACITY_STATUS = {"Used": Option.ON_DEMAND, "UnusedCapacityReservation": Option.RESERVATION}
YEARS = {31536000: Option.COMMIT_1Y, 94608000: Option.COMMIT_3Y}


def pages(call: Callable[..., dict[str, Any]], backoff: Backoff, token_in: str = "NextToken",
          token_out: str = "NextToken", **args: Any) -> Iterator[dict[str, Any]]:
    """Every page of a paginated call, each page retried on throttling."""
    token = None
    while True:
        kwargs = {**args, **({token_in: token} if token else {})}
        page = with_retries(lambda k=kwargs: call(**k), _throttled, backoff)
        yield page
        token = page.get(token_out)
        if not token:
            return


def fetch(regions: list[str] | None = None, clients: ClientFactory = default_clients,
          backoff: Backoff = DEFAULT_BACKOFF, now: dt.datetime | None = None) -> PriceResult:
    as_of = (now.date().isoformat() if now else today())
    pricing, plans = clients("pricing", "us-east-1"), clients("savingsplans", "us-east-1")

    def one(region: str, machines: list[MachineType]) -> list[OfferRow]:
        ec2 = clients("ec2", region)
        rows = list_price_rows(pricing, region, machines, backoff, as_of)
        rows += savings_plan_rows(plans, region, machines, backoff, as_of)
        rows += spot_rows(ec2, region, machines, backoff, as_of, now)
        rows += capacity_block_rows(ec2, region, machines, backoff, as_of)
        return rows

    return per_region(Cloud.AWS, gpu_machines(Cloud.AWS, regions), one)


def list_price_rows(pricing: Any, region: str, machines: list[MachineType], backoff: Backoff,
                 as_of: str) -> list[OfferRow]:
    rows = []
    for m in machines:
        filters = [{"Type": "TERM_MATCH", "Field": field, "Value": value} for field, value in
                   (("instanceType", m.name), ("regionCode", region), ("operatingSystem", "Linux"),
                    ("tenancy", "Shared"), ("preInstalledSw", "NA"), ("licenseModel", "No License required"))]
        for page in pages(pricing.get_products, backoff, ServiceCode="AmazonEC2", Filters=filters):
            for text in page.get("PriceList", []):
                product = json.loads(text)
                status = product["product"]["attributes"].get("capacitystatus")
                option = CAPACITY_STATUS.get(status)
                usd = _on_demand_usd(product)
                if option is not None and usd:
                    rows.append(offer(m, region, option, usd, PRICE_LIST.format(region=region, status=status),
                                      as_of))
    return rows


def _on_demand_usd(product: dict[str, Any]) -> float | None:
    for term in product.get("terms", {}).get("OnDemand", {}).values():
        for dim in term.get("priceDimensions", {}).values():
            if dim.get("unit") == "Hrs" and float(dim["pricePerUnit"].get("USD", 0)) > 0:
                return float(dim["pricePerUnit"]["USD"])
    return None


def savings_plan_rows(plans: Any, region: str, machines: list[MachineType], backoff: Backoff,
                   as_of: str) -> list[OfferRow]:
    by_name = {m.name: m for m in machines}
    filters = [{"name": "region", "values": [region]}, {"name": "instanceType", "values": sorted(by_name)},
               {"name": "productDescription", "values": ["Linux/UNIX"]}, {"name": "tenancy", "values": ["shared"]}]
    rows = []
    for page in pages(plans.describe_savings_plans_offering_rates, backoff, "nextToken", "nextToken",
                      savingsPlanTypes=["EC2Instance"], savingsPlanPaymentOptions=["No Upfront"], products=["EC2"],
                      serviceCodes=["AmazonEC2"], operations=["RunInstances"], filters=filters):
        for hit in page.get("searchResults", []):
            props = {p["name"]: p["value"] for p in hit.get("properties", [])}
            machine = by_name.get(props.get("instanceType", ""))
            option = YEARS.get(int(hit["savingsPlanOffering"].get("durationSeconds", 0)))
            if machine is None or option is None or hit.get("unit") != "Hrs" or float(hit["rate"]) <= 0:
                continue
            years = option.term_months // 12
            rows.append(offer(machine, region, option, float(hit["rate"]), SAVINGS.format(years=years), as_of))
    return rows


def spot_rows(ec2: Any, region: str, machines: list[MachineType], backoff: Backoff, as_of: str,
          now: dt.datetime | None) -> list[OfferRow]:
    latest: dict[tuple[str, str], tuple[Any, float]] = {}  # (type, zone) -> (timestamp, price)
    for page in pages(ec2.describe_spot_price_history, backoff, InstanceTypes=[m.name for m in machines],
                      ProductDescriptions=["Linux/UNIX", "Linux/UNIX (Amazon VPC)"],
                      StartTime=now or dt.datetime.now(dt.UTC)):
        for item in page.get("SpotPriceHistory", []):
            key = (item["InstanceType"], item["AvailabilityZone"])
            stamp = item.get("Timestamp")
            if key not in latest or (stamp is not None and stamp > latest[key][0]):
                latest[key] = (stamp, float(item["SpotPrice"]))
    rows = []
    for m in machines:
        prices = [price for (name, _zone), (_t, price) in latest.items() if name == m.name and price > 0]
        if prices:
            rows.append(offer(m, region, Option.SPOT, max(prices), SPOT.format(zones=len(prices)), as_of))
    return rows


def capacity_block_rows(ec2: Any, region: str, machines: list[MachineType], backoff: Backoff,
                     as_of: str) -> list[OfferRow]:
    prefixes = capabilities.CAPABILITIES[Cloud.AWS].capacity_blocks_for
    rows = []
    for m in machines:
        if not m.name.startswith(prefixes):
            continue
        per_hour = []
        for page in pages(ec2.describe_capacity_block_offerings, backoff, InstanceType=m.name, InstanceCount=1,
                          CapacityDurationHours=HOURS_CAPACITY_BLOCK):
            for o in page.get("CapacityBlockOfferings", []):
                hours, count = o.get("CapacityBlockDurationHours", 0), o.get("InstanceCount", 0)
                if o.get("CurrencyCode", "USD") == "USD" and hours and count and float(o["UpfrontFee"]) > 0:
                    per_hour.append(float(o["UpfrontFee"]) / hours / count)
        if per_hour:
            rows.append(offer(m, region, Option.CAPACITY_BLOCK, min(per_hour),
                              BLOCK.format(hours=HOURS_CAPACITY_BLOCK, count=len(per_hour)), as_of))
    return rows
