"""One stack's program run as parallel shares of its clusters, a forked process each, merged into the graph one run
records: a stack of many clusters previews on every core instead of one.

The program registers every resource while building one cluster (stacks/__main__.py); a run builds only its share
(stacks.config.SHARE). A resource two shares registered (same type, name and parent) is what one run would register
twice, and fails the preview as one run does: `pulumi up` refuses it. Warnings keep the program's order: shares are
consecutive clusters.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpufleet.engine.capture import Graph, ProgramError, Resource, duplicate_urn, run_program, tree_order
from gpufleet.engine.preimport import preimport
from stacks.config import PEERS_DIR, SHARE


@dataclass(frozen=True)
class _Failed:  # a ProgramError across the process boundary: an exception's pickle keeps only its message
    message: str
    registered: int


def shares(processes: int, clusters: int) -> int:
    """How many shares to run: one per process (0: per CPU core), never more than the clusters, one where processes
    cannot be forked."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return max(1, min(processes or os.cpu_count() or 1, clusters))


def run_in_shares(stack: str, config: dict[str, Any], stacks_dir: Path, count: int) -> Graph:
    """The graph of ``stack``'s program, run as ``count`` shares of its clusters (1: in this process)."""
    if count == 1:
        return run_program(stack, config)
    preimport([stack], stacks_dir, 1)  # the children share the SDK modules instead of each importing them
    with ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("fork")) as pool:
        runs = list(pool.map(_share, [(stack, config, stacks_dir, i, count) for i in range(count)]))
    return merge(runs)


def _share(job: tuple[str, dict[str, Any], Path, int, int]) -> Graph | _Failed:
    stack, config, stacks_dir, index, count = job
    PEERS_DIR.set(stacks_dir)
    SHARE.set((index, count))
    try:
        return run_program(stack, config)
    except ProgramError as err:
        return _Failed(str(err), err.registered)


def merge(runs: list[Graph | _Failed]) -> Graph:
    """The shares' graphs as one run's; the first failure in cluster order as the one run's failure."""
    resources: dict[tuple[str, str | None], Resource] = {}
    for run in runs:
        if isinstance(run, _Failed):
            raise ProgramError(run.message, len(resources) + run.registered)
        for resource in run.resources:
            if resources.setdefault((resource.key, resource.parent), resource) is not resource:
                where = f"under {resource.parent}" if resource.parent else "at the stack's root"
                raise ProgramError("the stack program failed under the offline preview: "
                                   + duplicate_urn(f"{resource.key} {where}"), len(resources))
    graphs = [r for r in runs if isinstance(r, Graph)]
    return Graph(project=graphs[0].project, stack=graphs[0].stack, resources=tree_order(list(resources.values())),
                 warnings=[w for g in graphs for w in g.warnings])
