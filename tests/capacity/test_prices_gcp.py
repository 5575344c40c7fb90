"""The GCP price fetcher: the real google-cloud-billing CloudCatalogClient (REST transport, anonymous
credentials) against a loopback fake of the Cloud Billing Catalog API ``services.skus.list``, answering with
the documented Sku / ListSkusResponse JSON shapes
(https://cloud.google.com/billing/docs/reference/rest/v1/services.skus/list). SKU descriptions follow the
catalog's spellings; the prices in them are test values (fakes), and expected values are hand computed.
"""

from __future__ import annotations

import csv
from typing import Any

from google.auth.credentials import AnonymousCredentials
from google.cloud import billing_v1
from loopback import Fake, serve

from capacity.prices import gcp
from capacity.prices.refresh import DATA
from capacity.quotas import Backoff
from capacity.schema import Option
from components import catalog
from components.catalog import Cloud

PATH = "/v1/services/6F81-5844-456A/skus"
NO_WAIT = Backoff(sleep=lambda _s: None)


def sku(description: str, usage: str, usd: float, regions: list[str], group: str = "GPU",
        unit: str = "h") -> dict[str, Any]:
    units, nanos = int(usd), round((usd - int(usd)) * 1e9)
    family = "Storage" if group == "LocalSSD" else "Compute"
    return {"name": f"services/6F81-5844-456A/skus/{abs(hash(description)) % 10**4:04d}-TEST-SKU0",
            "skuId": f"{abs(hash(description)) % 10**4:04d}-TEST-SKU0", "description": description,
            "category": {"serviceDisplayName": "Compute Engine", "resourceFamily": family,
                         "resourceGroup": group, "usageType": usage},
            "serviceRegions": regions,
            "pricingInfo": [{"effectiveTime": "2026-11-01T00:00:00Z", "summary": "",
                             "pricingExpression": {"usageUnit": unit, "usageUnitDescription": unit,
                                                   "baseUnit": "s", "baseUnitConversionFactor": 3600,
                                                   "displayQuantity": 1, "tieredRates": [
                                                       {"startUsageAmount": 0, "unitPrice": {
                                                           "currencyCode": "USD", "units": str(units),
                                                           "nanos": nanos}}]},
                             "currencyConversionRate": 1}],
            "serviceProviderName": "Google"}


def client(url: str) -> billing_v1.CloudCatalogClient:
    return billing_v1.CloudCatalogClient(credentials=AnonymousCredentials(), transport="rest",
                                         client_options={"api_endpoint": url})


def test_a4_is_sold_without_an_on_demand_row_and_pages_and_throttling_are_followed() -> None:
    south = ["us-south1"]
    page1 = {"skus": [sku("A4 Nvidia B200 (1 gpu slice) running in Dallas", "OnDemand", 10.0, south),
                      sku("A4 Nvidia B200 (1 gpu slice) attached to Spot Preemptible VMs running in Dallas",
                          "Preemptible", 4.0, south),
                      sku("Nvidia H200 141GB GPU running in Dallas", "OnDemand", 9.0, south)],
             "nextPageToken": "tok2"}
    page2 = {"skus": [sku("DWS Defined Duration A4 Nvidia B200 (1 gpu slice) running in Dallas", "OnDemand", 6.0,
                          south),
                      sku("Commitment v1: A4 Nvidia B200 (1 gpu slice) in Dallas for 1 Year", "Commit1Yr", 7.0,
                          south)]}
    fake = Fake({("GET", PATH): [(200, page1), (429, {"error": {"code": 429, "message": "quota",
                                                                "status": "RESOURCE_EXHAUSTED"}}), (200, page2)]})
    with serve(fake):
        result = gcp.fetch(south, client(fake.url), NO_WAIT)
    got = {(r.machine_type, r.option): r.usd_per_gpu_hour for r in result.rows}
    # A4's slice SKU prices a whole GPU slice: per GPU = the SKU price. Its OnDemand SKU becomes a reservation row.
    assert got == {("a4-highgpu-8g", Option.RESERVATION): 10.0, ("a4-highgpu-8g", Option.SPOT): 4.0,
                   ("a4-highgpu-8g", Option.FLEX_START): 6.0, ("a4-highgpu-8g", Option.COMMIT_1Y): 7.0}
    # a3-ultragpu-8g has its GPU SKU but no A3 Ultra core or RAM SKU: never half-priced
    assert not any(r.machine_type == "a3-ultragpu-8g" for r in result.rows)
    reservation = next(r for r in result.rows if r.option is Option.RESERVATION)
    assert reservation.source.startswith("derived: ")
    assert "pageToken=tok2" in fake.requests[-1][1]
    assert not result.warnings


