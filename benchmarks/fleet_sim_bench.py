"""Fleet simulator benchmark: one job trace replayed against the example fleet under each MultiKueue dispatch
policy, side by side in one run, for the public Alibaba GPU trace and a generated training trace.

    .venv/bin/python benchmarks/fleet_sim_bench.py                    # both traces, load 0.9, seed 7
    .venv/bin/python benchmarks/fleet_sim_bench.py --trace generated --jobs 20000 --load 1.1 --seeds 1 2 3
    .venv/bin/python benchmarks/fleet_sim_bench.py --spot-interruptions-per-hour 0.05 --json out.json
    .venv/bin/python benchmarks/fleet_sim_bench.py --on-demand-burst-nodes 4   # what-if: on-demand beside prepaid

The fleet: every cluster of the example fleet's worker stacks (--stacks) is a worker, its GPU pools the flavors
(tier from the capacity type, rate from the price table, capacity from nodes.max), each team's quota per flavor
as the rendered ClusterQueues have it. Policies (capacity/fleetsim/model.py): Kueue's all-at-once dispatcher (its
default), its incremental dispatcher over workers listed by name (step 3), and the plan order (capacity/dispatch.py:
prepaid first, then spot where the team's work may use it, then on-demand; incremental, step 1). The trace is
scaled to the fleet so each team offers --load x the GPUs its queues may hold: the generated one by stretching or
squeezing its arrivals, the public one (its last --days: it is a snapshot whose early days hold a few long-lived
pods) by overlaying copies rotated by seeded offsets, then squeezing the rest (capacity/fleetsim/traces.py).
Columns: jobs, queue wait median / p95 (minutes), GPU utilisation (run / paid), prepaid utilisation, share of
GPU-hours on on-demand (spill) and on spot, lost GPU-hours (evictions), cost over the common horizon (the longest
makespan of the policies: prepaid capacity is paid over all of it). Prints, never asserts. Limits of the model:
docs/fleet-queue.md, "The simulator and its limits".
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from capacity.dispatch import Tier
from capacity.fleetsim import fleet as simfleet
from capacity.fleetsim import metrics, traces
from capacity.fleetsim.engine import simulate
from capacity.fleetsim.model import POLICIES, Job, Worker
from capacity.prices.table import Prices
from stacks.config import load_stack_file, stack_file

WORKER_STACKS = ("aws-train", "azure-train", "gcp-train")
# The Alibaba trace has QoS classes, not teams: latency-sensitive and guaranteed work is the team that must not
# run on spot, best-effort work the team that may.
ALIBABA_TEAMS = {"LS": ("pretrain", "H100", False), "Guaranteed": ("pretrain", "H100", False),
                 "Burstable": ("pretrain", "H100", False), "BE": ("research", "H100", True)}
GENERATED = (traces.TeamLoad("pretrain", "H100", False, 0.6, (8, 16, 32, 64), 6.0),
             traces.TeamLoad("research", "H100", True, 0.3, (1, 2, 4, 8), 1.0),
             traces.TeamLoad("finetune", "H200", False, 0.1, (8,), 2.0))  # the teams of the worker stacks
console = Console(width=150)


def trace(name: str, jobs: int, days: float, seed: int) -> tuple[list[Job], str]:
    if name == "alibaba":
        loaded, source = traces.alibaba(ALIBABA_TEAMS)
        return (traces.last_days(loaded, days),
                f"{source['repository']}@{source['commit'][:12]}:{source['path']}, last {days:g} days")
    return traces.generated(GENERATED, jobs, seed), f"generated ({jobs} jobs, seed {seed})"


def gpus_by_team(workers: list[Worker], jobs: list[Job]) -> dict[str, int]:
    """The GPUs of its model each team's queues may hold across the fleet (spot only for spot work)."""
    out: dict[str, int] = {}
    for team, (gpu, spot_ok) in simfleet.team_demand(jobs).items():
        out[team] = sum(o.gpus for w in workers for o in simfleet.offers(w, team)
                        if o.gpu == gpu and (spot_ok or o.tier is not Tier.SPOT))
    return out


