"""Offline preview cost per resource, against bare Pulumi mock registration of the same resources.

Both sides run the same generated program (N security groups, each with an ingress rule depending on it)
in this process, one after the other, so the ratio is measured side by side. Run: `make bench`.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import runpy
import tempfile
import time
from pathlib import Path
from typing import Any

from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import settings
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from gpufleet.capture import run_program

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000, 10000])
    parser.add_argument("--repeats", type=int, default=3, help="best of N per size (1 for the largest)")
    args = parser.parse_args()
    console = Console()
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
