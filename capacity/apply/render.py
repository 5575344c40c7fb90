"""The proposal as a reviewer reads it: a table of edits, what is held back, what to buy, and the diff."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from rich.console import Console

from capacity.apply.edits import Proposal
from capacity.terminal import Column, names, print_table


def _show(value: Any) -> str:
    return "-" if value is None else str(value)


EDIT_COLUMNS = (*names("path", "stack", "now", "proposed"), Column("why", prose=True))


def render(p: Proposal, console: Console, allow_shrink: bool) -> None:
    edits = p.net_edits()
    print_table(console, f"Stack edits for {p.month}: {len(edits)}", EDIT_COLUMNS,
                [(e.path, e.stack, _show(e.before), _show(e.after), e.why) for e in edits], title_justify="left")
    if p.held:
        print_table(console, f"Held back ({len(p.held)}): rerun with --allow-shrink to apply",
                    [*EDIT_COLUMNS[:3], Column("would be"), EDIT_COLUMNS[4]],
                    [(e.path, e.stack, _show(e.before), _show(e.after), e.why) for e in p.held], title_justify="left")
    if p.purchases:
        print_table(console, "Commitments and capacity the plan buys",
                    [*names("machine type", "cloud", "region", "nodes#", "pool"), Column("what", prose=True)],
                    [(b.machine_type, b.cloud, b.region, str(b.nodes), b.pool, b.what) for b in p.purchases],
                    title_justify="left")
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