def bench(name: str, workers: list[Worker], jobs: list[Job], load: float, seed: int, spot_rate: float,
          progress: Progress) -> tuple[list[metrics.Row], dict[str, float]]:
    scaled = traces.per_team(jobs, gpus_by_team(workers, jobs), load, seed, copies=name == "alibaba")
    demand = simfleet.team_demand(scaled)
    runs, seconds = [], {}
    for policy in POLICIES:
        task = progress.add_task(f"{name}: {policy.name}", total=len(scaled))
        started = time.perf_counter()
        runs.append(simulate(workers, simfleet.orders(workers, policy, demand), policy, scaled, seed=seed,
                             spot_interruptions_per_hour=spot_rate,
                             progress=lambda n, t=task: progress.update(t, completed=n)))
        seconds[policy.name] = time.perf_counter() - started
        progress.remove_task(task)
    horizon = max(r.end_s for r in runs)
    return [metrics.summarise(r, workers, horizon) for r in runs], seconds


def table(title: str, rows: list[metrics.Row]) -> Table:
    out = Table(title=title)
    for col in ("policy", "jobs", "wait p50 min", "wait p95 min", "GPU util", "prepaid util", "on-demand",
                "spot", "lost GPU-h", "cost USD", "makespan h"):
        out.add_column(col, justify="left" if col == "policy" else "right")
    for r in rows:
        out.add_row(r.policy, str(r.jobs), f"{r.wait_median_min:.1f}", f"{r.wait_p95_min:.1f}",
                    f"{r.gpu_utilisation:.1%}", f"{r.prepaid_utilisation:.1%}", f"{r.on_demand_share:.1%}",
                    f"{r.spot_share:.1%}", f"{r.lost_gpu_hours:,.0f}", f"{r.cost_usd:,.0f}", f"{r.makespan_h:,.0f}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trace", choices=("alibaba", "generated", "both"), default="both")
    parser.add_argument("--stacks", nargs="+", default=list(WORKER_STACKS),
                        help="worker stacks (stacks/Pulumi.<name>.yaml)")
    parser.add_argument("--jobs", type=int, default=5000, help="jobs of the generated trace")
    parser.add_argument("--days", type=float, default=28, help="the public trace's last days replayed")
    parser.add_argument("--load", type=float, default=0.9, help="offered GPUs / the fleet's GPUs of those models")
    parser.add_argument("--seeds", type=int, nargs="+", default=[7])
    parser.add_argument("--spot-interruptions-per-hour", type=float, default=0.0)
    parser.add_argument("--on-demand-burst-nodes", type=int, default=0,
                        help="what-if: an on-demand pool of this many nodes beside each prepaid pool")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    stacks, prices = {s: load_stack_file(stack_file(s)) for s in args.stacks}, Prices.load()
    workers = (simfleet.with_on_demand_burst(stacks, prices, args.on_demand_burst_nodes) if args.on_demand_burst_nodes
               else simfleet.workers(stacks, prices))
    fleet_note = f", what-if: +{args.on_demand_burst_nodes} on-demand nodes per prepaid pool" * bool(
        args.on_demand_burst_nodes)
    out = []
    with Progress(console=console, transient=True) as progress:
        for name in ("alibaba", "generated") if args.trace == "both" else (args.trace,):
            for seed in args.seeds:
                jobs, source = trace(name, args.jobs, args.days, seed)
                rows, seconds = bench(name, workers, jobs, args.load, seed, args.spot_interruptions_per_hour,
                                      progress)
                console.print(table(f"{source}, load {args.load}, seed {seed}{fleet_note}", rows))
                console.print("simulated in " + ", ".join(f"{k} {v:.1f}s" for k, v in seconds.items()))
                out.append({"trace": name, "source": source, "seed": seed, "load": args.load,
                            "on_demand_burst_nodes": args.on_demand_burst_nodes,
                            "rows": [r.as_dict() for r in rows]})
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
