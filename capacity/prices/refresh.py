"""Rebuild the bundled snapshot capacity/data/offers.csv from recorded answers, through the fetchers' own code.

    python -m capacity.prices.refresh            # writes capacity/data/offers.csv

capacity/data/recorded/answers.json holds price facts read from cited pages; here they are served in each
API's documented response shape to the real fetchers: AWS through fake clients that check every request and
answer against botocore's service models (as botocore's Stubber does), Azure through a fake of the Retail
Prices pages. Each row keeps the recorded page as its source and the day it was read as ``as_of``; a row that
applies a billing rule to a sourced price (a reservation billed at the on-demand rate) says ``derived:``.
GCP prices a machine from component SKUs, and no source we can cite lists those, so GCP rows come from the
digest of machine prices (capacity/prices/digest_gcp.py) instead of the fetcher: each says ``derived:`` (a
third-party whole-machine price, not fetched through capacity/prices/gcp.py) and names the file.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import re
import urllib.parse
from pathlib import Path
from typing import Any

from capacity.csvio import write_models
from capacity.inputs import DEFAULT_OFFERS
from capacity.prices import DERIVED, aws, azure, offer, sort_rows
from capacity.prices.digest_gcp import PIN
from capacity.quotas import Backoff
from capacity.schema import OfferRow, Option
from components import catalog
from components.catalog import Cloud

RECORDED = Path(__file__).resolve().parents[1] / "data" / "recorded"
HOURS_PER_MONTH = 730  # the digest's month (pricing.yml: month = hour x 730)
DIGEST = ("the whole-machine price from a third-party digest, not through the GCP fetcher "
          "(no citable source lists the component SKUs): ")
NO_WAIT = Backoff(attempts=1)


class AwsReplay:
    """A ClientFactory whose clients answer from the recorded facts, checked against the service models."""

    def __init__(self, facts: dict[str, Any]):
        self.facts = facts

    def __call__(self, service: str, region: str) -> Any:
        return _AwsClient(service, region, self.facts)


class _AwsClient:
    def __init__(self, service: str, region: str, facts: dict[str, Any]):
        import botocore.session

        self.model = botocore.session.get_session().get_service_model(service)
        self.region, self.facts = region, facts

    def __getattr__(self, method: str) -> Any:
        from botocore.validate import ParamValidator, validate_parameters

        operation = self.model.operation_model("".join(w.title() for w in method.split("_")))

        def call(**params: Any) -> dict[str, Any]:
            validate_parameters(params, operation.input_shape)
            answer = getattr(self, "_" + method)(params)
            report = ParamValidator().validate(answer, operation.output_shape)
            if report.has_errors():
                raise ValueError(report.generate_report())
            return answer

        return call

    def _get_products(self, params: dict[str, Any]) -> dict[str, Any]:
        wanted = {f["Field"]: f["Value"] for f in params["Filters"]}
        found = [f for f in self.facts["on_demand"]
                 if (f["region"], f["instance_type"]) == (wanted["regionCode"], wanted["instanceType"])]
        return {"FormatVersion": "aws_v1", "PriceList": [_product(f, status) for f in found
                                                         for status in ("Used", "UnusedCapacityReservation")]}

    def _describe_savings_plans_offering_rates(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"searchResults": []}  # no Savings Plans rate with a citable source

    def _describe_spot_price_history(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"SpotPriceHistory": []}  # no spot price with a citable source

    def _describe_capacity_block_offerings(self, params: dict[str, Any]) -> dict[str, Any]:
        hours = params["CapacityDurationHours"]
        return {"CapacityBlockOfferings": [
            {"InstanceType": f["instance_type"], "AvailabilityZone": f"{self.region}a", "InstanceCount": 1,
             "CapacityBlockDurationHours": hours, "UpfrontFee": f"{f['usd_per_instance_hour'] * hours:.2f}",
             "CurrencyCode": "USD", "Tenancy": "default"}
            for f in self.facts["capacity_blocks"]
            if (f["region"], f["instance_type"]) == (self.region, params["InstanceType"])]}


def _product(fact: dict[str, Any], status: str) -> str:
    """One Price List product in the documented JSON shape (terms.OnDemand.*.priceDimensions.*)."""
    sku = f"REC{abs(hash((fact['region'], fact['instance_type'], status))) % 10**8:08d}"
    return json.dumps({"product": {"sku": sku, "productFamily": "Compute Instance", "attributes": {
        "instanceType": fact["instance_type"], "regionCode": fact["region"], "operatingSystem": "Linux",
        "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": status}},
        "terms": {"OnDemand": {f"{sku}.JRTCKXETXF": {"priceDimensions": {f"{sku}.JRTCKXETXF.6YS6EN2CT7": {
            "unit": "Hrs", "pricePerUnit": {"USD": str(fact["usd_per_hour"])}}}}}}})


def _azure_pages(facts: dict[str, Any]) -> Any:
    def get(url: str) -> dict[str, Any]:
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["$filter"][0]
        region, sku = (re.search(f"{field} eq '([^']+)'", query).group(1)  # type: ignore[union-attr]
                       for field in ("armRegionName", "armSkuName"))
        items = [{"currencyCode": "USD", "retailPrice": f["usd_per_hour"], "unitPrice": f["usd_per_hour"],
                  "armRegionName": f["region"], "meterName": f["meter"], "productName": "Virtual Machines",
                  "serviceName": "Virtual Machines", "unitOfMeasure": "1 Hour", "type": "Consumption",
                  "armSkuName": f["arm_sku"]}
                 for f in facts["pay_as_you_go"] if (f["region"], f["arm_sku"]) == (region, sku)]
        return {"BillingCurrency": "USD", "Items": items, "NextPageLink": None, "Count": len(items)}

    return get


def _provenance(rows: list[OfferRow], facts: list[dict[str, Any]], machine_key: str, rule: str) -> list[OfferRow]:
    """Give each fetched row its recorded page and date; the reservation row says which rule derived it."""
    by = {(f["region"], f[machine_key]): f for f in facts}
    out = []
    for r in rows:
        fact = by[(r.region, r.machine_type)]
        source = f"{fact['source']}; replayed as the API answer: {r.source}"
        if r.option is Option.RESERVATION:
            source = f"{DERIVED}{rule} applied to {source}"
        out.append(r.model_copy(update={"source": source, "as_of": fact["as_of"]}))
    return out


def gcp_rows(facts: dict[str, Any]) -> list[OfferRow]:
    rows = []
    with (RECORDED / facts["machines"]).open(newline="") as fh:
        for line in csv.DictReader(fh):
            machine = catalog.by_name(Cloud.GCP, line["machine_type"])
            assert machine is not None, line
            as_of = dt.datetime.strptime(line["generated"], "%a %b %d %H:%M:%S %Y").date().isoformat()
            cite = (f"https://github.com/Cyclenerd/google-cloud-pricing-cost-calculator/blob/{PIN}/pricing.yml "
                    f"(generated {line['generated']} from the Cloud Billing Catalog API: ")
            for field, option, per in (("hour", Option.ON_DEMAND, 1), ("hour_spot", Option.SPOT, 1),
                                       ("month_1y", Option.COMMIT_1Y, HOURS_PER_MONTH),
                                       ("month_3y", Option.COMMIT_3Y, HOURS_PER_MONTH),
                                       ("hour", Option.RESERVATION, 1)):
                if not line[field]:
                    continue
                source = DIGEST + cite + field + (f" / {per} h" if per > 1 else "") + f" / {machine.gpus} GPUs)"
                source = (f"{DERIVED}{facts['reservation_rule']} applied to {source}"
                          if option is Option.RESERVATION else DERIVED + source)
                rows.append(offer(machine, line["region"], option, float(line[field]) / per, source, as_of))
    for f in facts["extra"]:  # machine types the digest lacks (Google sells them only reserved, flex-start, spot)
        machine = catalog.by_name(Cloud.GCP, f["machine_type"])
        assert machine is not None, f
        option = Option(f["option"])
        source = f["source"] if option is not Option.RESERVATION else \
            f"{DERIVED}{facts['reservation_rule']} applied to {f['source']}"
        rows.append(offer(machine, f["region"], option, f["usd_per_hour"], source, f["as_of"]))
    return rows


def refresh() -> list[OfferRow]:
    answers = json.loads((RECORDED / "answers.json").read_text())
    facts = answers["aws"]
    regions = sorted({f["region"] for f in facts["on_demand"] + facts["capacity_blocks"]})
    fetched = aws.fetch(regions, AwsReplay(facts), NO_WAIT)
    rows = _provenance([r for r in fetched.rows if r.option is not Option.CAPACITY_BLOCK], facts["on_demand"],
                       "instance_type", facts["reservation_rule"])
    rows += _provenance([r for r in fetched.rows if r.option is Option.CAPACITY_BLOCK], facts["capacity_blocks"],
                        "instance_type", "")
    facts = answers["azure"]
    fetched_az = azure.fetch(sorted({f["region"] for f in facts["pay_as_you_go"]}), _azure_pages(facts), NO_WAIT)
    rows += _provenance(fetched_az.rows, facts["pay_as_you_go"], "arm_sku", facts["reservation_rule"])
    problems = fetched.warnings + fetched_az.warnings
    if problems:
        raise RuntimeError("; ".join(problems))
    return sort_rows(rows + gcp_rows(answers["gcp"]))


if __name__ == "__main__":
    write_models(DEFAULT_OFFERS, OfferRow, refresh())
    print(f"wrote {DEFAULT_OFFERS}")
