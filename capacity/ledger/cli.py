"""`gpufleet capacity ledger`: every GPU capacity commitment the stacks reference, the plan buys, and (with --live,
where credentials exist) the clouds hold. Exit codes: 0 done; 2 bad input."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from capacity.csvio import InputError
from capacity.terminal import Column, Format, FormatOpt, JsonOpt, chosen, names, print_table

console = Console()
errors = Console(stderr=True)


def live_entries(fleets: list[tuple[str, Any]], fetchers: dict[str, Callable[[str], list]] | None = None
                 ) -> tuple[list, list[str]]:
    """Ask each cloud the stacks use (AWS per region, GCP per project, Azure per subscription: the stacks' own
    accounts); a cloud that cannot be asked (no credentials, no access) is a warning, its entries stay offline."""
    from capacity.ledger import aws, azure, gcp

    fetchers = fetchers or {"aws": aws.fetch, "gcp": gcp.fetch, "azure": azure.fetch}
    scopes: set[tuple[str, str]] = set()
    for _stack, fleet in fleets:
        cloud = fleet.cloud.value
        if cloud == "aws":
            scopes |= {("aws", c.spec.region) for c in fleet.clusters}
        elif fleet.spec.account:
            scopes.add((cloud, fleet.spec.account))
        else:  # Azure: the subscription of the capacity reservation groups the pools name
            scopes |= {(cloud, p.spec.capacity.id.split("/")[2]) for c in fleet.clusters for p in c.pools
                       if (p.spec.capacity.id or "").lower().startswith("/subscriptions/")}
    entries, warnings = [], []
    for cloud, scope in sorted(scopes):
        try:
            entries += fetchers[cloud](scope)
        except Exception as err:  # a cloud we cannot ask leaves the others: offline entries, with a warning
            warnings.append(f"{cloud} {scope}: live state not read ({type(err).__name__}: "
                            f"{' '.join(str(err).split())[:160]})")
    return entries, warnings


def ledger(
    stacks: Annotated[list[Path] | None, typer.Option(help="stack files or directories; default: stacks/")] = None,
    plan: Annotated[Path | None, typer.Option(help="a directory `capacity plan` wrote: list its purchases")] = None,
    offers: Annotated[Path | None, typer.Option(help="offers.csv for hourly prices; default: the bundled "
                                                     "snapshot")] = None,
    live: Annotated[bool, typer.Option(help="read each cloud's live state with the credentials at hand (AWS EC2, "
                                            "GCP Compute, Azure Compute)")] = False,
    warn_days: Annotated[int, typer.Option(min=0, help="flag capacity a pool references that ends within this "
                                                      "many days")] = 30,
    fmt: FormatOpt = Format.TEXT,
    as_json: JsonOpt = False,
) -> None:
    """Every GPU capacity commitment of the fleet: capacity blocks, capacity reservations, reservations, committed
    use discounts and the plan's purchases, with who references them and (--live) their state."""
    from capacity import inputs
    from capacity.csvio import load_rows
    from capacity.ledger import checks, merge
    from capacity.ledger import stacks as offline
    from capacity.reconcile import Prices
    from capacity.schema import CommitmentLine
    from components.errors import SpecError
    from stacks.config import load_stack_file, stack_paths

    try:
        fleets = [(p.name.removeprefix("Pulumi.").removesuffix(".yaml"), load_stack_file(p))
                  for p in stack_paths(stacks)]
        prices = Prices(inputs.load_offers(offers))
        planned = offline.from_plan(load_rows(plan / "commitments.csv", CommitmentLine)) if plan else []
    except (InputError, SpecError) as err:
        errors.print(err.render(), style="red", highlight=False, markup=False)
        raise typer.Exit(2) from None
    found, warnings = live_entries(fleets) if live else ([], [])
    for warning in warnings:
        errors.print(f"warning: {warning}", style="yellow", highlight=False, markup=False)
    entries = merge.merge(offline.from_stacks(fleets, prices) + planned, found)
    flags = checks.check(entries, dt.datetime.now(dt.UTC), warn_days)
    if chosen(fmt, as_json) is Format.JSON:  # {"entries": [...], "flags": [...]} (docs/ledger.md)
        print(json.dumps({"entries": [e.model_dump(mode="json") for e in entries],
                          "flags": [f.model_dump(mode="json") for f in flags]}, indent=1))
        return
    rows = [(e.id, e.cloud, e.kind.value, e.zone or e.region or "", e.machine_type or "",
             "unknown" if e.gpus is None else str(e.gpus), "unknown" if e.end is None else e.end.date().isoformat(),
             "unknown" if e.usd_per_hour is None else f"{e.usd_per_hour:,.2f}",
             ", ".join(r.name for r in e.references) or "nothing",
             e.state or "unknown (offline)") for e in entries]
    print_table(console, f"Capacity ledger: {len(entries)} commitment(s)",
                [*names("id", "cloud", "kind", "zone", "machine type", "GPUs#", "end", "$/hour#"),
                 Column("referenced by", prose=True), Column("state")], rows, title_justify="left")
    for f in flags:
        errors.print(f"{f.rule}: {f.message}", style="red" if f.rule == "expired" else "yellow", highlight=False,
                     markup=False)
