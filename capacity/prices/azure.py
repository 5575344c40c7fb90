"""Azure prices from the Retail Prices API (public REST, no credentials), followed page by page.

https://learn.microsoft.com/rest/api/cost-management/retail-prices/azure-retail-prices: ``Items`` of type
Consumption (pay-as-you-go; a meter whose name ends in "Spot" is spot, "Low Priority" is skipped) and
Reservation (``reservationTerm`` "1 Year" / "3 Years"; the price is for the whole term, so it is divided by
the term's hours). Windows meters are skipped. A capacity reservation bills the pay-as-you-go rate of the VM
size whether used or not, so its row is the pay-as-you-go price, labelled derived.
"""

from __future__ import annotations

import datetime as dt
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from capacity.prices import DERIVED, PriceResult, gpu_machines, offer, per_region, today
from capacity.quotas import DEFAULT_BACKOFF, Backoff, with_retries
from capacity.schema import OfferRow, Option
from components.catalog import Cloud, MachineType

ENDPOINT = "https://prices.azure.com/api/retail/prices"
API_VERSION = "2023-01-01-preview"
TIMEOUT_S = 60.0
MAX_PAGES = 100
SOURCE = "Azure Retail Prices API ({endpoint}, {what})"
RESERVATION = (f"{DERIVED}a capacity reservation bills the pay-as-you-go rate of the VM size "
               "(https://learn.microsoft.com/azure/virtual-machines/capacity-reservation-overview); ")
TERMS = {"1 Year": Option.COMMIT_1Y, "3 Years": Option.COMMIT_3Y}
Getter = Callable[[str], dict[str, Any]]


class HttpError(Exception):
    def __init__(self, status: int, url: str):
        super().__init__(f"HTTP {status} from {url.split('?')[0]}")
        self.status = status


def http_get(url: str) -> dict[str, Any]:
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
            return json.loads(answer.read().decode())
    except urllib.error.HTTPError as err:
        raise HttpError(err.code, url) from None


def _throttled(err: BaseException) -> bool:
    return isinstance(err, HttpError) and (err.status == 429 or err.status >= 500)


def items(region: str, sku: str, get: Getter, backoff: Backoff, endpoint: str = ENDPOINT) -> list[dict[str, Any]]:
    query = (f"serviceName eq 'Virtual Machines' and armRegionName eq '{region}' and armSkuName eq '{sku}' "
             "and currencyCode eq 'USD'")
    url: str | None = f"{endpoint}?{urllib.parse.urlencode({'api-version': API_VERSION, '$filter': query})}"
    out: list[dict[str, Any]] = []
    for _ in range(MAX_PAGES):
        if not url:
            return out
        page = with_retries(lambda u=url: get(u), _throttled, backoff)
        out.extend(page.get("Items", []))
        url = page.get("NextPageLink")
    raise RuntimeError(f"more than {MAX_PAGES} pages for {sku} in {region}")


def option_of(item: dict[str, Any]) -> Option | None:
    if "windows" in item.get("productName", "").lower() or item.get("unitOfMeasure") != "1 Hour":
        return None
    meter = item.get("meterName", "")
    if item.get("type") == "Reservation":
        return TERMS.get(item.get("reservationTerm", ""))
    if item.get("type") != "Consumption" or meter.endswith("Low Priority"):
        return None
    return Option.SPOT if meter.endswith("Spot") else Option.ON_DEMAND


def rows_for(machine: MachineType, region: str, found: list[dict[str, Any]], as_of: str,
             endpoint: str = ENDPOINT) -> list[OfferRow]:
    best: dict[Option, dict[str, Any]] = {}
    for item in found:
        option = option_of(item)
        if option is not None and item.get("armSkuName") == machine.name and float(item["retailPrice"]) > 0 \
                and (option not in best or float(item["retailPrice"]) < float(best[option]["retailPrice"])):
            best[option] = item
    rows = []
    for option, item in best.items():
        usd = float(item["retailPrice"]) / (option.term_hours if option.is_commit else 1)
        what = f"{item.get('meterName')}, {item['type']}" + (f" {item['reservationTerm']} / {option.term_hours} h"
                                                             if option.is_commit else "")
        rows.append(offer(machine, region, option, usd, SOURCE.format(endpoint=endpoint, what=what), as_of))
    if Option.ON_DEMAND in best:
        item = best[Option.ON_DEMAND]
        rows.append(offer(machine, region, Option.RESERVATION, float(item["retailPrice"]),
                          RESERVATION + SOURCE.format(endpoint=endpoint, what=f"{item.get('meterName')}, Consumption"),
                          as_of))
    return rows


def fetch(regions: list[str] | None = None, get: Getter = http_get, backoff: Backoff = DEFAULT_BACKOFF,
          endpoint: str = ENDPOINT, now: dt.datetime | None = None) -> PriceResult:
    as_of = now.date().isoformat() if now else today()

    def one(region: str, machines: list[MachineType]) -> list[OfferRow]:
        return [row for m in machines for row in rows_for(m, region, items(region, m.name, get, backoff, endpoint),
                                                          as_of, endpoint)]

    return per_region(Cloud.AZURE, gpu_machines(Cloud.AZURE, regions), one)
