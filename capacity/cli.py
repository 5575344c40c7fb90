"""`gpufleet capacity ...`: forecast demand, fetch quotas, plan, and reconcile the plan with the stacks.

Exit codes: 0 done; 1 the run finished but something needs attention (the independent check found a
violation, or every quota fetch failed); 2 bad input (the message names file, row, column and fix).
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from capacity import example, inputs
from capacity.actuals import cli as actuals_cli
from capacity.csvio import InputError, load_rows, write_models
from capacity.ledger import cli as ledger_cli
from capacity.problem import DEFAULT_GAP as GAP
from capacity.problem import DEFAULT_PENALTY_USD_PER_GPU_HOUR as PENALTY
from capacity.problem import DEFAULT_STAY_THRESHOLD as STAY_THRESHOLD
from capacity.problem import DEFAULT_TIME_LIMIT_S
from capacity.quotas import FetchResult
from capacity.reconcile import ReconcileRow
from capacity.schema import CommitmentLine, HeldRow, PlanLine, QuotaRow, ShortfallLine
from capacity.staleness import STALE_AFTER_DAYS
from capacity.terminal import Column, Format, FormatOpt, print_table
from components.catalog import Cloud
from components.errors import SpecError

app = typer.Typer(help="Capacity planning: demand forecasts, live quotas, an optimal multi-cloud plan, and "
                  "its reconciliation with the stacks.", no_args_is_help=True)
console = Console()
errors = Console(stderr=True)
app.command("actuals")(actuals_cli.actuals)
app.command("example")(example.command)
app.command("chargeback")(actuals_cli.chargeback)
app.command("ledger")(ledger_cli.ledger)


class Quantile(StrEnum):
    P50 = "P50"
    P80 = "P80"
    P90 = "P90"


SkipUnoffered = Annotated[bool, typer.Option(help="drop offers in a region the catalogue does not offer that machine "
                                                 "type in, and quotas in a region the cloud does not have "
                                                 "(components/data/offerings.csv), with a warning, instead of "
                                                 "refusing the file")]


LedgerOpt = Annotated[Path | None, typer.Option(
    "--ledger", help="a recorded `capacity ledger --live --format json`: the capacity blocks and reservations the "
                     "fleet holds are used first, at sunk cost, within their term (docs/capacity.md, Held "
                     "capacity)")]
StaleAfter = Annotated[int, typer.Option(min=1, help="warn when the oldest price is older than this many days")]
StayThreshold = Annotated[float, typer.Option(min=0.0, max=1.0, help="a team's work moves to another region only "
                                              "when that saves more than this share of its on-demand cost where it "
                                              "ran (0.001 = 0.1 %), within the gap; 0: as the solver left it")]


def _offers(path: Path | None, skip_unoffered: bool) -> list:
    warnings: list[str] | None = [] if skip_unoffered else None
    rows = inputs.load_offers(path, warnings)
    for warning in warnings or []:
        errors.print(f"warning: {warning}", style="yellow", highlight=False, markup=False)
    return rows


def _quotas(path: Path | None, skip_unoffered: bool) -> list[QuotaRow] | None:
    if path is None:
        return None
    warnings: list[str] | None = [] if skip_unoffered else None
    rows = inputs.load_quotas(path, warnings)
    for warning in warnings or []:
        errors.print(f"warning: {warning}", style="yellow", highlight=False, markup=False)
    return rows


def _held(ledger: Path | None) -> tuple[list, list[str]]:
    """The held supply of --ledger; each entry left out is a warning that says why."""
    from capacity.ledger import supply

    held, left_out = supply.load(ledger) if ledger else ([], [])
    for warning in left_out:
        errors.print(f"warning: {warning}", style="yellow", highlight=False, markup=False)
    return held, left_out


def _fail(err: InputError | SpecError) -> typer.Exit:
    errors.print(err.render(), style="red", highlight=False, markup=False)
    return typer.Exit(2)


@app.command()
def forecast(
    history: Annotated[Path, typer.Option(help="history.csv: month, team, gpu, gpu_hours")],
    out: Annotated[Path, typer.Option(help="directory for demand.csv, forecast_intervals.csv, backtest.csv")],
    horizon: Annotated[int, typer.Option(min=1, max=120, help="months to forecast after the last history month")] = 12,
    quantile: Annotated[Quantile, typer.Option(help="which quantile demand.csv holds")] = Quantile.P80,
    gang_gpus: Annotated[int, typer.Option(min=1, help="gang_gpus for series whose history does not say")] = 1,
    spot_ok: Annotated[bool, typer.Option(help="spot_ok for series whose history does not say")] = False,
    backtest_origins: Annotated[int, typer.Option(min=0, max=24, help="rolling-origin backtest refits")] = 3,
) -> None:
    """Forecast demand.csv from history.csv with ETS (damped trend; seasonality with 24+ months)."""
    from capacity import forecast as fc
    from capacity.schema import DemandRow

    try:
        rows = inputs.load_history(history)
    except InputError as err:
        raise _fail(err) from None
    result = fc.forecast(rows, horizon, quantile.value, gang_gpus, spot_ok, backtest_origins)
    write_models(out / "demand.csv", DemandRow, result.demand)
    write_models(out / "forecast_intervals.csv", fc.IntervalRow, result.intervals)
    write_models(out / "backtest.csv", fc.BacktestRow, result.backtest)
    wape = "n/a (too little history)" if result.wape is None else f"{result.wape:.1%}"
    console.print(f"{len(result.demand)} demand rows at {quantile.value} for {horizon} months; "
                  f"rolling-origin backtest WAPE {wape}. Wrote demand.csv, forecast_intervals.csv, "
                  f"backtest.csv to {out}")


@app.command()
def quotas(
    cloud: Annotated[list[Cloud], typer.Option(help="cloud(s) to ask: aws, gcp, azure")],
    out: Annotated[Path, typer.Option(help="quotas.csv to write")],
    region: Annotated[list[str] | None, typer.Option(help="region(s); default: every region (AWS, GCP)")] = None,
    project: Annotated[str | None, typer.Option(help="GCP project id")] = None,
    subscription: Annotated[str | None, typer.Option(help="Azure subscription id")] = None,
) -> None:
    """Fetch live GPU quotas and convert them to GPUs with the machine catalogue."""
    result = FetchResult()
    for c in cloud:
        try:
            result.extend(_fetch(c, region, project, subscription))
        except Exception as err:  # one cloud failing leaves the others: a partial result, with a warning
            result.warnings.append(f"{c.title}: quotas not fetched ({type(err).__name__}: "
                                   f"{' '.join(str(err).split())[:200]}).")
    for warning in result.warnings:
        errors.print(f"warning: {warning}", style="yellow", highlight=False, markup=False)
    rows = sorted(result.rows, key=lambda r: r.key)
    write_models(out, QuotaRow, rows)
    console.print(f"Wrote {len(rows)} quota row(s) to {out}" + (" (partial: see warnings)" if result.warnings
                                                               and rows else ""))
    if not rows and result.warnings:
        raise typer.Exit(1)


def _fetch(cloud: Cloud, regions: list[str] | None, project: str | None, subscription: str | None):
    if cloud is Cloud.AWS:
        from capacity.quotas import aws

        return aws.fetch(regions)
    if cloud is Cloud.GCP:
        from capacity.quotas import gcp

        if not project:
            raise ValueError("GCP needs --project")
        return gcp.fetch(project, regions)
    from capacity.quotas import azure

    if not subscription or not regions:
        raise ValueError("Azure needs --subscription and at least one --region (location)")
    return azure.fetch(subscription, regions)


@app.command()
def prices(
    cloud: Annotated[list[Cloud], typer.Option(help="cloud(s) to ask: aws, gcp, azure")],
    out: Annotated[Path, typer.Option(help="offers.csv to write")],
    region: Annotated[list[str] | None, typer.Option(help="region(s); default: every region the catalogue "
                                                     "offers a GPU machine type in")] = None,
) -> None:
    """Fetch live GPU prices (every purchase option) from each cloud's price API into offers.csv."""
    from capacity import prices as live
    from capacity.schema import OfferRow

    rows, warnings = [], []
    with console.status("fetching prices") as status:
        for c in cloud:
            status.update(f"fetching {c.title} prices")
            try:
                result = live.fetch(c, region)
            except Exception as err:  # one cloud failing leaves the others: a partial result, with a warning
                result = live.PriceResult([], [f"{c.title}: prices not fetched ({type(err).__name__}: "
                                               f"{' '.join(str(err).split())[:200]})."])
            rows += result.rows
            warnings += result.warnings
    for warning in warnings:
        errors.print(f"warning: {warning}", style="yellow", highlight=False, markup=False)
    write_models(out, OfferRow, live.sort_rows(rows))
    console.print(f"Wrote {len(rows)} offer row(s) to {out}" + (" (partial: see warnings)" if warnings and rows
                                                               else ""))
    if not rows:
        raise typer.Exit(1)