def test_g2_joins_gpu_core_and_ram_and_a_region_without_skus_is_a_warning() -> None:
    east = ["us-east1"]
    skus = {"skus": [sku("Nvidia L4 GPU running in Americas", "OnDemand", 0.5, east),
                     sku("G2 Instance Core running in Americas", "OnDemand", 0.02, east, "CPU"),
                     sku("G2 Instance Ram running in Americas", "OnDemand", 0.003, east, "RAM"),
                     sku("Nvidia L4 GPU attached to Spot Preemptible VMs running in Americas", "Preemptible", 0.2,
                         east)]}  # spot GPU without spot core/RAM: no spot row
    fake = Fake({("GET", PATH): [(200, skus)]})
    with serve(fake):
        result = gcp.fetch(["us-east1", "europe-west1"], client(fake.url), NO_WAIT)
    got = {(r.machine_type, r.option): r.usd_per_gpu_hour for r in result.rows}
    assert got[("g2-standard-4", Option.ON_DEMAND)] == 0.628  # 1 x 0.5 + 4 x 0.02 + 16 x 0.003
    assert got[("g2-standard-24", Option.ON_DEMAND)] == 0.884  # (2 x 0.5 + 24 x 0.02 + 96 x 0.003) / 2
    assert got[("g2-standard-4", Option.RESERVATION)] == 0.628
    assert ("g2-standard-4", Option.SPOT) not in got
    assert {r.region for r in result.rows} == {"us-east1"}
    assert len(result.warnings) == 1 and "europe-west1" in result.warnings[0]


def test_option_of_reads_each_way_of_buying() -> None:
    assert gcp.option_of("Commitment v1: A3 Cpu in Americas for 3 Years", "Commit3Yr") is Option.COMMIT_3Y
    assert gcp.option_of("Commitment v1: A3 Cpu in Americas for 1 Year", "Commit1Yr") is Option.COMMIT_1Y
    assert gcp.option_of("DWS Calendar Mode Nvidia H100 80GB GPU running in Americas", "OnDemand") \
        is Option.RESERVATION
    assert gcp.option_of("Reserved Nvidia H100 80GB Mega GPU in Americas", "OnDemand") is None
    assert gcp.option_of("Nvidia L4 GPU running in Americas", "OnDemand") is Option.ON_DEMAND


def test_a3_bills_its_bundled_local_ssd_and_is_never_priced_without_it() -> None:
    central = ["us-central1"]
    skus = {"skus": [sku("Nvidia H100 80GB GPU running in Americas", "OnDemand", 10.0, central),
                     sku("A3 Instance Core running in Americas", "OnDemand", 0.03, central, "CPU"),
                     sku("A3 Instance Ram running in Americas", "OnDemand", 0.003, central, "RAM"),
                     sku("SSD backed Local Storage", "OnDemand", 0.08, central, "LocalSSD", "GiBy.mo"),
                     sku("Nvidia H100 80GB GPU attached to Spot Preemptible VMs running in Americas", "Preemptible",
                         4.0, central),
                     sku("Spot Preemptible A3 Instance Core running in Americas", "Preemptible", 0.01, central, "CPU"),
                     sku("Spot Preemptible A3 Instance Ram running in Americas", "Preemptible", 0.001, central,
                         "RAM"),  # no spot Local SSD SKU: no spot row
                     sku("Nvidia L4 GPU running in Americas", "OnDemand", 0.5, central),
                     sku("G2 Instance Core running in Americas", "OnDemand", 0.02, central, "CPU"),
                     sku("G2 Instance Ram running in Americas", "OnDemand", 0.003, central, "RAM")]}
    fake = Fake({("GET", PATH): [(200, skus)]})
    with serve(fake):
        result = gcp.fetch(central, client(fake.url), NO_WAIT)
    got = {(r.machine_type, r.option): r for r in result.rows}
    # a3-highgpu-8g bundles 6,000 GiB of Local SSD (https://cloud.google.com/compute/docs/gpus: "Bundled (6000 GB)"),
    # billed per GiB-month of 730 h: (8 x 10 + 208 x 0.03 + 1872 x 0.003 + 6000 x 0.08 / 730) / 8 GPUs
    on_demand = got[("a3-highgpu-8g", Option.ON_DEMAND)]
    assert on_demand.usd_per_gpu_hour == 11.564192
    assert "6000 GiB Local SSD" in on_demand.source
    assert ("a3-highgpu-8g", Option.SPOT) not in got
    # G2's Local SSD is optional, not bundled: 1 x 0.5 + 4 x 0.02 + 16 x 0.003, the SSD SKU notwithstanding
    assert got[("g2-standard-4", Option.ON_DEMAND)].usd_per_gpu_hour == 0.628


def test_the_bundled_local_ssd_is_what_the_pinned_pricing_yml_prices() -> None:
    # capacity/data/prices/gcp_machines.csv: pricing.yml's `local-ssd` per machine type (empty: none bundled)
    with (DATA / "gcp_machines.csv").open(newline="") as fh:
        digest = {line["machine_type"]: int(line["bundled_local_ssd_gib"] or 0) for line in csv.DictReader(fh)}
    assert digest["a3-highgpu-8g"] == 6000 and digest["g2-standard-96"] == 0
    for name, gib in digest.items():
        machine = catalog.by_name(Cloud.GCP, name)
        assert machine is not None and gcp.bundled_local_ssd_gib(machine) == gib, name
