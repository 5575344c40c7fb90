"""CLI commands of the real engine: `gpufleet up` and `gpufleet real-preview` (needs the Pulumi CLI and credentials)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

console = Console()
errors = Console(stderr=True)


def up(stack: Annotated[str, typer.Option("--stack", "-s", help="Stack to deploy.")]) -> None:
    """`pulumi up` for one stack through the Automation API (needs the Pulumi CLI and cloud credentials)."""
    _real(stack, "up")


def real_preview(stack: Annotated[str, typer.Option("--stack", "-s", help="Stack to preview.")]) -> None:
    """The real `pulumi preview --diff` through the Automation API (needs the Pulumi CLI and credentials)."""
    _real(stack, "preview")


def _real(stack: str, action: str) -> None:
    from gpufleet.deploy.automation import RealError, run

    try:
        summary = run(stack, action)
    except RealError as err:
        errors.print(f"[red]gpufleet {action}:[/] {err}")
        raise typer.Exit(2) from None
    console.print(f"{action} {stack}: " + ", ".join(f"{k} {v}" for k, v in sorted(summary.items())))