@app.command()
def plan(
    demand: Annotated[Path, typer.Option(help="demand.csv")],
    out: Annotated[Path, typer.Option(help="directory for plan.csv, commitments.csv, summary.json, ...")],
    offers: Annotated[Path | None, typer.Option(help="offers.csv; default: the bundled price snapshot")] = None,
    quotas: Annotated[Path | None, typer.Option(help="quotas.csv; default: no quota limits")] = None,
    penalty: Annotated[float, typer.Option(min=0.0, help="USD per unserved GPU-hour")] = PENALTY,
    gap: Annotated[float, typer.Option(min=0.0, max=1.0, help="stop when proven within this relative gap")] = GAP,
    time_limit: Annotated[float, typer.Option(min=1.0, help="seconds for each solve")] = DEFAULT_TIME_LIMIT_S,
    stay_threshold: StayThreshold = STAY_THRESHOLD,
    skip_unoffered: SkipUnoffered = False,
    stale_after_days: StaleAfter = STALE_AFTER_DAYS,
    ledger: LedgerOpt = None,
    fmt: FormatOpt = Format.TEXT,
) -> None:
    """Plan the cheapest way to serve demand.csv within quotas: MILP (HiGHS), greedy baseline, quota requests."""
    from capacity import planner, report  # HiGHS loads only when a plan is asked for

    try:
        rows = inputs.load_demand(demand)
        offer_rows = _offers(offers, skip_unoffered)
        quota_rows = _quotas(quotas, skip_unoffered)
        held, left_out = _held(ledger)
    except InputError as err:
        raise _fail(err) from None
    with report.solving(errors) as progress:
        run = planner.plan(rows, offer_rows, quota_rows, penalty, gap, time_limit, progress, stay_threshold, held)
    run.held_left_out = left_out
    data = report.write(run, out, stale_after_days)
    if fmt is Format.JSON:  # summary.json
        console.print_json(json.dumps(data, sort_keys=True))
    else:
        report.render(run, console, out, stale_after_days)
    if not run.verdict.ok:
        raise typer.Exit(1)



