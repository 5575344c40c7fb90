"""Tables that read at any width: a wide terminal, an 80-column window, a CI log.

A column is a name (never wrapped or cut: policy and resource names, dates, amounts) or prose (wrapped). When the
names do not fit the console beside a readable prose column, the table becomes a plain list: one block per row, its
first cell on the first line, the other names below as ``header value`` pairs, then each prose cell, labelled.
Shared by the capacity CLI and gpufleet's, so it sits below both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, Literal

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text


class Format(StrEnum):
    TEXT = "text"
    JSON = "json"


# every command that prints a table takes it; json is the documented machine output
FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="text (tables) or json.")]
# `--json`, where an issue or a doc named it: the same choice as `--format json`, read through `chosen`
JsonOpt = Annotated[bool, typer.Option("--json", help="the same as --format json.")]


def chosen(fmt: Format, as_json: bool) -> Format:
    """The one output format of a command that takes both ``--format`` and ``--json``."""
    return Format.JSON if as_json else fmt


PROSE_MIN = 24  # narrowest a wrapped column may get and still read as sentences
INDENT = 4  # a row's other cells, under its first


@dataclass(frozen=True)
class Column:
    header: str
    prose: bool = False  # wrapped; every other column is a name, printed whole
    justify: Literal["left", "right"] = "left"


def names(*headers: str) -> list[Column]:
    """Name columns by header; a trailing ``#`` marks a number (right-justified, the ``#`` dropped)."""
    return [Column(h.removesuffix("#"), justify="right" if h.endswith("#") else "left") for h in headers]


def _width(cell: str) -> int:
    return max((Text.from_markup(line).cell_len for line in cell.splitlines()), default=0)


def fits(console: Console, columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> bool:
    """Whether every name column fits whole, with each prose column at least PROSE_MIN wide."""
    need = 3 * len(columns) + 1  # rich's padding and rules
    for i, col in enumerate(columns):
        widest = max([_width(col.header), *(_width(r[i]) for r in rows)])
        need += min(widest, PROSE_MIN) if col.prose else widest
    return need <= console.width


def print_table(console: Console, title: str, columns: Sequence[Column], rows: Sequence[Sequence[str]],
                caption: str = "", **table: Any) -> None:
    """A rich table when it fits the console, else the plain list. ``table``: rich.table.Table options."""
    if fits(console, columns, rows):
        out = Table(title=title, caption=caption or None, **table)
        for col in columns:
            out.add_column(col.header, justify=col.justify, no_wrap=not col.prose,
                           overflow="fold" if col.prose else "ignore")
        for row in rows:
            out.add_row(*row)
        console.print(out)
        return
    console.print(f"[bold]{title}[/]" if title else "")
    for row in rows:  # a number says what it counts; a name says itself
        console.print(f"[dim]{columns[0].header}[/] {row[0]}" if columns[0].justify == "right" else row[0],
                      soft_wrap=True)
        pairs = [f"[dim]{c.header}[/] {cell}" for c, cell in zip(columns[1:], row[1:], strict=True)
                 if cell and not c.prose]
        for line in _packed(pairs, console.width - INDENT):
            console.print(" " * INDENT + line, soft_wrap=True)
        for col, cell in zip(columns[1:], row[1:], strict=True):
            lines = Text.from_markup(f"[dim]{col.header}:[/] {cell}").wrap(console, console.width - INDENT)
            for wrapped in lines if cell and col.prose else ():
                wrapped.rstrip()
                console.print(Text(" " * INDENT) + wrapped, soft_wrap=True)
    if caption:
        console.print(caption, style="dim")


def _packed(pairs: Sequence[str], width: int, sep: str = " · ") -> list[str]:
    """``header value`` pairs on as few lines as fit ``width``, never split inside a pair."""
    lines: list[str] = []
    for pair in pairs:
        if lines and _width(lines[-1] + sep + pair) <= width:
            lines[-1] += sep + pair
        else:
            lines.append(pair)
    return lines
