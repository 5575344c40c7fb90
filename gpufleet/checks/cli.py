"""`gpufleet policy ...`: list the pack's policies, write a stack's policy config, check stacks; and the rich
rendering of verdicts that `gpufleet preview` uses (docs/policies.md)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from capacity.terminal import Column, Format, FormatOpt, print_table
from components.errors import SpecError
from gpufleet.checks.analyzer import (
    Level,
    PolicyPack,
    PolicyPackError,
    Verdict,
    fleet_config,
    load_config,
    merge_config,
    stack_policy_config,
)
from gpufleet.engine.preview import Preview, preview_stack
from gpufleet.stackdir import check_names, known_stacks
from policies.pack import THEMES
from stacks.config import STACKS_DIR

policy_app = typer.Typer(help="The gpufleet policy pack (policies/): list, config, check.", no_args_is_help=True)
console = Console()
errors = Console(stderr=True)

ConfigOpt = Annotated[Path | None, typer.Option("--policy-pack-config", help="A policy config JSON file, as for "
                                                "`pulumi preview --policy-pack-config` (merged over the fleet's).")]
StacksDirOpt = Annotated[Path, typer.Option(help="Where the Pulumi.<stack>.yaml files are.")]
_STYLE = {Level.MANDATORY: "bold red", Level.REMEDIATE: "bold red", Level.ADVISORY: "yellow", Level.DISABLED: "dim"}


def _theme(name: str) -> str:
    return next((theme for theme, policies in THEMES.items() if any(p.name == name for p in policies)), "")


def _config_text(schema: dict[str, Any]) -> str:
    return "\n".join(f"{key} = {json.dumps(spec.get('default'))}" for key, spec in schema.items())


@policy_app.command("list")
def list_policies(fmt: FormatOpt = Format.TEXT) -> None:
    """The pack's policies as it serves them (GetAnalyzerInfo): theme, kind, level, config defaults, why."""
    try:
        with PolicyPack() as pack:
            policies = list(pack.policies.values())
    except PolicyPackError as err:
        errors.print(f"[red]{err}[/]")
        raise typer.Exit(2) from None
    if fmt is Format.JSON:
        typer.echo(json.dumps([{"name": p.name, "theme": _theme(p.name), "kind": p.kind, "level": str(p.level),
                                "config": p.config_schema, "description": p.description} for p in policies], indent=2))
        return
    columns = [Column("policy"), Column("theme"), Column("kind"), Column("level"),
               Column("config (defaults)", prose=True), Column("why", prose=True)]
    rows = [(p.name, _theme(p.name), p.kind, f"[{_STYLE[p.level]}]{p.level}[/]", _config_text(p.config_schema),
             p.description) for p in policies]
    print_table(console, f"gpufleet policy pack: {len(policies)} policies", columns, rows, show_lines=True)


@policy_app.command("config")
def write_config(
    stack: Annotated[str, typer.Option("--stack", "-s", help="The stack whose fleet spec to read.")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write here instead of stdout.")] = None,
    stacks_dir: StacksDirOpt = STACKS_DIR,
) -> None:
    """The policy config a stack's fleet spec implies (monthly budget, spot pools), for `--policy-pack-config`."""
    _known(stack, stacks_dir)
    try:
        text = json.dumps(stack_policy_config(stack, stacks_dir), indent=2) + "\n"
    except SpecError as err:
        for problem in err.problems:
            errors.print(f"[red]{problem.render(err.source)}[/]")
        raise typer.Exit(1) from None
    if out is None:
        typer.echo(text, nl=False)
    else:
        out.write_text(text)


@policy_app.command("check")
def check(
    stack: Annotated[list[str] | None, typer.Option("--stack", "-s", help="Stack to check (repeatable).")] = None,
    all_stacks: Annotated[bool, typer.Option("--all", help="Check every stack.")] = False,
    config: ConfigOpt = None,
    stacks_dir: StacksDirOpt = STACKS_DIR,
    fmt: FormatOpt = Format.TEXT,
) -> None:
    """Run the pack over each stack's offline-preview graph; exit 3 on a mandatory violation."""
    known = known_stacks(stacks_dir)
    names = known if all_stacks else (stack or [])
    if not names:
        errors.print("Name a stack with --stack NAME, or use --all. Stacks: " + ", ".join(known))
        raise typer.Exit(2)
    check_names(names, known, stacks_dir)
    found = check_previews([_valid(n, stacks_dir) for n in names], None if fmt is Format.JSON else console, config)
    if fmt is Format.JSON:  # [{stack, verdicts}]
        typer.echo(json.dumps([{"stack": s, "verdicts": verdicts_document(v)} for s, v in found.items()], indent=2))
    if any(v.mandatory for vs in found.values() for v in vs):
        raise typer.Exit(3)


def _known(stack: str, stacks_dir: Path) -> None:
    check_names([stack], known_stacks(stacks_dir), stacks_dir)


def _valid(stack: str, stacks_dir: Path) -> Preview:
    _known(stack, stacks_dir)
    preview = preview_stack(stack, stacks_dir)
    if not preview.ok:
        for e in preview.errors:
            errors.print(f"[red]{e}[/]")
        raise typer.Exit(1)
    return preview


def check_previews(previews: Sequence[Preview], out: Console | None,
                   config_file: Path | None = None) -> dict[str, list[Verdict]]:
    """Run the pack once over every valid preview's graph (config: the fleet's budget and spot pools, then
    ``config_file``; `gpufleet pr`/`diff --policies` configure it the same way) and print the verdicts per resource
    to ``out`` (None: print nothing). Stack -> verdicts."""
    found: dict[str, list[Verdict]] = {}
    try:
        user = load_config(config_file) if config_file else None
        with PolicyPack() as pack:
            for p in previews:
                if p.graph is None or p.fleet is None:
                    continue
                pack.configure(merge_config(fleet_config(p.fleet), user))
                found[p.stack] = pack.analyze(p.graph)
                if out is not None:
                    print_verdicts(out, p.stack, found[p.stack])
    except PolicyPackError as err:
        errors.print(f"[red]policy pack:[/] {err}")
        raise typer.Exit(2) from None
    return found


def print_verdicts(out: Console, stack: str, verdicts: Sequence[Verdict]) -> None:
    """One table per stack, rows grouped by resource (stack-wide verdicts last), mandatory in red."""
    if not verdicts:
        out.print(f"[green]stack {stack}: policy pack gpufleet found no violations[/]")
        return
    counts = {level: sum(v.level is level for v in verdicts) for level in (Level.MANDATORY, Level.ADVISORY)}
    order = sorted(verdicts, key=lambda v: (v.resource is None, v.resource or ""))
    rows = [(v.resource or "(stack)", v.policy, f"[{_STYLE[v.level]}]{v.level}[/]", v.message) for v in order]
    columns = [Column("resource"), Column("policy"), Column("level"), Column("violation", prose=True)]
    print_table(out, f"stack {stack}: policy verdicts ({counts[Level.MANDATORY]} mandatory, "
                f"{counts[Level.ADVISORY]} advisory)", columns, rows, show_lines=True)


def verdicts_document(verdicts: Sequence[Verdict]) -> list[dict[str, Any]]:
    """Verdicts as JSON-ready dicts (for a preview or diff document)."""
    return [{"policy": v.policy, "level": str(v.level), "resource": v.resource, "message": v.message}
            for v in verdicts]