@app.command("report")
def report_command(
    out: Annotated[Path, typer.Option(help="directory for report.html, report.xlsx, report.md and the plan files")],
    demand: Annotated[Path | None, typer.Option(help="demand.csv; default: forecast it from --history")] = None,
    history: Annotated[Path | None, typer.Option(help="history.csv: forecast demand and chart the forecast")] = None,
    budget: Annotated[Path | None, typer.Option(help="budget.csv: month, cost_center, usd")] = None,
    offers: Annotated[Path | None, typer.Option(help="offers.csv; default: the bundled price snapshot")] = None,
    quotas: Annotated[Path | None, typer.Option(help="quotas.csv; default: no quota limits")] = None,
    horizon: Annotated[int, typer.Option(min=1, max=120, help="months to forecast (with --history)")] = 12,
    quantile: Annotated[Quantile, typer.Option(help="forecast quantile the plan serves")] = Quantile.P80,
    penalty: Annotated[float, typer.Option(min=0.0, help="USD per unserved GPU-hour")] = PENALTY,
    gap: Annotated[float, typer.Option(min=0.0, max=1.0, help="stop when proven within this relative gap")] = GAP,
    time_limit: Annotated[float, typer.Option(min=1.0, help="seconds for each solve")] = DEFAULT_TIME_LIMIT_S,
    stay_threshold: StayThreshold = STAY_THRESHOLD,
    skip_unoffered: SkipUnoffered = False,
    stale_after_days: StaleAfter = STALE_AFTER_DAYS,
    allow_unmatched_budget: Annotated[bool, typer.Option(help="keep budget.csv rows whose cost_center matches no "
                                                              "team of the demand, with a warning, instead of "
                                                              "refusing the file")] = False,
    focus: Annotated[list[Path] | None, typer.Option(help="FOCUS exports (files or directories): add the actuals "
                                                          "sections, plan against the bill (docs/actuals.md)")] = None,
    actuals_db: Annotated[Path | None, typer.Option(help="the DuckDB database for --focus; default: the user's "
                                                         "data directory")] = None,
    currency: Annotated[str | None, typer.Option(help="billing currency of exports without BillingCurrency")] = None,
    ledger: LedgerOpt = None,
) -> None:
    """The report finance reviews: forecast (with --history), plan, budget variance -> HTML, XLSX, Markdown."""
    from capacity import forecast as fc
    from capacity import planner, report
    from capacity.finance import budget as budgets
    from capacity.finance import report as finance
    from capacity.schema import DemandRow

    if demand is None and history is None:
        errors.print("Give --demand demand.csv, or --history history.csv to forecast it.", style="red")
        raise typer.Exit(2)
    try:
        history_rows = inputs.load_history(history) if history else None
        rows = inputs.load_demand(demand) if demand else None
        offer_rows = _offers(offers, skip_unoffered)
        quota_rows = _quotas(quotas, skip_unoffered)
        teams = {r.team for r in rows or history_rows or []}
        kept: list[str] | None = [] if allow_unmatched_budget else None
        budget_rows = budgets.load_budget(budget, teams, kept) if budget else None
        loaded = actuals_cli.load_exports(focus, actuals_db, currency) if focus else None  # before the long solve
        held, left_out = _held(ledger)
    except InputError as err:
        raise _fail(err) from None
    for warning in kept or []:
        errors.print(f"warning: {warning}", style="yellow", highlight=False, markup=False)
    result = None
    if history_rows:
        result = fc.forecast(history_rows, horizon, quantile.value)
        out.mkdir(parents=True, exist_ok=True)
        write_models(out / "demand.csv", DemandRow, result.demand)
        write_models(out / "forecast_intervals.csv", fc.IntervalRow, result.intervals)
        rows = rows or result.demand
    assert rows is not None
    with report.solving(errors) as progress:
        run = planner.plan(rows, offer_rows, quota_rows, penalty, gap, time_limit, progress, stay_threshold, held)
    run.held_left_out = left_out
    data = report.write(run, out, stale_after_days)
    document = actuals_cli.report(*loaded, (run.plan.lines, run.plan.commitments)) if loaded else None
    made = finance.write(run, data, out, budget_rows, history_rows, result, quantile.value, actuals=document)
    finance.render(made, console)
    console.print(f"Total spend ${data['total_usd']:,.2f}, unmet GPU-hours {data['unmet_gpu_hours']:,.0f}, "
                  f"{data['quota_requests']} quota request(s). Wrote {', '.join(finance.FILES)} and "
                  f"{', '.join(report.FILES)} to {out}")
    if not run.verdict.ok:
        raise typer.Exit(1)

