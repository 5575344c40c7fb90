"""GCP prices from the Cloud Billing Catalog API (google-cloud-billing), Compute Engine service.

Google prices a GPU machine by component: GPUs x the GPU SKU + vCPUs x the series' core SKU + GiB x its RAM
SKU + the bundled Local SSD's GiB x the Local SSD SKU (A2 Ultra, A3: Google "bills accelerator-optimized
machine types for their attached GPUs, predefined vCPU, memory, and bundled Local SSD (if applicable)",
https://cloud.google.com/compute/docs/accelerator-optimized-machines), one set of SKUs per way of buying
(A4's "(1 gpu slice)" SKU already covers a whole slice). The way of buying is read from the SKU:
``Commitment v1: ... 1 Year/3 Years`` (committed use), ``Spot Preemptible`` / usage type Preemptible
(spot), ``DWS Defined Duration`` (flex-start), ``DWS Calendar Mode`` (calendar-mode reservation), else
OnDemand. A machine type Google sells only through reservations, flex-start and spot
(components/capabilities.py ``capacity_for``) gets no on_demand row: its OnDemand rate is what a reservation
of it bills, so it becomes a ``reservation`` row, labelled derived.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

from capacity.prices import DERIVED, PriceResult, gpu_machines, offer, per_region, today
from capacity.quotas import DEFAULT_BACKOFF, Backoff, with_retries
from capacity.quotas.gcp import _throttled
from capacity.schema import OfferRow, Option
from components.capabilities import capabilities
from components.catalog import Cloud, MachineType
from components.spec import CapacityType

COMPUTE_ENGINE = "services/6F81-5844-456A"
TIMEOUT_S = 60.0
SOURCE = "GCP Cloud Billing Catalog API (services/6F81-5844-456A skus, {what})"
RESERVATION_NOTE = (DERIVED + "a reservation bills the {option} SKUs of the machine "
                    "(https://cloud.google.com/compute/docs/instances/reservations-overview); ")
# the GPU SKU phrase per catalogue accelerator type (SKU descriptions name the product, not the API id)
GPU_PHRASE = {"nvidia-tesla-a100": "nvidia tesla a100 gpu", "nvidia-a100-80gb": "nvidia tesla a100 80gb gpu",
              "nvidia-h100-80gb": "nvidia h100 80gb gpu", "nvidia-h100-mega-80gb": "nvidia h100 80gb mega gpu",
              "nvidia-h200-141gb": "nvidia h200 141gb gpu", "nvidia-l4": "nvidia l4 gpu",
              "nvidia-b200": "nvidia b200 (1 gpu slice)"}
SERIES_WORD = {"megagpu": "mega", "ultragpu": "ultra"}
# series whose machine types come with Local SSD they are billed for (the catalogue's local_nvme_gib); G2's
# Local SSD is optional, not bundled (pricing.yml's digest lists local-ssd for exactly these, see tests)
BUNDLED_LOCAL_SSD = ("a2-ultragpu-", "a3-", "a4-")
# the Local SSD SKUs (Cyclenerd google-cloud-pricing-cost-calculator build/mapping.csv: "SSD backed Local
# Storage%", "... attached to Spot Preemptible%", "Commitment v1: Local SSD%1 Year / %3 Year%")
LOCAL_SSD_PHRASES = ("ssd backed local storage", "commitment v1: local ssd")
HOURS_PER = {"h": 1, "GiBy.h": 1, "GiBy.mo": 730}  # Google's month is 730 hours


def default_client() -> Any:
    from google.cloud import billing_v1

    return billing_v1.CloudCatalogClient()


def option_of(description: str, usage_type: str) -> Option | None:
    d = description.lower()
    if d.startswith("commitment"):
        return Option.COMMIT_3Y if "3 year" in d else Option.COMMIT_1Y if "1 year" in d else None
    if "dws defined duration" in d or "dws flex start" in d:
        return Option.FLEX_START
    if "dws calendar mode" in d:
        return Option.RESERVATION
    if "preemptible" in d or usage_type == "Preemptible":
        return Option.SPOT
    if d.startswith("reserved") or usage_type != "OnDemand":
        return None  # reservation placeholders and usage types this planner does not buy
    return Option.ON_DEMAND


def _usd_per_hour(sku: Any) -> float | None:
    """The SKU's first-tier unit price per hour (a GiB-month Local SSD price over 730 h); None if unknown."""
    for info in sku.pricing_info[:1]:
        expression = info.pricing_expression
        hours = HOURS_PER.get(expression.usage_unit or "h")
        if expression.tiered_rates and hours:
            price = expression.tiered_rates[0].unit_price
            return (int(price.units) + price.nanos / 1e9) / hours
    return None


def _slice_priced(machine: MachineType) -> bool:
    return "(1 gpu slice)" in GPU_PHRASE.get(machine.accelerator_type or "", "")


def bundled_local_ssd_gib(machine: MachineType) -> int:
    return machine.local_nvme_gib if machine.name.startswith(BUNDLED_LOCAL_SSD) else 0


def billed_local_ssd_gib(machine: MachineType) -> int:
    """The bundled Local SSD priced as its own component (a GPU slice SKU already covers the slice)."""
    return 0 if _slice_priced(machine) else bundled_local_ssd_gib(machine)


