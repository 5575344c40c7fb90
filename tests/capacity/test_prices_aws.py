"""The AWS price fetcher. EC2 spot price history against moto in server mode (moto implements
describe_spot_price_history); the Price List, Savings Plans and Capacity Block calls, which moto does not
implement, through botocore's Stubber (requests and responses checked against the real service models).

Response bodies follow the documented shapes: Price List products
(https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/price-changes.html, one JSON string per product,
``terms.OnDemand.*.priceDimensions.*.pricePerUnit.USD``), Savings Plans offering rates
(https://docs.aws.amazon.com/savingsplans/latest/APIReference/API_DescribeSavingsPlansOfferingRates.html) and
Capacity Block offerings (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CapacityBlockOffering.html).
Prices in them are test values (fakes), except where a literal names its source.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import boto3
from botocore.stub import ANY, Stubber

from capacity.prices import aws
from capacity.quotas import Backoff
from capacity.schema import Option
from components import catalog
from components.catalog import Cloud

CREDS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
NO_WAIT = Backoff(sleep=lambda _s: None)
NOW = dt.datetime(2026, 11, 30, 12, tzinfo=dt.UTC)
BLOCK_HOURS = 840  # the block the fetcher asks for: see the comment in the first test


def product(instance: str, region: str, status: str, usd: str) -> str:
    sku = f"SKU{abs(hash((instance, region, status))) % 10**6}"
    return json.dumps({
        "product": {"productFamily": "Compute Instance", "sku": sku,
                    "attributes": {"instanceType": instance, "regionCode": region, "operatingSystem": "Linux",
                                   "tenancy": "Shared", "capacitystatus": status, "preInstalledSw": "NA"}},
        "serviceCode": "AmazonEC2",
        "terms": {"OnDemand": {f"{sku}.JRTCKXETXF": {
            "offerTermCode": "JRTCKXETXF", "sku": sku, "effectiveDate": "2026-11-01T00:00:00Z",
            "priceDimensions": {f"{sku}.JRTCKXETXF.6YS6EN2CT7": {
                "unit": "Hrs", "pricePerUnit": {"USD": usd}, "description": f"${usd} per {status} instance"}}}}},
    })


def plan_rate(instance: str, region: str, seconds: int, rate: str) -> dict[str, Any]:
    return {"savingsPlanOffering": {"offeringId": "off-1", "paymentOption": "No Upfront", "planType": "EC2Instance",
                                    "durationSeconds": seconds, "currency": "USD", "planDescription": "x"},
            "rate": rate, "unit": "Hrs", "productType": "EC2", "serviceCode": "AmazonEC2",
            "usageType": f"USW1-BoxUsage:{instance}", "operation": "RunInstances",
            "properties": [{"name": "instanceType", "value": instance}, {"name": "region", "value": region},
                           {"name": "productDescription", "value": "Linux/UNIX"},
                           {"name": "tenancy", "value": "shared"}]}


def block(instance: str, zone: str, hours: int, fee: str) -> dict[str, Any]:
    start = dt.datetime(2026, 12, 7, 11, 30, tzinfo=dt.UTC)
    return {"CapacityBlockOfferingId": "cbr-0123456789abcdef0", "InstanceType": instance, "AvailabilityZone": zone,
            "InstanceCount": 1, "StartDate": start, "EndDate": start + dt.timedelta(hours=hours),
            "CapacityBlockDurationHours": hours, "UpfrontFee": fee, "CurrencyCode": "USD", "Tenancy": "default"}


class Clients:
    """Stubbed clients per (service, region), each answering the queue a test gives it."""

    def __init__(self) -> None:
        self.stubbers: dict[tuple[str, str], Stubber] = {}
        self.clients: dict[tuple[str, str], Any] = {}

    def stub(self, service: str, region: str) -> Stubber:
        key = (service, region)
        if key not in self.stubbers:
            self.clients[key] = boto3.client(service, region_name=region, **CREDS)
            self.stubbers[key] = Stubber(self.clients[key])
        return self.stubbers[key]

    def __call__(self, service: str, region: str) -> Any:
        stubber = self.stub(service, region)
        stubber.activate()
        return self.clients[(service, region)]


def test_fetch_reads_every_option_follows_pages_retries_throttling_and_survives_a_failing_region() -> None:
    clients = Clients()
    pricing = clients.stub("pricing", "us-east-1")
    # us-east-1 (asked first: regions go in order): the first call is refused, so that region becomes a warning
    pricing.add_client_error("get_products", service_error_code="AccessDeniedException", http_status_code=403)
    # us-west-1 offers p5.48xlarge and p5en.48xlarge (components/data/offerings.csv): p5 on two pages, with a
    # throttled first try of the second page; p5en priced nowhere
    pricing.add_response("get_products", {"FormatVersion": "aws_v1", "NextToken": "page-2",
                                          "PriceList": [product("p5.48xlarge", "us-west-1", "Used", "60.0")]},
                         {"ServiceCode": "AmazonEC2", "Filters": ANY})
    pricing.add_client_error("get_products", service_error_code="ThrottlingException", http_status_code=400,
                             expected_params={"ServiceCode": "AmazonEC2", "Filters": ANY, "NextToken": "page-2"})
    pricing.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": [
        product("p5.48xlarge", "us-west-1", "UnusedCapacityReservation", "60.0"),
        product("p5.48xlarge", "us-west-1", "AllocatedCapacityReservation", "0.0")]},
        {"ServiceCode": "AmazonEC2", "Filters": ANY, "NextToken": "page-2"})
    pricing.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": []},
                         {"ServiceCode": "AmazonEC2", "Filters": ANY})
    plans = clients.stub("savingsplans", "us-east-1")
    plans.add_response("describe_savings_plans_offering_rates",
                       {"searchResults": [plan_rate("p5.48xlarge", "us-west-1", 31536000, "40.0")],
                        "nextToken": "n2"})
    plans.add_response("describe_savings_plans_offering_rates",
                       {"searchResults": [plan_rate("p5.48xlarge", "us-west-1", 94608000, "24.0")]})
    ec2 = clients.stub("ec2", "us-west-1")
    ec2.add_response("describe_spot_price_history", {"SpotPriceHistory": [
        {"AvailabilityZone": "us-west-1a", "InstanceType": "p5.48xlarge", "ProductDescription": "Linux/UNIX",
         "SpotPrice": "20.0", "Timestamp": NOW - dt.timedelta(hours=5)},
        {"AvailabilityZone": "us-west-1a", "InstanceType": "p5.48xlarge", "ProductDescription": "Linux/UNIX",
         "SpotPrice": "16.0", "Timestamp": NOW - dt.timedelta(hours=1)},
        {"AvailabilityZone": "us-west-1b", "InstanceType": "p5.48xlarge", "ProductDescription": "Linux/UNIX",
         "SpotPrice": "18.0", "Timestamp": NOW - dt.timedelta(hours=2)}]})
    # 840-hour blocks: 35 days x 24 h, the shortest block covering any month (AWS sells 1-day steps up to 14 days,
    # then 7-day steps: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-purchase.html)
    ec2.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": [
        block("p5.48xlarge", "us-west-1a", 816, "32640.0"), block("p5.48xlarge", "us-west-1b", 840, "35280.0")]},
        {"InstanceType": "p5.48xlarge", "InstanceCount": 1, "CapacityDurationHours": BLOCK_HOURS})
    # 840-hour blocks: 35 days x 24 h, the shortest block covering any month (AWS sells 1-day steps up to 14 days,
    # then 7-day steps: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-purchase.html)
    ec2.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": []},
                     {"InstanceType": "p5en.48xlarge", "InstanceCount": 1, "CapacityDurationHours": BLOCK_HOURS})

    result = aws.fetch(["us-west-1", "us-east-1"], clients, NO_WAIT, NOW)

    got = {(r.machine_type, r.option): r.usd_per_gpu_hour for r in result.rows}
    assert got == {  # hand computed: node-hour price / 8 GPUs
        ("p5.48xlarge", Option.ON_DEMAND): 7.5,  # 60 / 8
        ("p5.48xlarge", Option.RESERVATION): 7.5,  # the UnusedCapacityReservation rate; 0-priced Allocated skipped
        ("p5.48xlarge", Option.COMMIT_1Y): 5.0,  # 40 / 8 (second page of plans too)
        ("p5.48xlarge", Option.COMMIT_3Y): 3.0,
        ("p5.48xlarge", Option.SPOT): 2.25,  # latest per zone: a 16, b 18 -> the dearer zone 18 / 8
        ("p5.48xlarge", Option.CAPACITY_BLOCK): 5.0,  # min(32640/816, 35280/840) = min(40, 42) = 40 / 8
    }
    assert all(r.as_of == "2026-11-30" and r.source and r.region == "us-west-1" for r in result.rows)
    assert len(result.warnings) == 1 and "us-east-1" in result.warnings[0]
    assert "AccessDenied" in result.warnings[0]
    for stubber in clients.stubbers.values():
        stubber.assert_no_pending_responses()


def test_throttling_that_never_ends_fails_the_region_after_the_backoff_attempts() -> None:
    clients = Clients()
    pricing = clients.stub("pricing", "us-east-1")
    attempts = 3
    for _ in range(attempts):
        pricing.add_client_error("get_products", service_error_code="ThrottlingException", http_status_code=400)
    waits: list[float] = []
    backoff = Backoff(attempts=attempts, sleep=waits.append, jitter=lambda: 1.0)
    result = aws.fetch(["us-west-1"], clients, backoff, NOW)
    assert result.rows == []
    assert waits == [0.5, 1.0]  # base 0.5 s doubling, full jitter at its maximum; no wait after the last try
    assert "us-west-1" in result.warnings[0] and "Throttling" in result.warnings[0]


def test_spot_history_against_moto_server(moto_url: str) -> None:
    ec2 = boto3.client("ec2", region_name="us-east-1", endpoint_url=moto_url, **CREDS)
    machine = catalog.by_name(Cloud.AWS, "p5.48xlarge")
    rows = aws.spot_rows(ec2, "us-east-1", [machine], NO_WAIT, "2026-11-30", NOW)
    zones = {o["Location"] for o in ec2.describe_instance_type_offerings(
        LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": ["p5.48xlarge"]}])
        ["InstanceTypeOfferings"]}
    assert len(rows) == 1 and rows[0].option is Option.SPOT and rows[0].gpus_per_node == 8
    assert f"dearest of {len(zones)} zone(s)" in rows[0].source
    assert rows[0].usd_per_gpu_hour > 0