@app.command()
def reconcile(
    plan_dir: Annotated[Path, typer.Option("--plan", help="the directory `capacity plan` wrote")],
    stacks: Annotated[list[Path] | None, typer.Option(help="stack files or directories; default: stacks/")] = None,
    offers: Annotated[Path | None, typer.Option(help="offers.csv for prices; default: the bundled snapshot")] = None,
    out: Annotated[Path | None, typer.Option(help="reconcile.csv to write; default: <plan>/reconcile.csv")] = None,
    fmt: FormatOpt = Format.TEXT,
) -> None:
    """Compare the plan with what the stacks provision: over- and under-provisioning, and its monthly cost."""
    from capacity.reconcile import reconcile as compare
    from stacks.config import load_stack_file, stack_paths

    files = stack_paths(stacks)
    try:
        lines = load_rows(plan_dir / "plan.csv", PlanLine)
        commitments = load_rows(plan_dir / "commitments.csv", CommitmentLine)
        offer_rows = inputs.load_offers(offers)
        fleets = [load_stack_file(f) for f in files]
    except (InputError, SpecError) as err:
        raise _fail(err) from None
    rows = compare(lines, commitments, fleets, offer_rows)
    target = out or plan_dir / "reconcile.csv"
    write_models(target, ReconcileRow, rows)
    if fmt is Format.JSON:  # every row, as reconcile.csv has them
        typer.echo(json.dumps([r.model_dump(mode="json") for r in rows], indent=2))
        return
    _render_reconcile(rows, len(files))
    console.print(f"Wrote {len(rows)} row(s) to {target}")


