"""CLI commands of the pull-request preview: `gpufleet diff` and `gpufleet pr`."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from capacity.ledger.checks import WARN_DAYS
from capacity.prices.table import Prices
from gpufleet.engine.capture import Graph
from gpufleet.engine.render import print_notes
from gpufleet.review import comment, gate, report
from gpufleet.review import ledger as reserved
from gpufleet.review.diff import StackDiff, diff_documents, diff_payloads
from gpufleet.review.digest import diff_digest

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


def _graph(stack: str, resources: Sequence[Any]) -> Graph:
    return Graph("gpufleet", stack, list(resources))


def _note(d: StackDiff) -> str:
    if d.failed:
        return "policy pack not run: the stack could not be previewed"
    if d.partial:
        return ("policy pack not run: the real preview lists only changed resources (no --show-sames), and stack "
                "policies judged on part of the graph would be wrong")
    if d.policy_config is None:
        return ("the fleet's policy config (budget, spot pools) is unknown for this preview: stack-monthly-budget "
                "and spot-only-where-allowed judge without it")
    return ""


def verdicts(diffs: Sequence[StackDiff], enabled: bool,
             user_config: Path | None = None) -> dict[str, tuple[Any, Any, str]]:
    """stack -> (head verdicts, base verdicts, note). Each side runs with its fleet's policy config (budget, spot
    pools) merged under ``user_config``: the configuration `gpufleet preview` and `gpufleet policy check` use.
    The head side and the base side each get a pack process of their own, run at once (the analysis is the
    pack's CPU, not ours). The pack's absence or failure becomes the note."""
    if not enabled:
        return {d.stack: (None, None, "policy pack not run (--no-policies)") for d in diffs}
    try:
        from gpufleet.checks.analyzer import PolicyPack, analyze, load_config, merge_config

        user = load_config(user_config) if user_config else None
        judged = [d for d in diffs if not (d.failed or d.partial)]
        head_side = [(d.stack, d.head, d.policy_config) for d in judged]
        base_side = [(d.stack, d.base, d.base_policy_config) for d in judged if d.base]

        def judge(side: list[tuple[str, Any, Any]]) -> dict[str, Any]:
            if not side:
                return {}
            with PolicyPack() as pack:
                return {stack: analyze(_graph(stack, resources), merge_config(config, user), pack)
                        for stack, resources, config in side}

        with ThreadPoolExecutor(2) as pool:
            heads, bases = pool.map(judge, (head_side, base_side))
        return {d.stack: (heads[d.stack], bases.get(d.stack, []), _note(d)) if d.stack in heads
                else (None, None, _note(d)) for d in diffs}
    except Exception as err:  # the pack is optional here: report why it is missing, never fail the comment
        return {d.stack: (None, None, f"policy pack not run: {err}") for d in diffs}


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


def emit(diffs: Sequence[StackDiff], fmt: OutFormat, offers: Path | None, policies: bool,
         policy_config: Path | None = None, ledger: Path | None = None,
         warn_days: int = WARN_DAYS) -> list[report.StackReport]:
    prices = Prices.load(offers)
    entries = _ledger(ledger)
    now = dt.datetime.now(dt.UTC)
    flags = reserved.flags(entries, diffs, now, warn_days) if entries is not None else {}
    found = verdicts(diffs, policies, policy_config)
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
    _exit(emit(diffs, fmt, offers, policies, policy_config, ledger, warn_days))


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

    try:
        found = previews(repo, stacks_dir, base_ref, progress=lambda line: errors.print(f"[dim]{line}[/]"))
        real = {d.stack: d for d in (diff_digest(_load(p)) for p in pulumi_preview or [])}
    except (PrError, ValueError) as err:
        errors.print(f"[red]gpufleet pr:[/] {err}")
        raise typer.Exit(2) from None
    print_notes(errors, (found.head[s] for s in found.stacks))
    diffs = [real.get(s) or diff_documents(found.base[s], found.head[s]) for s in found.stacks]
    diffs += [d for s, d in real.items() if s not in found.stacks]
    _exit(emit(diffs, fmt, offers, policies, policy_config, ledger, warn_days))
