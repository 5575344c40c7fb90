"""CLI commands of the real engine: `gpufleet up` and `gpufleet real-preview` (needs the Pulumi CLI and credentials)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

console = Console()
errors = Console(stderr=True)


StageOption = Annotated[str, typer.Option(
    "--stage", help="all (every layer: from where every API server is reachable), cloud (the cloud layer, and the "
    "in-cluster layer of one-stage clusters: from anywhere) or cluster (--cluster's in-cluster layer: on a runner "
    "inside its network). docs/clouds.md \"Deploy paths\".")]
ClusterOption = Annotated[str | None, typer.Option("--cluster", help="The cluster of --stage cluster.")]


def up(stack: Annotated[str, typer.Option("--stack", "-s", help="Stack to deploy.")],
       stage: StageOption = "all", cluster: ClusterOption = None) -> None:
    """`pulumi up` for one stack (one stage of it) through the Automation API (needs the Pulumi CLI and cloud
    credentials)."""
    _real(stack, "up", stage, cluster)


def real_preview(stack: Annotated[str, typer.Option("--stack", "-s", help="Stack to preview.")],
                 stage: StageOption = "all", cluster: ClusterOption = None) -> None:
    """The real `pulumi preview --diff` through the Automation API (needs the Pulumi CLI and credentials)."""
    _real(stack, "preview", stage, cluster)


def deploy_plan(stack: Annotated[list[str] | None, typer.Option("--stack", "-s", help="Stack (repeatable).")] = None,
                all_stacks: Annotated[bool, typer.Option("--all", help="Every stack.")] = False,
                excludes: Annotated[str | None, typer.Option(
                    "--excludes", help="Print the `pulumi` flags of this stage of the one --stack instead "
                    "(--exclude URN ... --exclude-dependents), for the CLI.")] = None) -> None:
    """The deploy jobs of stacks as JSON: each stage, the cluster it installs, the runner labels it runs on (the
    matrix .github/workflows/up.yml runs). Refuses a stack whose deploy path cannot work, with its config path."""
    import json

    from components.errors import SpecError
    from gpufleet.deploy.automation import ROOT, RealError, stage_excludes
    from gpufleet.deploy.stages import plan
    from stacks.config import load_stack_file, stack_file, stack_names

    names = stack_names(ROOT / "stacks") if all_stacks else (stack or [])
    try:
        if excludes is not None:
            stage, _, cluster = excludes.partition(":")
            flags = [f for u in stage_excludes(names[0], stage, cluster or None) for f in ("--exclude", u)]
            typer.echo(" ".join([*flags, "--exclude-dependents"] if flags else []))
            return
        jobs = [j.document() for name in names
                for j in plan(name, load_stack_file(stack_file(name, ROOT / "stacks")))]
    except (SpecError, RealError) as err:
        errors.print(f"[red]gpufleet deploy-plan:[/] {err}")
        raise typer.Exit(1) from None
    typer.echo(json.dumps(jobs))


def _real(stack: str, action: str, stage: str, cluster: str | None) -> None:
    from gpufleet.deploy.automation import RealError, run

    try:
        summary = run(stack, action, stage=stage, cluster=cluster)
    except RealError as err:
        errors.print(f"[red]gpufleet {action}:[/] {err}")
        raise typer.Exit(2) from None
    console.print(f"{action} {stack}: " + ", ".join(f"{k} {v}" for k, v in sorted(summary.items())))

