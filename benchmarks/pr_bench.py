"""`gpufleet pr` on two changes, each in a throwaway clone of this checkout with a comment appended to the stack files
it touches: the four example stacks issue #29 measured (aws-train, gcp-train, azure-train, dev) and every example
stack. Each runs cold (no cached merge-base previews) and cached (the same run again), with the outputs compared;
the four-stack runs are held to the issue's targets. Then the policy pack's lever side by side: the policy SDK's
own servicer against policies/serve.py's (each resource decoded once per request, not once per policy), both in
this process on the four stacks' head graphs, answering the same requests.

All runs are in one invocation, one after the other, so the ratios are measured side by side (on a shared machine,
absolute seconds say little; CPU seconds, children included, are printed too, with the load average before and
after). Run: `make bench`, or `.venv/bin/python benchmarks/pr_bench.py`.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
FOUR = ["aws-train", "gcp-train", "azure-train", "dev"]  # the change issue #29 measured
TARGETS = {"cold": 20.0, "cached": 12.0}  # seconds for the four-stack change, issue #29, on an idle machine


def cpu(who: int = resource.RUSAGE_CHILDREN) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def measure(run: Callable[[], object]) -> tuple[float, float]:
    wall, used = time.perf_counter(), cpu()
    run()
    return time.perf_counter() - wall, cpu() - used


def clone(scratch: Path, stacks: list[str]) -> Path:
    repo = scratch / "repo"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "-B", "main"], check=True)
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "-b", "change"], check=True)
    for stack in stacks:
        path = repo / "stacks" / f"Pulumi.{stack}.yaml"
        path.write_text(path.read_text() + "# touched by benchmarks/pr_bench.py\n")
    return repo


def pr(repo: Path, cache: Path, out: Path) -> None:
    env = {**os.environ, "GPUFLEET_CACHE_DIR": str(cache), "PYTHONPATH": str(repo)}
    done = subprocess.run([sys.executable, "-m", "gpufleet.cli", "pr", "--base", "main", "--format", "json"],
                          cwd=repo, env=env, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 3):  # passed, or blocked; 1 (a stack not previewed) would time a failure
        sys.exit(f"gpufleet pr failed ({done.returncode}): {done.stderr[-2000:]}")
    out.write_text(done.stdout)


def change(stacks: list[str]) -> tuple[tuple[float, float], tuple[float, float], bool]:
    """(cold, cached) as (wall s, CPU s), and whether their outputs are the same."""
    with tempfile.TemporaryDirectory(prefix="gpufleet-pr-bench-") as tmp:
        scratch = Path(tmp)
        repo = clone(scratch, stacks)
        cold = measure(lambda: pr(repo, scratch / "cache", scratch / "cold.json"))
        cached = measure(lambda: pr(repo, scratch / "cache", scratch / "cached.json"))
        return cold, cached, (scratch / "cold.json").read_text() == (scratch / "cached.json").read_text()


def servicers(stacks: list[str]) -> tuple[float, float, bool]:
    """CPU seconds of the SDK's servicer and of serve.Servicer answering the four stacks' requests, and whether
    every response was the same."""
    sys.path.insert(0, str(ROOT))
    from pulumi_policy import EnforcementLevel

    from gpufleet.checks.analyzer import Analyzer
    from gpufleet.engine.capture import Graph
    from gpufleet.review.diff import resources_of
    from policies import serve
    from policies.pack import NAME, all_policies

    args = [a for s in stacks for a in ("--stack", s)]
    done = subprocess.run([sys.executable, "-m", "gpufleet.cli", "preview", *args, "--format", "json",
                           "--no-policies"], cwd=ROOT, capture_output=True, text=True, check=True)
    documents = json.loads(done.stdout)
    serve.install()
    both = [cls(NAME, "0.0.1", all_policies(), EnforcementLevel.ADVISORY)
            for cls in (serve.SdkServicer, serve.Servicer)]
    spent, same = [0.0, 0.0], [True]

    class Twin:
        def __getattr__(self, method: str) -> Callable[[object], object]:
            def call(request: object) -> object:
                answers = []
                for i, servicer in enumerate(both):
                    start = cpu(resource.RUSAGE_SELF)
                    answers.append(getattr(servicer, method)(request, None))
                    spent[i] += cpu(resource.RUSAGE_SELF) - start
                same[0] &= answers[0] == answers[1]
                return answers[1]
            return call

    client = Analyzer(Twin())
    for d in documents:
        client.configure(d.get("policy_config"))
        client.analyze(Graph("gpufleet", d["stack"], resources_of(d)))
    return spent[0], spent[1], same[0]


def main() -> None:
    console = Console()
    every = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
    load = os.getloadavg()[0]
    console.print(f"[dim]four stacks: {', '.join(FOUR)}; every stack: {', '.join(every)}; load {load:.1f}[/]")
    four, alls = change(FOUR), change(every)
    table = Table("change", "run", "wall s", "CPU s", "vs", title="gpufleet pr")
    for label, (cold, cached, _) in ((f"four stacks ({len(FOUR)})", four), (f"every stack ({len(every)})", alls)):
        is_four = label.startswith("four")
        for run, (wall, used) in (("cold", cold), ("merge base cached", cached)):
            target = TARGETS["cold" if run == "cold" else "cached"]
            against = (f"target ≤ {target:.0f} s: {'met' if wall <= target else 'missed'}" if is_four else
                       f"{wall / (four[0] if run == 'cold' else four[1])[0]:.2f} x four stacks")
            if run != "cold":
                against = f"{wall / cold[0]:.2f} x cold; {against}"
            table.add_row(label if run == "cold" else "", run, f"{wall:.1f}", f"{used:.1f}", against)
    console.print(table)
    for label, (_, _, same) in (("four stacks", four), ("every stack", alls)):
        console.print(f"{label}: cold and cached outputs " + ("identical" if same else "[red]differ[/]"))
    sdk, served, same = servicers(FOUR)
    lever = Table("policy pack servicer", "CPU s", "vs", title="the pack's lever, four stacks' head graphs")
    lever.add_row("pulumi_policy's own (decodes per policy)", f"{sdk:.2f}", "")
    lever.add_row("policies/serve.py (decodes per request)", f"{served:.2f}", f"{served / sdk:.2f} x")
    console.print(lever)
    console.print("responses identical" if same else "[red]responses differ[/]")
    after = os.getloadavg()[0]
    console.print(f"[dim]load before {load:.1f}, after {after:.1f} (the targets are for an idle machine)[/]")


if __name__ == "__main__":
    main()
