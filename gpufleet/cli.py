"""gpufleet: offline previews of GPU fleet stacks, policy verdicts, pull-request diffs and capacity plans."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from capacity.cli import app as capacity_app
from capacity.prices.table import Prices
from capacity.terminal import Format
from gpufleet.checks.cli import check_previews, policy_app, verdicts_document
from gpufleet.deploy import cli as deploy_cli
from gpufleet.engine.capture import ProgramError
from gpufleet.engine.levers import exit_after_previews
from gpufleet.engine.parallel import preview_many
from gpufleet.engine.render import print_notes, print_preview
from gpufleet.jobs.cli import jobs_app
from gpufleet.netsim.cli import netsim_app
from gpufleet.review import cli as review_cli
from gpufleet.review import stack_cost
from gpufleet.stackdir import check_names, known_stacks
from stacks.config import STACKS_DIR

app = typer.Typer(help="Multi-cloud GPU training fleets on Pulumi.", no_args_is_help=True,
                  pretty_exceptions_enable=False)
console = Console()
errors = Console(stderr=True)


@app.callback()
def main() -> None:
    """Multi-cloud GPU training fleets on Pulumi: previews, policies, diffs and capacity plans."""


@app.command()
def preview(
    stack: Annotated[list[str] | None, typer.Option("--stack", "-s", help="Stack to preview (repeatable).")] = None,
    all_stacks: Annotated[bool, typer.Option("--all", help="Preview every stack under the stacks directory.")] = False,
    fmt: Annotated[Format, typer.Option("--format", "-f",
                                        help="text (rich) or json (gpufleet.preview/v1).")] = Format.TEXT,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write JSON here: a file for one stack, "
                                             "a directory (one <stack>.json each) for several.")] = None,
    stacks_dir: Annotated[Path, typer.Option(help="Where the Pulumi.<stack>.yaml files are.")] = STACKS_DIR,
    tree: Annotated[bool, typer.Option(help="Show the resource tree in text output.")] = True,
    policies: Annotated[bool, typer.Option(help="Run the policy pack over each graph; exit 3 on a mandatory "
                                           "violation.")] = True,
    policy_config: Annotated[Path | None, typer.Option("--policy-pack-config", help="Policy config JSON, as for "
                                                       "`pulumi preview --policy-pack-config`.")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Processes at once: one per stack, or for one stack "
                                      "alone one per share of its clusters (0: one per CPU core).")] = 0,
) -> None:
    """Show what a stack declares, without credentials: its real program runs under Pulumi's mock runtime.

    Exits 1 when a stack's fleet description is invalid (every problem is listed), 2 when a program fails,
    3 when the policy pack finds a mandatory violation.
    """
    names = _stacks(stack, all_stacks, stacks_dir)
    previews = []
    for name, found in preview_many(names, stacks_dir, jobs, lambda line: errors.print(f"[dim]{line}[/]")):
        if isinstance(found, ProgramError):
            errors.print(f"[red]stack {name}:[/] {found}")
            raise typer.Exit(2)
        previews.append(found)
    documents = [p.document() for p in previews]
    prices = Prices.load()
    for p, doc in zip(previews, documents, strict=True):
        if p.ok:
            doc["cost"] = stack_cost.document(p, prices)
    if fmt is Format.TEXT:
        for p, doc in zip(previews, documents, strict=True):
            print_preview(console, p, tree=tree)
            if "cost" in doc:
                stack_cost.print_cost(console, p.stack, doc["cost"])
    valid = [p for p in previews if p.ok]
    found = check_previews(valid, console if fmt is Format.TEXT else errors, policy_config) if policies else {}
    if fmt is Format.JSON:
        print_notes(errors, documents)
        for doc in documents:
            if doc["stack"] in found:
                doc["policy"] = {"verdicts": verdicts_document(found[doc["stack"]])}
        _write_json(documents, out)
    if not all(p.ok for p in previews):
        raise typer.Exit(1)
    if any(v.mandatory for vs in found.values() for v in vs):
        raise typer.Exit(3)


def _stacks(stack: list[str] | None, all_stacks: bool, stacks_dir: Path) -> list[str]:
    known = known_stacks(stacks_dir)
    if all_stacks:
        return known
    if not stack:
        errors.print("Name a stack with --stack NAME, or use --all. Stacks: " + ", ".join(known))
        raise typer.Exit(2)
    check_names(stack, known, stacks_dir)
    return stack


def _write_json(documents: list[dict], out: Path | None) -> None:
    if out is None:
        payload = documents[0] if len(documents) == 1 else documents
        typer.echo(json.dumps(payload, indent=2, sort_keys=False))
    elif len(documents) == 1 and out.suffix == ".json":
        out.write_text(json.dumps(documents[0], indent=2) + "\n")
    else:
        out.mkdir(parents=True, exist_ok=True)
        for doc in documents:
            (out / f"{doc['stack']}.json").write_text(json.dumps(doc, indent=2) + "\n")


# Sub-commands from their own modules register here, one line each.
app.command()(review_cli.diff)
app.command()(review_cli.pr)
app.command()(deploy_cli.up)
app.command("real-preview")(deploy_cli.real_preview)
app.command("deploy-plan")(deploy_cli.deploy_plan)
app.add_typer(policy_app, name="policy")
app.add_typer(capacity_app, name="capacity")
app.add_typer(netsim_app, name="netsim")
app.add_typer(jobs_app, name="jobs")


def run() -> None:
    """The `gpufleet` command: a process that ends after its command (tests invoke ``app`` in one long process)."""
    exit_after_previews()
    app()


if __name__ == "__main__":
    run()
