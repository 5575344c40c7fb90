"""CLI commands of the pull-request preview: `gpufleet diff` and `gpufleet pr`."""

from __future__ import annotations

import atexit
import datetime as dt
import gc
import json
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from capacity.ledger.checks import WARN_DAYS
from capacity.prices.table import Prices
from gpufleet.engine.render import print_notes
from gpufleet.review import comment, gate, report
from gpufleet.review import ledger as reserved
from gpufleet.review.diff import StackDiff, diff_documents, diff_payloads
from gpufleet.review.digest import diff_digest
from gpufleet.review.verdicts import Judges

console = Console()
errors = Console(stderr=True)


class OutFormat(StrEnum):
    TEXT = "text"
    MARKDOWN = "markdown"
    JSON = "json"


FormatOpt = Annotated[OutFormat, typer.Option("--format", "-f", help="text (rich), markdown (PR comment) or json "
                                              "(gpufleet.diff/v1).")]
OffersOpt = Annotated[Path | None, typer.Option(help="Price snapshot (default: capacity/data/offers.csv).")]
PoliciesOpt = Annotated[bool, typer.Option(help="Run the policy pack on the head graph (and the base, to find new "
                                           "violations), configured as `gpufleet preview` does.")]
PolicyConfigOpt = Annotated[Path | None, typer.Option("--policy-pack-config", help="Policy config JSON merged over "
                                                      "each fleet's (as for `gpufleet preview`).")]
LedgerOpt = Annotated[Path | None, typer.Option(help="A recorded `gpufleet capacity ledger --live --format json`: flag "
                                                "pools on reservations or capacity blocks that have ended (blocks) or "
                                                "end within --warn-days, and capacity billed while idle.")]
WarnDaysOpt = Annotated[int, typer.Option(min=0, help="With --ledger: flag reserved capacity a pool draws on that ends "
                                          "within this many days.")]


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as err:
        errors.print(f"[red]{path}:[/] cannot read JSON: {err}")
        raise typer.Exit(2) from None


def _ledger(path: Path | None) -> list[Any] | None:
    """The entries of a recorded ledger; exit 2 with what is wrong when it is not one."""
    if path is None:
        return None
    from capacity.csvio import InputError
    from capacity.ledger import model

    try:
        return model.read(path)
    except InputError as err:
        errors.print(err.render(), style="red", highlight=False, markup=False)
        raise typer.Exit(2) from None


def emit(diffs: Sequence[StackDiff], fmt: OutFormat, offers: Path | None, judges: Judges, ledger: Path | None = None,
         warn_days: int = WARN_DAYS) -> list[report.StackReport]:
    prices = Prices.load(offers)
    entries = _ledger(ledger)
    now = dt.datetime.now(dt.UTC)
    flags = reserved.flags(entries, diffs, now, warn_days) if entries is not None else {}
    found = judges.verdicts(diffs)
    reports = [report.build(d, prices, *found[d.stack], capacity=flags.get(d.stack, ()),
                            capacity_note=reserved.PARTIAL if entries is not None and d.partial else "")
               for d in diffs]
    judged = None if ledger is None else {"file": str(ledger), "as_of": now.isoformat(timespec="seconds"),
                                          "warn_days": warn_days}
    if fmt is OutFormat.JSON:
        typer.echo(json.dumps(report.document(reports, judged), indent=2))
    elif fmt is OutFormat.MARKDOWN:
        typer.echo(comment.render(reports))
    else:
        report.print_report(console, reports)
    return reports


