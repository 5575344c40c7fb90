"""Which (offering, option) the bundled snapshot prices, and why the rest are absent.

An offering is a (cloud, region, GPU machine type) of the catalogue (components/data/offerings.csv); it sells the
options capacity.inputs.sold_options says. A pair without a row in capacity/data/offers.csv is a gap, and every
gap carries a reason: the planner's comparison, the finance report and the PR comment leave those options out
(``left_out``), and say so, rather than price them at a guess.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from capacity.prices import gpu_machines
from capacity.schema import OfferRow, Option
from components.catalog import Cloud

LIVE = "the live fetcher (capacity/prices/{cloud}.py, `gpufleet capacity prices` with credentials) reads it"
# (cloud, option) -> why no citable, pinnable public source priced it for the bundled snapshot
AWS_SPOT_3Y = "the pinned AWS spot and 3-year data (tsaol/aws-gpu data/gpu_instances_raw.json, committed 2025-11-30)"
AZURE = "the pinned Azure snapshot (anycloud-sh/catalog azure/vms.csv, committed 2026-05-20)"
REASONS: dict[tuple[str, str], str] = {
    ("aws", "spot"): AWS_SPOT_3Y + " has no spot price below on-demand for this machine type in this region; "
                     + LIVE.format(cloud="aws"),
    ("aws", "capacity_block"): "the pinned Capacity Blocks table (koyakimu/ec2-capacity-blocks-for-ml-pricing-json "
                               "data/pricing.json, scraped 2026-07-22 from the AWS pricing page) has no rate for this "
                               "machine type in this region; " + LIVE.format(cloud="aws"),
    ("aws", "commit_3y"): AWS_SPOT_3Y + " has no 3-year Standard Reserved Instance, No Upfront rate for this "
                          "machine type in this region; " + LIVE.format(cloud="aws") + " (Savings Plans)",
    ("azure", "spot"): AZURE + " gives this size no spot price below pay-as-you-go in this region; "
                       + LIVE.format(cloud="azure"),
    ("azure", "commit_1y"): AZURE + " holds Consumption prices only (pay-as-you-go and spot), no reserved VM "
                            "instance rates; " + LIVE.format(cloud="azure"),
    ("azure", "commit_3y"): AZURE + " holds Consumption prices only (pay-as-you-go and spot), no reserved VM "
                            "instance rates; " + LIVE.format(cloud="azure"),
    ("gcp", "flex_start"): "the pinned GCP digest has no flex-start (Dynamic Workload Scheduler) price; "
                           + LIVE.format(cloud="gcp"),
}
BY_DATASET = {
    "aws": "no pinned AWS dataset (tsaol/aws-gpu data/all_gpu_instances.js, 2026-01-21, and "
           "data/gpu_instances_raw.json, 2025-11-30, both instances.vantage.sh data; anycloud-sh/catalog aws/vms.csv, "
           "SkyPilot's catalogue committed 2026-04-02, on-demand only) prices this option for this machine type in "
           "this region (the catalogue, from moto's offerings, lists it there)",
    "gcp": "the pinned GCP digest (google-cloud-pricing-cost-calculator pricing.yml, 2026-07-30) has no price for "
           "this machine type in this region, and no other citable figure for this option was found (the typed "
           "third-party Catalog API snapshot gives A3 Ultra spot and an on-demand-equivalent, which calendar-mode "
           "reservations are not priced at; SkyPilot-format catalogues price the GPUs apart from the host, and "
           "their per-region GPU rows disagree with pricing.yml by up to 2x, so they are not used)",
    "azure": AZURE + " has no price for this size in this region",
}


@dataclass(frozen=True)
class Gap:
    cloud: str
    region: str
    machine_type: str
    option: str
    reason: str


Key = tuple[str, str, str, str]  # (cloud, region, machine type, option), as OfferRow.key and Prices.offers


def _keys(offers: Iterable[OfferRow | Key]) -> set[Key]:
    return {o.key if isinstance(o, OfferRow) else o for o in offers}


def gaps(offers: Iterable[OfferRow | Key]) -> list[Gap]:
    """Every (offering, sold option) the offers do not price, with its reason."""
    from capacity.inputs import sold_options

    priced = _keys(offers)
    out = []
    for cloud in Cloud:
        for region, machines in gpu_machines(cloud).items():
            for m in machines:
                for option in sold_options(cloud, m.name):
                    if (cloud.value, region, m.name, option.value) not in priced:
                        reason = REASONS.get((cloud.value, option.value), BY_DATASET[cloud.value])
                        out.append(Gap(cloud.value, region, m.name, option.value, reason))
    return out


def priced_share(offers: Iterable[OfferRow | Key]) -> tuple[int, int]:
    """(offerings with at least one priced option, offerings): the catalogue's GPU offerings the snapshot prices."""
    priced = {k[:3] for k in _keys(offers)}
    every = [(c.value, r, m.name) for c in Cloud for r, ms in gpu_machines(c).items() for m in ms]
    return sum(k in priced for k in every), len(every)


def left_out(offers: Iterable[OfferRow | Key], clouds: Iterable[str]) -> list[str]:
    """One line per (cloud, option) some offering of ``clouds`` sells but the snapshot never prices, e.g.
    "AWS spot": what a comparison over these offers leaves out."""
    keys = _keys(offers)
    found = gaps(keys)
    priced_any = {(k[0], k[3]) for k in keys}
    wanted = set(clouds)
    options = sorted({(g.cloud, g.option) for g in found if g.cloud in wanted and (g.cloud, g.option) not in
                      priced_any}, key=lambda k: (k[0], list(Option).index(Option(k[1]))))
    return [f"{Cloud(c).title} {Option(o).value.replace('_', '-')}" for c, o in options]
