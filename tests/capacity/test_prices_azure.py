"""The Azure price fetcher against a loopback fake of the Retail Prices API, answering with the documented
response shape (https://learn.microsoft.com/rest/api/cost-management/retail-prices/azure-retail-prices:
``Items``, ``NextPageLink``; reservation items carry ``reservationTerm`` and price the whole term). Prices in
the items are test values (fakes); expected values are hand computed.
"""

from __future__ import annotations

from typing import Any

from loopback import Fake, serve

from capacity.prices import azure
from capacity.quotas import Backoff
from capacity.schema import Option

PATH = "/api/retail/prices"
NO_WAIT = Backoff(sleep=lambda _s: None)


def item(sku: str, region: str, meter: str, price: float, kind: str = "Consumption", term: str | None = None,
         product: str = "Virtual Machines NDsr H100 v5 Series") -> dict[str, Any]:
    out = {"currencyCode": "USD", "tierMinimumUnits": 0.0, "retailPrice": price, "unitPrice": price,
           "armRegionName": region, "location": region, "effectiveStartDate": "2026-11-01T00:00:00Z",
           "meterId": "00000000-0000-0000-0000-000000000000", "meterName": meter, "productId": "DZH318Z0TEST",
           "skuId": "DZH318Z0TEST/0001", "productName": product, "skuName": meter, "serviceName": "Virtual Machines",
           "serviceId": "DZH313Z7MMC8", "serviceFamily": "Compute", "unitOfMeasure": "1 Hour", "type": kind,
           "isPrimaryMeterRegion": True, "armSkuName": sku}
    if term:
        out["reservationTerm"] = term
    return out


def page(items: list[dict[str, Any]], next_link: str | None) -> dict[str, Any]:
    return {"BillingCurrency": "USD", "CustomerEntityId": "Default", "CustomerEntityType": "Retail",
            "Items": items, "NextPageLink": next_link, "Count": len(items)}


def test_pages_throttling_options_and_one_failing_region() -> None:
    h100, h200, a100 = "Standard_ND96isr_H100_v5", "Standard_ND96isr_H200_v5", "Standard_ND96asr_v4"
    fake = Fake()
    with serve(fake):
        next_link = f"{fake.url}{PATH}?api-version=2023-01-01-preview&$skip=1000"
        fake.routes[("GET", PATH)] = [
            (429, {"Error": {"Code": "TooManyRequests"}}),
            (200, page([item(h100, "swedencentral", "ND96isr H100 v5", 80.0),
                        item(h100, "swedencentral", "ND96isr H100 v5 Spot", 20.0),
                        item(h100, "swedencentral", "ND96isr H100 v5", 120.0,
                             product="Virtual Machines NDsr H100 v5 Series Windows"),
                        item(h100, "swedencentral", "ND96isr H100 v5 Low Priority", 10.0)], next_link)),
            (200, page([item(h100, "swedencentral", "ND96isr H100 v5", 490560.0, "Reservation", "1 Year"),
                        item(h100, "swedencentral", "ND96isr H100 v5", 946080.0, "Reservation", "3 Years")], None)),
            (200, page([], None)),  # H200 v5: no prices in this region
            (403, {"Error": {"Code": "Forbidden"}}),  # westus2: refused
        ]
        result = azure.fetch(["swedencentral", "westus2"], backoff=NO_WAIT, endpoint=fake.url + PATH)
    got = {(r.machine_type, r.option): r.usd_per_gpu_hour for r in result.rows}
    assert got == {(h100, Option.ON_DEMAND): 10.0,  # 80 / 8, Linux; Windows and Low Priority skipped
                   (h100, Option.SPOT): 2.5,  # 20 / 8
                   (h100, Option.COMMIT_1Y): 7.0,  # 490560 / 8760 h / 8
                   (h100, Option.COMMIT_3Y): 4.5,  # 946080 / 26280 h / 8
                   (h100, Option.RESERVATION): 10.0}  # a capacity reservation bills the pay-as-you-go rate
    assert next(r for r in result.rows if r.option is Option.RESERVATION).source.startswith("derived: ")
    assert not any(r.machine_type == a100 or r.machine_type == h200 for r in result.rows)
    assert "$skip=1000" in fake.requests[2][1]
    assert "armSkuName+eq+%27Standard_ND96isr_H100_v5%27" in fake.requests[0][1]
    assert len(result.warnings) == 1 and "westus2" in result.warnings[0] and "403" in result.warnings[0]
