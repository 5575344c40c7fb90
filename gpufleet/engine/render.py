"""Terminal rendering of previews with rich: notes, the resource tree, counts by type, GPUs by model, errors."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.tree import Tree

from capacity.terminal import names, print_table
from gpufleet.engine.capture import Resource
from gpufleet.engine.preview import Preview


def resource_tree(preview: Preview) -> Tree:
    root = Tree(f"[bold]stack {preview.stack}[/]")
    resources = preview.graph.resources if preview.graph else []
    nodes: dict[str | None, Tree] = {None: root}
    for r in resources:  # tree order: parents come first
        parent = nodes.get(r.parent, root)
        nodes[r.key] = parent.add(_label(r))
    return root


def _label(r: Resource) -> str:
    if r.custom:
        return f"{r.name} [dim]{r.type}[/]"
    return f"[bold cyan]{r.name}[/] [cyan]{r.type}[/]"


def summary_tables(preview: Preview) -> Group:
    counts = Table(title=f"stack {preview.stack}: resources by type", show_edge=False, min_width=48)
    counts.add_column("type")
    counts.add_column("count", justify="right")
    for kind, n in preview.counts_by_type().items():
        counts.add_row(kind, str(n))
    counts.add_row("[bold]total[/]", f"[bold]{sum(preview.counts_by_type().values())}[/]")
    gpus = Table(title=f"stack {preview.stack}: GPUs by model (at nodes.max)", show_edge=False, min_width=48)
    gpus.add_column("GPU")
    gpus.add_column("GPUs", justify="right")
    for model, n in preview.gpus().items():
        gpus.add_row(model, f"{n:,}")
    return Group(counts, gpus)


def deploy_panel(preview: Preview) -> Panel:
    """Each cluster's deploy path: its stages, where each runs, and who gets paged."""
    lines = []
    for name, path in preview.deploy().items():
        lines.append(f"[bold]{name}[/]: {path['route']} ({escape(path['how'])})")
        lines += [escape(f"  stage {s['name']} on [{', '.join(s['runs_on'])}]: {s['what']}") for s in path["stages"]]
        lines.append(f"  paging: {', '.join(path['receivers'])}" if path["receivers"] else
                     "  paging: [yellow]no receiver: critical alerts page nobody[/] (addons.alerting.receivers)")
    return Panel("\n".join(lines), title=f"stack {preview.stack}: deploy paths", border_style="blue")


POOL_COLUMNS = (*names("pool", "machine type", "GPUs#", "nodes#", "capacity", "zone"),)


def print_pools(console: Console, preview: Preview) -> None:
    """The GPU pools as a reviewer checks them first: machine, GPUs at nodes.max, min-max nodes, how bought, zone."""
    rows = [(f"{p['cluster']}/{p['pool']}", p["machine_type"], f"{p['gpus_max']:,} {p['gpu']}",
             f"{p['nodes_min']}-{p['nodes_max']}", p["capacity"] + (f" {p['capacity_id']}" if p["capacity_id"] else ""),
             p["zone"]) for p in preview.pools()]
    if rows:
        print_table(console, f"stack {preview.stack}: GPU pools", POOL_COLUMNS, rows, show_edge=False)


def print_notes(console: Console, documents: Iterable[Mapping[str, Any]]) -> None:
    """Each preview document's notes, once each, prefixed by its stack (example stacks share cluster names)."""
    seen: set[tuple[str, str]] = set()
    for doc in documents:
        for note in doc.get("notes") or []:
            if (doc["stack"], note) not in seen:
                seen.add((doc["stack"], note))
                console.print(f"[dim]stack {doc['stack']}:[/] {note}", highlight=False, soft_wrap=True)


def print_preview(console: Console, preview: Preview, *, tree: bool = True) -> None:
    if not preview.ok:
        body = "\n".join(f"• {e}" for e in preview.errors)
        console.print(Panel(body, title=f"[red]stack {preview.stack}: invalid fleet — nothing was built[/]",
                            border_style="red"))
        return
    if preview.notes():
        console.print(Panel("\n".join(f"• {n}" for n in preview.notes()), title=f"stack {preview.stack}: notes",
                            border_style="blue"))
    console.print(deploy_panel(preview))
    if tree:
        console.print(resource_tree(preview))
    console.print(summary_tables(preview))
    print_pools(console, preview)