@app.command()
def apply(
    plan_dir: Annotated[Path, typer.Option("--plan", help="the directory `capacity plan` wrote")],
    month: Annotated[str, typer.Option(help="the plan month to carry into the stacks, YYYY-MM")],
    stacks_dir: Annotated[Path, typer.Option(help="the folder of stack files")] = Path("stacks"),
    write: Annotated[bool, typer.Option("--write", help="edit the stack files in place (default: show the "
                                        "edits and the diff only)")] = False,
    allow_shrink: Annotated[bool, typer.Option("--allow-shrink", help="also shrink reservation / capacity "
                                               "block pools and pools of GPUs that teams absent from the plan use, "
                                               "and drop Kueue teams the plan no longer places")] = False,
) -> None:
    """Carry one month of an accepted plan into the stack files: pool sizes, reservations to buy, Kueue quotas."""
    import re

    from capacity.apply.propose import propose
    from capacity.apply.render import diff, render
    from capacity.apply.stackdoc import StackDoc
    from capacity.schema import MONTH_PATTERN

    if not re.match(MONTH_PATTERN, month):
        errors.print(f"--month: {month!r} is not a month. Write it YYYY-MM, e.g. 2027-01.", style="red")
        raise typer.Exit(2)
    files = sorted(stacks_dir.glob("Pulumi.*.yaml")) if stacks_dir.is_dir() else []
    if not files:
        errors.print(f"--stacks-dir: no Pulumi.<stack>.yaml files in {stacks_dir}. Point it at the stacks folder.",
                     style="red")
        raise typer.Exit(2)
    try:
        lines = load_rows(plan_dir / "plan.csv", PlanLine)
        commitments = load_rows(plan_dir / "commitments.csv", CommitmentLine)
        shortfall = load_rows(plan_dir / "shortfall.csv", ShortfallLine) if (plan_dir / "shortfall.csv").exists() \
            else []
        held = load_rows(plan_dir / "held.csv", HeldRow) if (plan_dir / "held.csv").exists() else []
        docs = [StackDoc.read(f) for f in files]
    except (InputError, SpecError) as err:
        raise _fail(err) from None
    months = sorted({line.month for line in lines})
    if month not in months:
        errors.print(f"--month: the plan has no month {month}. Its months: {', '.join(months) or '(none)'}.",
                     style="red")
        raise typer.Exit(2)
    teams = {line.team for line in lines} | {s.team for s in shortfall}  # the teams the plan knows
    proposal = propose(lines, commitments, month, docs, allow_shrink, teams, held)
    render(proposal, console, allow_shrink)
    problems = proposal.problems()
    for problem in problems:
        errors.print(problem, style="red", highlight=False, markup=False)
    if not write:
        console.print(diff(proposal) or "No stack file changes.", highlight=False, markup=False, soft_wrap=True)
    elif problems:
        errors.print("Nothing written: an edited stack would not validate (above).", style="red")
    else:
        for doc in proposal.changed():
            doc.path.write_text(doc.dump(), encoding="utf-8")
            console.print(f"wrote {doc.path}" + (" (DRAFT: review before pulumi up)" if doc.draft else ""))
    if problems:
        raise typer.Exit(1)


def _render_reconcile(rows: list, stack_count: int) -> None:
    flagged = [r for r in rows if r.status != "ok"]
    numbers = ("planned", "max", "paid", "GPUs off", "USD/month")
    columns = [Column(c, justify="right" if c in numbers else "left")
               for c in ("month", "cloud", "region", "gpu", "status", *numbers)]
    cells = [(r.month, r.cloud, r.region, r.gpu, r.status, f"{r.planned_gpus:,.1f}", str(r.provisioned_max_gpus),
              str(r.paid_gpus), f"{r.gpus:,.1f}", "no price" if r.usd_per_month is None else f"{r.usd_per_month:,.0f}")
             for r in flagged[:40]]
    print_table(console, f"Plan vs {stack_count} stack(s): {len(flagged)} month(s) off", columns, cells,
                caption=f"... {len(flagged) - 40} more in reconcile.csv" if len(flagged) > 40 else "",
                title_justify="left")
    for status in ("under", "over"):
        of = [r for r in rows if r.status == status]
        unpriced = sum(r.usd_per_month is None for r in of)
        total = sum(r.usd_per_month for r in of if r.usd_per_month is not None)
        console.print(f"{status}-provisioned: {'at least ' if unpriced else ''}${total:,.0f} across {len(of)} "
                      "cloud/region/GPU-months" + (f" ({unpriced} without a price)" if unpriced else ""))
