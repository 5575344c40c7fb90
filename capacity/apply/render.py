"""The proposal as a reviewer reads it: a table of edits, what is held back, what to buy, and the diff."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from capacity.apply.edits import Proposal


def _show(value: Any) -> str:
    return "-" if value is None else str(value)


def render(p: Proposal, console: Console, allow_shrink: bool) -> None:
    edits = p.net_edits()
    table = Table(title=f"Stack edits for {p.month}: {len(edits)}", title_justify="left")
    for col in ("stack", "path", "now", "proposed", "why"):
        table.add_column(col, overflow="fold")
    for e in edits:
        table.add_row(e.stack, e.path, _show(e.before), _show(e.after), e.why)
    console.print(table)
    if p.held:
        held = Table(title=f"Held back ({len(p.held)}): rerun with --allow-shrink to apply", title_justify="left")
        for col in ("stack", "path", "now", "would be", "why"):
            held.add_column(col, overflow="fold")
        for e in p.held:
            held.add_row(e.stack, e.path, _show(e.before), _show(e.after), e.why)
        console.print(held)
    if p.purchases:
        buy = Table(title="Commitments and capacity the plan buys", title_justify="left")
        for col in ("cloud", "region", "machine type", "nodes", "what", "pool"):
            buy.add_column(col, overflow="fold")
        for b in p.purchases:
            buy.add_row(b.cloud, b.region, b.machine_type, str(b.nodes), b.what, b.pool)
        console.print(buy)
    for note in p.notes:
        console.print(f"note: {note}", style="yellow", highlight=False, markup=False)


def _relative(path: Path) -> Path:
    try:
        return path.resolve().relative_to(Path.cwd())
    except ValueError:
        return path


def diff(p: Proposal) -> str:
    """A unified diff of every changed or new stack file, as `git diff` would show it."""
    out = []
    for doc in p.changed():
        before = doc.text.splitlines(keepends=True)
        after = doc.dump().splitlines(keepends=True)
        name = _relative(doc.path)
        old = "/dev/null" if doc.draft else f"a/{name}"
        out.extend(difflib.unified_diff(before, after, old, f"b/{name}"))
    return "".join(out)