def diff(
    base: Annotated[Path | None, typer.Argument(help="Base preview (gpufleet.preview/v1, one or an array).")] = None,
    head: Annotated[Path | None, typer.Argument(help="Head preview.")] = None,
    pulumi_preview: Annotated[list[Path] | None, typer.Option(help="A `pulumi preview --json` document "
                                                              "(repeatable, one per stack).")] = None,
    fmt: FormatOpt = OutFormat.TEXT, offers: OffersOpt = None, policies: PoliciesOpt = False,
    policy_config: PolicyConfigOpt = None, ledger: LedgerOpt = None, warn_days: WarnDaysOpt = WARN_DAYS,
) -> None:
    """Compare two offline previews, or report a real `pulumi preview --json`: resource changes, replacements,
    GPU disruption risk, monthly cost delta and policy verdicts. Exits 1 when a stack could not be previewed
    (invalid fleet, failed program, a preview with errors), 3 when the change adds a mandatory policy violation,
    leaves a GPU pool unpriced or cannot apply as written: the report says so first."""
    diffs: list[StackDiff] = []
    try:
        if base is not None and head is not None:
            diffs += diff_payloads(_load(base), _load(head))
        elif base is not None or head is not None:
            raise ValueError("give both BASE.json and HEAD.json")
        diffs += [diff_digest(_load(p)) for p in pulumi_preview or []]
    except (ValueError, KeyError) as err:
        errors.print(f"[red]gpufleet diff:[/] {err}")
        raise typer.Exit(2) from None
    if not diffs:
        errors.print("Nothing to compare: give BASE.json HEAD.json, or --pulumi-preview preview.json.")
        raise typer.Exit(2)
    with Judges(policies, policy_config) as judges:
        _exit(emit(diffs, fmt, offers, judges, ledger, warn_days))


def _exit(reports: Sequence[report.StackReport]) -> None:
    """What fails or blocks the change goes to stderr as well (the report leads with it), and sets the exit code
    (gpufleet.review.gate: 1 a stack could not be previewed, 3 the change is blocked)."""
    found = gate.stops(reports)
    for s in found:
        errors.print(f"[red]stack {s.stack}:[/] {s.reason}", highlight=False)
    if found:
        raise typer.Exit(gate.exit_code(found))


def pr(
    repo: Annotated[Path, typer.Option(help="A path inside the git checkout.")] = Path("."),
    base_ref: Annotated[str | None, typer.Option("--base", help="Branch to compare with (default: origin/main, "
                                                 "then main).")] = None,
    stacks_dir: Annotated[str, typer.Option(help="Stacks directory, relative to the repository root.")] = "stacks",
    pulumi_preview: Annotated[list[Path] | None, typer.Option(
        help="Real `pulumi preview --json` documents to use instead of the offline diff for their stacks.")] = None,
    fmt: FormatOpt = OutFormat.MARKDOWN, offers: OffersOpt = None, policies: PoliciesOpt = True,
    policy_config: PolicyConfigOpt = None, ledger: LedgerOpt = None, warn_days: WarnDaysOpt = WARN_DAYS,
) -> None:
    """Preview the merge base and the working tree of every stack the change touches, and print the comment.
    Exits 1 when a stack could not be previewed on either side, 3 when the change adds a mandatory policy
    violation, leaves a GPU pool unpriced or cannot apply as written: the comment leads with the reason."""
    from gpufleet.review.pr import PrError, previews

    atexit.unregister(gc.freeze)  # once, however often pr runs in this process
    atexit.register(gc.freeze)  # at exit, the heap (~1,900 modules) is the OS's to free: tracing it took seconds
    with Judges(policies, policy_config, held=True) as judges:
        try:
            real = {d.stack: d for d in (diff_digest(_load(p)) for p in pulumi_preview or [])}

            def ready(side: str, document: dict[str, Any]) -> None:
                if side == "head":  # the preview workers are forked: the packs may speak gRPC from now
                    judges.release()
                if document.get("stack") not in real:  # a stack with a real preview is judged from that
                    judges.submit_document(side, document)

            found = previews(repo, stacks_dir, base_ref, progress=lambda line: errors.print(f"[dim]{line}[/]"),
                             ready=ready)
        except (PrError, ValueError) as err:
            errors.print(f"[red]gpufleet pr:[/] {err}")
            raise typer.Exit(2) from None
        print_notes(errors, (found.head[s] for s in found.stacks))
        diffs = [real.get(s) or diff_documents(found.base[s], found.head[s]) for s in found.stacks]
        diffs += [d for s, d in real.items() if s not in found.stacks]
        _exit(emit(diffs, fmt, offers, judges, ledger, warn_days))
