"""Load the planner's input files, checking each row against the machine catalogue.

Every loader raises ``InputError`` naming the file, row, column, value, what is allowed and how to fix it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from capacity.csvio import InputError, RowProblem, duplicates, load_rows
from capacity.problem import too_many_rows
from capacity.schema import DemandRow, HistoryRow, OfferRow, Option, QuotaRow
from components import catalog
from components.capabilities import capabilities
from components.catalog import Cloud
from components.errors import did_you_mean
from components.spec import CapacityType

DEFAULT_OFFERS = Path(__file__).parent / "data" / "offers.csv"


def _known_gpu(label: str) -> Callable[[Any, int], Iterable[RowProblem]]:
    """Rows name a GPU product. A family name (A100) is refused, never mapped to a default: a plan must not place
    work that needs 80 GB on 40 GB machines because a row did not say which."""
    known = catalog.gpu_models()
    families = catalog.gpu_families()

    def check(item: Any, line: int) -> Iterable[RowProblem]:
        if item.gpu in known:
            return []
        variants = [p for p in families.get(item.gpu, []) if p in known]
        if variants:
            return [RowProblem(label, line, "gpu", item.gpu, f"is a GPU family, not a product: "
                               f"{' and '.join(variants)} differ in memory and price.",
                               f"Write the product the work needs: {' or '.join(variants)}.")]
        guess = did_you_mean(item.gpu, known)
        hint = f" Did you mean {guess!r}?" if guess else ""
        return [RowProblem(label, line, "gpu", item.gpu, f"is not a catalogue GPU.{hint}",
                           f"Write one of {', '.join(known)}.")]

    return check


def _all(*checks: Callable[[Any, int], Iterable[RowProblem]]) -> Callable[[Any, int], Iterable[RowProblem]]:
    def check(item: Any, line: int) -> Iterable[RowProblem]:
        for one in checks:
            found = list(one(item, line))
            if found:
                return found
        return []

    return check


def _offer_machine(label: str) -> Callable[[OfferRow, int], Iterable[RowProblem]]:
    def check(item: OfferRow, line: int) -> Iterable[RowProblem]:
        machine = catalog.by_name(item.cloud, item.machine_type)
        if machine is None:
            known = catalog.names(item.cloud)
            guess = did_you_mean(item.machine_type, known)
            hint = f" Did you mean {guess!r}?" if guess else ""
            return [RowProblem(label, line, "machine_type", item.machine_type,
                               f"is not a known {item.cloud.title} GPU machine type.{hint}",
                               "Use a machine type from components/data/machine_types.csv, or add it there.")]
        out = []
        if machine.gpu != item.gpu:
            out.append(RowProblem(label, line, "gpu", item.gpu, f"does not match {item.machine_type}, which has "
                                  f"{machine.gpu} GPUs.", f"Write {machine.gpu}."))
        if machine.gpus != item.gpus_per_node:
            out.append(RowProblem(label, line, "gpus_per_node", str(item.gpus_per_node),
                                  f"does not match {item.machine_type}, which has {machine.gpus} GPUs.",
                                  f"Write {machine.gpus}."))
        return out

    return check


CAPACITY_OF = {Option.ON_DEMAND: CapacityType.ON_DEMAND, Option.SPOT: CapacityType.SPOT,
               Option.RESERVATION: CapacityType.RESERVATION, Option.CAPACITY_BLOCK: CapacityType.CAPACITY_BLOCK,
               Option.FLEX_START: CapacityType.FLEX_START}


def sold_options(cloud: Cloud, machine_type: str) -> list[Option]:
    """The purchase options a cloud sells for a machine type, from its declared capabilities
    (components/capabilities.py): commitments discount on-demand or reserved use, so they go with those."""
    caps = capabilities(cloud)
    types = set(caps.capacity_types)
    for prefix, only in caps.capacity_for.items():
        if machine_type.startswith(prefix):
            types &= set(only)
    if CapacityType.CAPACITY_BLOCK in types and not machine_type.startswith(caps.capacity_blocks_for):
        types.discard(CapacityType.CAPACITY_BLOCK)
    out = [o for o, t in CAPACITY_OF.items() if t in types]
    if types & {CapacityType.ON_DEMAND, CapacityType.RESERVATION}:
        out += [Option.COMMIT_1Y, Option.COMMIT_3Y]
    return [o for o in Option if o in out]


def _refused_or_dropped(problem: RowProblem, key: tuple[str, str, str, str], warn: list[str] | None,
                        dropped: set[tuple[str, str, str, str]]) -> list[RowProblem]:
    """Refused, the fix naming --skip-unoffered; with ``warn`` (the flag given) dropped and described there."""
    if warn is None:
        return [replace(problem, fix=problem.fix.removesuffix(".") +
                        ", or pass --skip-unoffered to drop such rows with a warning.")]
    warn.append(f"{problem.render()} Dropped.")
    dropped.add(key)
    return []


def _offer_sold(label: str, warn: list[str] | None,
                dropped: set[tuple[str, str, str, str]]) -> Callable[[OfferRow, int], Iterable[RowProblem]]:
    """An offer the catalogue does not offer in that region, or an option the cloud does not sell for that
    machine type, is refused; with ``warn`` given (a list), region mismatches are dropped and listed instead."""

    def check(item: OfferRow, line: int) -> Iterable[RowProblem]:
        sold = sold_options(item.cloud, item.machine_type)
        if item.option not in sold:
            return [RowProblem(label, line, "option", item.option.value,
                               f"is not sold for {item.cloud.title} {item.machine_type} (components/capabilities.py).",
                               f"Use one of {', '.join(o.value for o in sold)}, or delete the row.")]
        regions = sorted(catalog.regions(item.cloud, item.machine_type))
        if item.region in regions:
            return []
        return _refused_or_dropped(RowProblem(
            label, line, "region", item.region,
            f"does not offer {item.machine_type} (components/data/offerings.csv offers it in "
            f"{', '.join(regions) or 'no region'}).",
            "Delete the row, add the offering to components/data/offerings.csv if the cloud sells it there."),
            item.key, warn, dropped)

    return check


def load_demand(path: Path) -> list[DemandRow]:
    label = str(path)
    try:  # refused before parsing: a line count is cheap, a million parsed rows are not
        error = too_many_rows(path.read_bytes().count(b"\n") - 1, label) if path.is_file() else None
    except OSError:
        error = None  # load_rows says what is wrong with the file
    if error is not None:
        raise error
    rows = load_rows(path, DemandRow, label,
                     _all(_known_gpu(label), duplicates(label, "month, team, gpu, gang_gpus, spot_ok")))
    if not rows:
        raise InputError([RowProblem(label, None, None, None, "has no demand rows.",
                                     "Add at least one row: month,team,gpu,gpu_hours,gang_gpus,spot_ok.")])
    return rows


def load_history(path: Path) -> list[HistoryRow]:
    label = str(path)
    rows = load_rows(path, HistoryRow, label, _known_gpu(label))
    if not rows:
        raise InputError([RowProblem(label, None, None, None, "has no history rows.",
                                     "Add rows: month,team,gpu,gpu_hours.")])
    return rows


def load_offers(path: Path | None = None, warn: list[str] | None = None) -> list[OfferRow]:
    """offers.csv, or the bundled snapshot of public list prices when no path is given. Every row must be an
    offering of the catalogue and an option its cloud sells; with ``warn`` (a list) rows in a region the
    catalogue does not offer are dropped and described there instead of refused."""
    path = path or DEFAULT_OFFERS
    label = str(path)
    dropped: set[tuple[str, str, str, str]] = set()
    rows = load_rows(path, OfferRow, label,
                     _all(_known_gpu(label), _offer_machine(label), _offer_sold(label, warn, dropped),
                          duplicates(label, "cloud, region, machine_type, option")))
    rows = [r for r in rows if r.key not in dropped]
    if not rows:
        raise InputError([RowProblem(label, None, None, None, "has no offers.",
                                     f"Add offers, or leave --offers out to use {DEFAULT_OFFERS.name}.")])
    return rows


def cloud_regions(cloud: Cloud) -> list[str]:
    """The regions the catalogue knows for a cloud: every region where components/data/offerings.csv offers one
    of its GPU machine types."""
    return sorted({r for (c, _), regions in catalog.offerings().items() if c is cloud for r in regions})


def _quota_region(label: str, warn: list[str] | None,
                  dropped: set[tuple[str, str, str, str]]) -> Callable[[QuotaRow, int], Iterable[RowProblem]]:
    """A quota in a region the cloud does not have (``us-east1`` on AWS) is a typo or a row of another cloud:
    planned as written it would be a site nothing can use, and the quota meant for the real region would be 0."""

    def check(item: QuotaRow, line: int) -> Iterable[RowProblem]:
        known = cloud_regions(item.cloud)
        if item.region in known:
            return []
        guess = did_you_mean(item.region, known)
        other = [c.title for c in Cloud if c is not item.cloud and item.region in cloud_regions(c)]
        hint = (f" Did you mean {guess!r}?" if guess else "") + (f" {item.region!r} is a {other[0]} region."
                                                                 if other else "")
        return _refused_or_dropped(RowProblem(
            label, line, "region", item.region,
            f"is not one of {item.cloud.title}'s regions with GPU offerings (components/data/offerings.csv).{hint}",
            f"Write one of {', '.join(known)}."), item.key, warn, dropped)

    return check


def load_quotas(path: Path, warn: list[str] | None = None) -> list[QuotaRow]:
    """quotas.csv. A region the cloud does not have is refused; with ``warn`` (a list) such rows are dropped
    and described there instead."""
    label = str(path)
    dropped: set[tuple[str, str, str, str]] = set()
    rows = load_rows(path, QuotaRow, label, _all(_known_gpu(label), _quota_region(label, warn, dropped),
                                                 duplicates(label, "cloud, region, gpu, market")))
    return [r for r in rows if r.key not in dropped]


def clouds_of(offers: Iterable[OfferRow]) -> list[Cloud]:
    return sorted({o.cloud for o in offers}, key=lambda c: c.value)
