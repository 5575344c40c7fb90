"""`gpufleet pr` on a change that touches every example stack (a comment appended to each stack file), in a
throwaway clone of this checkout: cold (no cached merge-base previews) and cached (the same run again), with the
outputs compared; and the merge-base lever side by side: one preview subprocess per stack, as many at once as
cores (how `pr` ran the base before), against one subprocess previewing every stack (forking after one import of
the SDKs, how it runs now).

All runs are in one invocation, one after the other, so the ratios are measured side by side (on a shared machine,
absolute seconds say little; CPU seconds, children included, are printed too). Run: `make bench`.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {"cold": 20.0, "cached": 12.0}  # seconds, issue #15


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def measure(run: Callable[[], object]) -> tuple[float, float]:
    wall, used = time.perf_counter(), cpu()
    run()
    return time.perf_counter() - wall, cpu() - used


def clone(scratch: Path) -> Path:
    repo = scratch / "repo"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "-B", "main"], check=True)
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "-b", "change"], check=True)
    for stack in sorted((repo / "stacks").glob("Pulumi.*.yaml")):
        stack.write_text(stack.read_text() + "# touched by benchmarks/pr_bench.py\n")
    return repo


def pr(repo: Path, cache: Path, out: Path) -> None:
    env = {**os.environ, "GPUFLEET_CACHE_DIR": str(cache), "PYTHONPATH": str(repo)}
    done = subprocess.run([sys.executable, "-m", "gpufleet.cli", "pr", "--base", "main", "--format", "json"],
                          cwd=repo, env=env, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        sys.exit(f"gpufleet pr failed ({done.returncode}): {done.stderr[-2000:]}")
    out.write_text(done.stdout)


def base_previews(repo: Path, stacks: list[str], together: bool) -> None:
    env = {**os.environ, "PYTHONPATH": str(repo)}

    def preview(names: list[str]) -> None:
        args = [a for s in names for a in ("--stack", s)]
        subprocess.run([sys.executable, "-m", "gpufleet.cli", "preview", *args, "--format", "json", "--no-policies"],
                       cwd=repo, env=env, capture_output=True, check=True)

    if together:
        preview(stacks)
        return
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        list(pool.map(lambda s: preview([s]), stacks))


def main() -> None:
    console = Console()
    table = Table("run", "wall s", "CPU s", "vs", title="gpufleet pr, every example stack touched")
    with tempfile.TemporaryDirectory(prefix="gpufleet-pr-bench-") as tmp:
        scratch = Path(tmp)
        repo = clone(scratch)
        stacks = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in (repo / "stacks").glob("Pulumi.*.yaml"))
        console.print(f"[dim]{len(stacks)} stacks: {', '.join(stacks)}; load {os.getloadavg()[0]:.1f}[/]")
        cold = measure(lambda: pr(repo, scratch / "cache", scratch / "cold.json"))
        cached = measure(lambda: pr(repo, scratch / "cache", scratch / "cached.json"))
        same = (scratch / "cold.json").read_text() == (scratch / "cached.json").read_text()
        table.add_row("pr, cold", f"{cold[0]:.1f}", f"{cold[1]:.1f}", f"target ≤ {TARGETS['cold']:.0f} s")
        table.add_row("pr, merge base cached", f"{cached[0]:.1f}", f"{cached[1]:.1f}",
                      f"{cached[0] / cold[0]:.2f} x cold; target ≤ {TARGETS['cached']:.0f} s")
        apart = measure(lambda: base_previews(repo, stacks, together=False))
        together = measure(lambda: base_previews(repo, stacks, together=True))
        table.add_row("base: one subprocess per stack", f"{apart[0]:.1f}", f"{apart[1]:.1f}", "")
        table.add_row("base: one subprocess, all stacks", f"{together[0]:.1f}", f"{together[1]:.1f}",
                      f"{together[0] / apart[0]:.2f} x wall, {together[1] / apart[1]:.2f} x CPU")
    console.print(table)
    console.print("outputs identical (cold, cached)" if same else "[red]cold and cached outputs differ[/]")
    console.print(f"[dim]load after: {os.getloadavg()[0]:.1f}[/]")


if __name__ == "__main__":
    main()
