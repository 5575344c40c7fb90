"""Preview several stacks at once, one process each, results in the order the stacks were named: the same output as
one at a time. The parent first loads the SDK modules the stacks need (gpufleet/engine/preimport.py) so the forked
children share them instead of each importing them again. One stack alone runs its clusters in shares, a process each
(gpufleet/engine/shares.py). ``GPUFLEET_PREIMPORT`` (for benchmarks/preview_bench.py): 0
imports nothing first, N what N or more stacks share (default 2).

A program failure comes back as the ProgramError it raised; bad config is in the Preview's ``errors`` as always.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

from gpufleet.engine.capture import ProgramError
from gpufleet.engine.preimport import preimport
from gpufleet.engine.preview import Preview, preview_stack

Result = Preview | ProgramError


def _one(name: str, stacks_dir: Path, processes: int = 1) -> Result:
    try:
        return preview_stack(name, stacks_dir, processes)
    except ProgramError as err:
        return err


def workers(jobs: int, stacks: int) -> int:
    """``jobs`` (0: one per core), never more than the stacks."""
    return max(1, min(jobs or os.cpu_count() or 1, stacks))


def preview_many(names: list[str], stacks_dir: Path, jobs: int = 0, progress: Callable[[str], None] = lambda _: None,
                 on_result: Callable[[Result], None] = lambda _: None) -> Iterator[tuple[str, Result]]:
    """(stack, Preview or ProgramError) in ``names`` order; ``progress`` gets a line and ``on_result`` the result as
    each stack finishes (in the order they finish; from the pool's thread when several run at once)."""
    count = workers(jobs, len(names))
    if count == 1 or "fork" not in multiprocessing.get_all_start_methods():
        for i, name in enumerate(names, 1):
            if len(names) > 1:
                progress(f"[{i}/{len(names)}] previewing {name}…")
            result = _one(name, stacks_dir, jobs if len(names) == 1 else 1)
            on_result(result)
            yield name, result
        return
    done = 0

    def finished(future: Future[Result]) -> None:
        nonlocal done
        done += 1
        result = future.result()
        progress(f"[{done}/{len(names)}] {result.stack if isinstance(result, Preview) else 'a stack'} previewed")
        on_result(result)

    shared_by = int(os.environ.get("GPUFLEET_PREIMPORT") or 2)
    if shared_by:
        preimport(names, stacks_dir, shared_by)
    progress(f"previewing {len(names)} stacks, {count} at a time…")
    with ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("fork")) as pool:
        futures = [pool.submit(_one, name, stacks_dir) for name in names]
        for f in futures:
            f.add_done_callback(finished)
        for name, f in zip(names, futures, strict=True):
            yield name, f.result()
