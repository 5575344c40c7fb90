"""Offline preview cost per resource, against bare Pulumi mock registration of the same resources; and
`gpufleet preview --all` on the example stacks one stack at a time (`-j 1`) against one process per core (`-j 0`),
the latter with no SDK imported before forking (GPUFLEET_PREIMPORT=0) and with what 2+ stacks share (the default);
each without bytecode (as `make` installs: `pip --no-compile`, and PYTHONDONTWRITEBYTECODE=1 where it is set, compiles
every SDK module on every run) and with a warm bytecode cache (PYTHONPYCACHEPREFIX, a temporary directory filled by one
unmeasured run first); and one large stack (--clusters copies of aws-train's cluster, 50 by default: about 8,200
resources, target 15 s, issue #29) with the offline preview's levers (gpufleet/engine/levers.py: no cyclic GC while the
program runs, no SDK stack traces or debug logs, URNs of plain strings built directly, monitor calls in the loop, each
type unwrapped once, Structs of plain data read in one pass; gpufleet/engine/mocks.py: each request read once, outputs
of plain data straight into the Struct; gpufleet/engine/shares.py: the clusters in parallel shares) all off,
each off alone (the row names what is back at the SDK's default, or "one process"), and all on. The program's own
caches (the add-ons' YAML, once per content) are in every row.

Both sides of each comparison run in the same invocation, one after the other, so the ratios are measured side by
side (on a shared machine, absolute seconds say little; CPU seconds are printed too). Run: `make bench`.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import gc
import json
import os
import resource
import runpy
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import settings
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from gpufleet.engine.capture import run_program

PROGRAM = """
import pulumi, pulumi_aws as aws
p = aws.Provider("bench", region="us-east-1")
opts = pulumi.ResourceOptions(provider=p)
for i in range({pairs}):
    sg = aws.ec2.SecurityGroup(f"sg-{{i}}", vpc_id="vpc-0123456789abcdef0", description="bench", opts=opts)
    aws.vpc.SecurityGroupIngressRule(f"in-{{i}}", security_group_id=sg.id, ip_protocol="tcp", from_port=443,
                                     to_port=443, referenced_security_group_id=sg.id, opts=opts)
"""


class BareMocks(pulumi_mocks.Mocks):
    def new_resource(self, args: pulumi_mocks.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        return f"{args.name}-id", args.inputs

    def call(self, args: pulumi_mocks.MockCallArgs) -> dict[str, Any]:  # type: ignore[override]
        return {}


def bare(program: Path) -> None:
    asyncio.set_event_loop(asyncio.new_event_loop())
    settings.ROOT.set(None)
    pulumi_mocks.set_mocks(BareMocks(), project="bench", stack="bench", preview=True)
    _sync_await(run_pulumi_func(lambda: runpy.run_path(str(program), run_name="__main__")))


def ours(program: Path) -> None:
    graph = run_program("bench", {}, program)
    assert len(graph.resources) >= 2


def timed(fn: Any, program: Path, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        fn(program)
        best = min(best, time.perf_counter() - start)
    return best


ROOT = Path(__file__).resolve().parent.parent


def cli_run(jobs: int, preimport: str = "2", pycache: str = "") -> tuple[float, float, bytes]:
    """(wall s, CPU s of the children, stdout) of `gpufleet preview --all --format json --no-policies -j JOBS`
    with GPUFLEET_PREIMPORT=``preimport``; with ``pycache``, bytecode is read and written there."""
    cache = {"PYTHONPYCACHEPREFIX": pycache, "PYTHONDONTWRITEBYTECODE": ""} if pycache else {}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "gpufleet.cli", "preview", "--all", "--format", "json",
                           "--no-policies", "-j", str(jobs)], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "GPUFLEET_PREIMPORT": preimport,
                               **cache},
                          capture_output=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"preview -j {jobs} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout


RUNS = {"-j 1 (one at a time)": (1, "2"), "-j 0, nothing imported before forking": (0, "0"),
        "-j 0, SDKs 2+ stacks share imported first (default)": (0, "2")}


def cli_bench(console: Console) -> None:
    load = os.getloadavg()[0]
    results = {f"{label}, no bytecode": cli_run(jobs, preimport) for label, (jobs, preimport) in RUNS.items()}
    with tempfile.TemporaryDirectory() as pycache:
        cli_run(1, "2", pycache)  # fills the cache, not measured
        results |= {f"{label}, warm bytecode": cli_run(jobs, preimport, pycache)
                    for label, (jobs, preimport) in RUNS.items()}
    table = Table(title=f"gpufleet preview --all (example stacks, {os.cpu_count()} cores, load {load:.1f} at start, "
                        f"{os.getloadavg()[0]:.1f} at end)")
    for col in ("run", "wall s", "CPU s", "wall vs -j 1", "CPU vs -j 1", "CPU s / cores"):
        table.add_column(col, justify="right")
    wall1, cpu1, out1 = next(iter(results.values()))
    for label, (wall, cpu, _) in results.items():
        table.add_row(label, f"{wall:.1f}", f"{cpu:.1f}", f"{wall / wall1:.2f}", f"{cpu / cpu1:.2f}",
                      f"{cpu / (os.cpu_count() or 1):.1f}")
    console.print(table)
    same = all(out == out1 for _, _, out in results.values())
    console.print("identical output" if same else "[red]OUTPUT DIFFERS[/]")
    if not same:
        raise SystemExit(1)


# each lever's switch back to the SDK's default (gpufleet/engine/levers.py, gpufleet/engine/mocks.py): a middle row
# of the table turns one back, the first all of them
SWITCHES = {"GC passes": "GPUFLEET_GC_DEFAULTS", "stack traces": "GPUFLEET_SDK_DIAGNOSTICS",
            "mock monitor": "GPUFLEET_SDK_MONITOR", "URN chains": "GPUFLEET_SDK_URNS",
            "RPC threads": "GPUFLEET_SDK_THREADS", "type unwrap": "GPUFLEET_SDK_TYPES",
            "Struct reader": "GPUFLEET_SDK_READER"}
ONE_PROCESS = "one process (-j 1)"  # the stack's clusters in one run, not in shares (gpufleet/engine/shares.py)
LEVERS = {"all off (SDK)": ({env: "1" for env in SWITCHES.values()}, 1),
          **{label: ({env: "1"}, 0) for label, env in SWITCHES.items()},
          ONE_PROCESS: ({}, 1),
          "all on": ({}, 0)}
TARGET_S = 15.0  # issue #29: 50 clusters in one stack previewed within 15 s (on an idle machine)


def large_stack(directory: Path, clusters: int) -> str:
    """A stack of ``clusters`` copies of aws-train's cluster (about 150 resources each)."""
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.aws-train.yaml").read_text())
    fleet = doc["config"]["gpufleet:fleet"]
    fleet["clusters"] = [{**copy.deepcopy(fleet["clusters"][0]), "name": f"train{i}"} for i in range(clusters)]
    fleet["monthly_budget_usd"] *= clusters
    (directory / "Pulumi.large.yaml").write_text(yaml.safe_dump(doc))
    return "large"


