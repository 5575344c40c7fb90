"""`gpufleet capacity actuals --focus FILE ...`: load FOCUS exports and report what was bought and what was used.

Exit codes: 0 done; 2 bad input (the message names file, row, column and fix; nothing is kept from the run).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from capacity.csvio import InputError, RowProblem, load_rows
from capacity.schema import CommitmentLine, PlanLine
from capacity.terminal import Format, FormatOpt, JsonOpt, chosen, names, print_table

console = Console()
errors = Console(stderr=True)
SCHEMA = "gpufleet.actuals/v1"


def default_db() -> Path:
    """The user's data directory (XDG_DATA_HOME on Linux, via platformdirs) / gpufleet / actuals.duckdb."""
    import platformdirs

    return platformdirs.user_data_path("gpufleet") / "actuals.duckdb"


def exports(given: list[Path]) -> list[Path]:
    """The files named, a directory standing for every CSV / Parquet export in it (the clouds write parts)."""
    out: list[Path] = []
    for path in given:
        if path.is_dir():
            out += sorted(p for p in path.rglob("*") if p.is_file() and p.name.lower().endswith(
                (".csv", ".csv.gz", ".parquet")))
        else:
            out.append(path)
    return out


def actuals(
    focus: Annotated[list[Path], typer.Option(help="a FOCUS 1.x export (CSV or Parquet), or a directory of them; "
                                                   "repeat for more")],
    plan: Annotated[Path | None, typer.Option(help="a directory `capacity plan` wrote: compare it with the bill "
                                                   "month by month")] = None,
    db: Annotated[Path | None, typer.Option(help="the DuckDB database to load into; default: actuals.duckdb in "
                                                 "the user's data directory")] = None,
    currency: Annotated[str | None, typer.Option(help="the billing currency of exports without a BillingCurrency "
                                                      "column (only USD is reported)")] = None,
    team_tag: Annotated[str, typer.Option(help="the tag whose value names a charge's team")] = "team",
    fmt: FormatOpt = Format.TEXT,
    as_json: JsonOpt = False,
) -> None:
    """What was bought and what was used: commitment and capacity reservation utilisation, GPU spend by team and
    month, and the plan against the bill, from FOCUS cost-and-usage exports. --format json (or --json): the
    gpufleet.actuals/v1 document (docs/actuals.md)."""
    fmt = chosen(fmt, as_json)
    try:
        plan_rows = (load_rows(plan / "plan.csv", PlanLine), load_rows(plan / "commitments.csv", CommitmentLine)
                     ) if plan else None
        con, keys = load_exports(focus, db, currency, team_tag, fmt is Format.TEXT)
    except InputError as err:
        errors.print(err.render(), style="red", highlight=False, markup=False)
        raise typer.Exit(2) from None
    document = report(con, keys, plan_rows)
    if fmt is Format.JSON:
        print(json.dumps(document, indent=1))
        return
    _render(document)


def load_exports(focus: list[Path], db: Path | None, currency: str | None, team_tag: str = "team",
                 shown: bool = True) -> tuple[Any, list[str]]:
    """Load the exports named (files or directories) into the database: (connection, file keys). InputError."""
    from capacity.actuals import load

    files = exports(focus)
    if not files:
        raise InputError([RowProblem(", ".join(map(str, focus)), None, None, None, "holds no CSV or Parquet export.",
                                     "Name the FOCUS export files, or the directory they are in.")])
    if currency is not None and currency != "USD":
        raise InputError([RowProblem("--currency", None, None, currency, "is not USD; gpufleet reports US dollars "
                                     "and does not convert.", "Export the data in USD.")])
    con = load.connect(db or default_db())
    with _progress(shown) as bar:
        task = bar.add_task("loading FOCUS exports", total=len(files))
        return con, load.load(con, files, currency, team_tag, lambda f, n: bar.advance(task))


def _progress(shown: bool) -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=errors, disable=not shown, transient=True)


def report(con: Any, keys: list[str], plan_rows: tuple | None) -> dict[str, Any]:
    from capacity.actuals import focus, queries

    spend = queries.gpu_spend(con, keys)
    versus = queries.plan_vs_bill(spend, queries.plan_months(*plan_rows)) if plan_rows else None
    rows = dict(con.execute("SELECT file, rows FROM files WHERE file IN (SELECT unnest(?))", [keys]).fetchall())
    return {
        "schema": SCHEMA,
        "focus_spec": focus.source(),
        "files": [{"file": k, "rows": rows.get(k, 0)} for k in keys],
        "commitments": [u.model_dump() for u in queries.utilisation(con, keys, "commitment")],
        "capacity_reservations": [u.model_dump() for u in queries.utilisation(con, keys, "reservation")],
        "gpu_spend": [s.model_dump() for s in spend],
        "plan_vs_bill": None if versus is None else versus.model_dump(),
    }


