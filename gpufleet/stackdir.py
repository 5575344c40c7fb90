"""Which stacks a command works on: the stacks folder must exist and hold stack files; a name that is not there
gets a did-you-mean. Exit 2 (misuse) on either, with what to do."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from components.errors import did_you_mean
from stacks.config import stack_names

errors = Console(stderr=True)


def known_stacks(stacks_dir: Path) -> list[str]:
    """The stacks in ``stacks_dir``; a missing or empty folder is an error (exit 2), never a silent success."""
    if not stacks_dir.is_dir():
        errors.print(f"--stacks-dir {stacks_dir}: no such folder. Point it at the folder holding the "
                     "Pulumi.<stack>.yaml files (default: stacks/).")
        raise typer.Exit(2)
    known = stack_names(stacks_dir)
    if not known:
        errors.print(f"--stacks-dir {stacks_dir}: no Pulumi.<stack>.yaml stack files in it. Point it at the folder "
                     "holding them (default: stacks/).")
        raise typer.Exit(2)
    return known


def check_names(names: list[str], known: list[str], stacks_dir: Path) -> None:
    for name in names:
        if name not in known:
            guess = did_you_mean(name, known)
            errors.print(f"No stack file Pulumi.{name}.yaml in {stacks_dir}."
                         + (f" Did you mean '{guess}'?" if guess else "") + f" Stacks: {', '.join(known)}.")
            raise typer.Exit(2)