def child_run(args: list[str], env: dict[str, str]) -> tuple[float, float, float, bytes]:
    """(wall s, CPU s, peak RSS MiB, stdout) of one CLI run (os.wait4: CPU of the run and the processes it forked and
    waited for, the largest one's peak RSS)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen([sys.executable, "-m", "gpufleet.cli", *args], cwd=ROOT, stdout=out,
                                stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT), **env})
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"gpufleet {' '.join(args)} failed with {env}")
        out.seek(0)
        return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out.read()


def large_bench(console: Console, clusters: int) -> None:
    """One stack of ``clusters`` clusters, previewed with the preview's levers all off, each off alone, all on."""
    with tempfile.TemporaryDirectory() as tmp:
        stack = large_stack(Path(tmp), clusters)
        args = ["preview", "--stack", stack, "--stacks-dir", tmp, "--format", "json", "--no-policies"]
        load = os.getloadavg()[0]
        results = {label: child_run([*args, "-j", str(jobs)], env) for label, (env, jobs) in LEVERS.items()}
    resources = len(json.loads(next(iter(results.values()))[3])["resources"])
    table = Table(title=f"one stack of {clusters} aws-train clusters ({resources:,} resources), load {load:.1f} at "
                        f"start, {os.getloadavg()[0]:.1f} at end")
    table.add_column("SDK back", no_wrap=True)
    for col in ("wall s", "CPU s", "wall x", "CPU x", "ms/res", "MiB", "MiB x"):
        table.add_column(col, justify="right", no_wrap=True)
    table.caption = ("each middle row puts one SDK default back, or runs the clusters in one process; x: ratio to all "
                     "off; ms/res: CPU ms per resource (every process); MiB: peak RSS (the largest process)")
    wall0, cpu0, rss0, out0 = next(iter(results.values()))
    for label, (wall, cpu, rss, _) in results.items():
        table.add_row(label, f"{wall:.1f}", f"{cpu:.1f}", f"{wall / wall0:.2f}", f"{cpu / cpu0:.2f}",
                      f"{1000 * cpu / resources:.2f}", f"{rss:,.0f}", f"{rss / rss0:.2f}")
    console.print(table)
    wall, cpu, *_ = results["all on"]
    if clusters == 50:
        console.print(f"target (issue #29, idle machine): 50 clusters within {TARGET_S:.0f} s; here {wall:.1f} s wall, "
                      f"{cpu:.1f} s CPU ({wall / TARGET_S:.2f}x the target) at load {load:.1f}")
    same = all(out == out0 for *_, out in results.values())
    console.print("identical output" if same else "[red]OUTPUT DIFFERS[/]")
    if not same:
        raise SystemExit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000, 10000])
    parser.add_argument("--repeats", type=int, default=3, help="best of N per size (1 for the largest)")
    parser.add_argument("--cli-only", action="store_true", help="only the `preview --all` comparison")
    parser.add_argument("--clusters", type=int, default=50, help="clusters in the large stack (0: skip it)")
    parser.add_argument("--large-only", action="store_true", help="only the large stack's comparison")
    args = parser.parse_args()
    console = Console()
    if not args.large_only:
        cli_bench(console)
    if args.clusters:
        large_bench(console, args.clusters)
    if args.cli_only or args.large_only:
        return
    rows = []
    with tempfile.TemporaryDirectory() as tmp, Progress(console=console) as progress:
        task = progress.add_task("previewing", total=len(args.sizes))
        for size in args.sizes:
            program = Path(tmp) / f"program_{size}.py"
            program.write_text(PROGRAM.format(pairs=max(1, (size - 1) // 2)))
            repeats = 1 if size >= 10000 else args.repeats
            base, mine = timed(bare, program, repeats), timed(ours, program, repeats)
            rows.append((size, base, mine))
            progress.advance(task)
    table = Table(title="Offline preview vs bare Pulumi mocks (best of runs, same process)")
    for col in ("resources", "bare ms/resource", "preview ms/resource", "ratio", "growth vs first size"):
        table.add_column(col, justify="right")
    first = rows[0][2] / rows[0][0]
    for size, base, mine in rows:
        table.add_row(f"{size:,}", f"{1000 * base / size:.3f}", f"{1000 * mine / size:.3f}", f"{mine / base:.2f}x",
                      f"{(mine / size) / first:.2f}x")
    console.print(table)


if __name__ == "__main__":
    main()