def _component(machine: MachineType, description: str) -> str | None:
    """'gpu', 'cpu', 'ram' or 'ssd' when the SKU prices that part of this machine type; None otherwise."""
    d = description.lower()
    phrase = GPU_PHRASE.get(machine.accelerator_type or "")
    if phrase and phrase in d:
        return "gpu"
    if d.startswith(LOCAL_SSD_PHRASES):
        return "ssd" if billed_local_ssd_gib(machine) and "sole tenan" not in d else None
    series, word = machine.name.split("-")[0], SERIES_WORD.get(machine.name.split("-")[1], "")
    if f"{series} " not in d or "gpu" in d:
        return None
    others = [w for w in SERIES_WORD.values() if w != word]
    if (word and word not in d) or any(o in d for o in others):
        return None
    if " core" in d or " cpu" in d:
        return "cpu"
    return "ram" if " ram" in d else None


def machine_prices(machine: MachineType, skus: Iterable[Any]) -> dict[Option, tuple[float, list[str]]]:
    """Option -> (USD per node-hour, the SKU ids used), for every option whose components are all priced."""
    parts: dict[Option, dict[str, tuple[float, str]]] = {}
    word = SERIES_WORD.get(machine.name.split("-")[1], "~")
    # a series' own SKUs ("A3 Mega ...") before the family's plain ones: the first found per part is kept
    for sku in sorted(skus, key=lambda s: word not in s.description.lower()):
        part = _component(machine, sku.description)
        option = option_of(sku.description, sku.category.usage_type)
        usd = _usd_per_hour(sku)
        if part and option and usd is not None and usd > 0:
            parts.setdefault(option, {}).setdefault(part, (usd, sku.sku_id))
    out = {}
    slice_priced, ssd_gib = _slice_priced(machine), billed_local_ssd_gib(machine)
    needed = {"gpu"} if slice_priced else {"gpu", "cpu", "ram"} | ({"ssd"} if ssd_gib else set())
    for option, got in parts.items():
        if not needed <= set(got):
            continue  # never half-priced: every billed component or no row
        total = machine.gpus * got["gpu"][0]
        if not slice_priced:
            total += machine.vcpus * got["cpu"][0] + machine.memory_gib * got["ram"][0]
        if ssd_gib:
            total += ssd_gib * got["ssd"][0]
        out[option] = (total, sorted(sku for part, (_usd_, sku) in got.items() if part in needed))
    return out


def rows_for(machine: MachineType, region: str, skus: list[Any], as_of: str) -> list[OfferRow]:
    prices = machine_prices(machine, skus)
    sold = _sold(machine)
    rows = []
    for option, (usd, ids) in prices.items():
        ssd = billed_local_ssd_gib(machine)
        what = (f"{option.value}: {machine.gpus} GPU + {machine.vcpus} vCPU + {machine.memory_gib} GiB"
                + (f" + {ssd} GiB Local SSD" if ssd else "") + f", SKUs {' '.join(ids)}")
        source = SOURCE.format(what=what)
        if option is Option.ON_DEMAND and CapacityType.ON_DEMAND not in sold:
            option, source = Option.RESERVATION, RESERVATION_NOTE.format(option="OnDemand") + source
        rows.append(offer(machine, region, option, usd, source, as_of))
    have = {r.option for r in rows}
    if Option.RESERVATION not in have and Option.ON_DEMAND in prices:
        usd, ids = prices[Option.ON_DEMAND]
        rows.append(offer(machine, region, Option.RESERVATION, usd, RESERVATION_NOTE.format(option="OnDemand")
                          + SOURCE.format(what=f"on_demand SKUs {' '.join(ids)}"), as_of))
    return rows


def _sold(machine: MachineType) -> frozenset[CapacityType]:
    caps = capabilities(Cloud.GCP)
    for prefix, types in caps.capacity_for.items():
        if machine.name.startswith(prefix):
            return types
    return frozenset(caps.capacity_types)


def list_skus(client: Any, backoff: Backoff) -> list[Any]:
    """Every Compute Engine SKU, page by page (each page retried on throttling)."""
    from google.cloud import billing_v1

    skus: list[Any] = []
    token = ""
    while True:
        request = billing_v1.ListSkusRequest(parent=COMPUTE_ENGINE, page_token=token, currency_code="USD")
        page = with_retries(lambda r=request: next(iter(client.list_skus(request=r, retry=None,
                                                                         timeout=TIMEOUT_S).pages)),
                            _throttled, backoff)
        skus.extend(page.skus)
        token = page.next_page_token
        if not token:
            return skus


def fetch(regions: list[str] | None = None, client: Any = None, backoff: Backoff = DEFAULT_BACKOFF,
          now: dt.datetime | None = None) -> PriceResult:
    as_of = now.date().isoformat() if now else today()
    machines = gpu_machines(Cloud.GCP, regions)
    try:
        skus = list_skus(client or default_client(), backoff)
    except Exception as err:  # the catalogue is one list for every region: without it there is nothing
        text = " ".join(str(err).split())[:200]
        return PriceResult([], [f"GCP: the Cloud Billing Catalog could not be read ({type(err).__name__}: {text}). "
                                "No GCP rows; retry later."])
    by_region: dict[str, list[Any]] = {}
    for sku in skus:
        for region in sku.service_regions:
            by_region.setdefault(region, []).append(sku)

    def one(region: str, types: list[MachineType]) -> list[OfferRow]:
        found = [row for m in types for row in rows_for(m, region, by_region.get(region, []), as_of)]
        if not found:
            raise LookupError(f"no SKU in the catalog prices a catalogue GPU machine type in {region}")
        return found

    return per_region(Cloud.GCP, machines, one)