def _pct(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.1%}"


def _render(doc: dict[str, Any]) -> None:
    console.print(f"{sum(f['rows'] for f in doc['files']):,} charge(s) from {len(doc['files'])} FOCUS export(s)")
    for key, title in (("commitments", "Commitments"), ("capacity_reservations", "Capacity reservations")):
        if not doc[key]:
            console.print(f"{title}: none in these exports.")
            continue
        print_table(console, f"{title}: used and unused cost",
                    names("id", "cloud", "used USD#", "unused USD#", "utilisation#"),
                    [(u["id"], u["cloud"] or "unknown", f"{u['used_cost_usd']:,.2f}", f"{u['unused_cost_usd']:,.2f}",
                      _pct(u["utilization"])) for u in doc[key]], title_justify="left")
    if doc["gpu_spend"]:
        print_table(console, "GPU spend by team and month", names("month", "team", "cloud", "gpu", "USD#",
                                                                  "GPU-hours#"),
                    [(s["month"], s["team"], s["cloud"] or "unknown", s["gpu"], f"{s['usd']:,.2f}",
                      "unknown" if s["gpu_hours"] is None else f"{s['gpu_hours']:,.1f}") for s in doc["gpu_spend"]],
                    title_justify="left")
    else:
        console.print("GPU spend: no charge names a catalogue GPU machine type.")
    versus = doc["plan_vs_bill"]
    if versus:
        print_table(console, f"Plan vs bill: WAPE {_pct(versus['wape'])} over {versus['months_compared']} month(s)",
                    names("month", "plan USD#", "billed USD#"),
                    [(m["month"], "-" if m["plan_usd"] is None else f"{m['plan_usd']:,.0f}",
                      "-" if m["billed_usd"] is None else f"{m['billed_usd']:,.0f}") for m in versus["months"]],
                    title_justify="left")


def chargeback(
    focus: Annotated[list[Path], typer.Option(help="FOCUS 1.x exports (files or directories); repeat for more")],
    usage: Annotated[Path, typer.Option(help="Kueue GPU-hours: month, cohort, cluster_queue, flavor, gpu_hours "
                                             "(docs/actuals.md, Chargeback)")],
    out: Annotated[Path, typer.Option(help="the chargeback CSV to write (FOCUS allocation columns)")],
    stacks: Annotated[list[Path] | None, typer.Option(help="stack files or directories; default: stacks/")] = None,
    offers: Annotated[Path | None, typer.Option(help="offers.csv for capacity the bill does not show; default: "
                                                     "the bundled snapshot")] = None,
    db: Annotated[Path | None, typer.Option(help="the DuckDB database; default: the user's data directory")] = None,
    currency: Annotated[str | None, typer.Option(help="billing currency of exports without BillingCurrency")] = None,
    fmt: FormatOpt = Format.TEXT,
) -> None:
    """Chargeback rows per team: Kueue GPU-hours x the effective rate of the pool's capacity, the idle remainder as
    unallocated rows, in FOCUS's allocation columns."""
    from capacity import inputs
    from capacity.actuals import chargeback as cb
    from capacity.csvio import write_rows
    from components.errors import SpecError
    from stacks.config import load_stack_file, stack_paths

    try:
        usage_rows = load_rows(usage, cb.UsageRow)
        fleets = [load_stack_file(f) for f in stack_paths(stacks)]
        offer_rows = inputs.load_offers(offers)
        con, keys = load_exports(focus, db, currency, shown=fmt is Format.TEXT)
        rows = cb.chargeback(con, keys, usage_rows, fleets, offer_rows, str(usage))
    except (InputError, SpecError) as err:
        errors.print(err.render(), style="red", highlight=False, markup=False)
        raise typer.Exit(2) from None
    write_rows(out, cb.COLUMNS, [{k: "" if v is None else v for k, v in r.items()} for r in rows])  # null: empty
    if fmt is Format.JSON:  # the rows of chargeback.csv, null where the CSV cell is empty
        print(json.dumps({"rows": rows}, indent=1, default=str))
        return
    print_table(console, "Chargeback", names("month", "source", "team", "GPU-hours#", "USD#", "rate from"),
                [(r["ChargePeriodStart"][:7], r["x_GpufleetSource"], r["AllocatedResourceName"] or "(unallocated)",
                  "" if r["ConsumedQuantity"] is None else f"{r['ConsumedQuantity']:,.1f}",
                  "unknown" if r["EffectiveCost"] is None else f"{r['EffectiveCost']:,.2f}", r["x_GpufleetRateSource"])
                 for r in rows], title_justify="left")
    console.print(f"Wrote {len(rows)} row(s) to {out}")
