"""A platform engineer compares MultiKueue dispatch for the fleet: from the example worker stacks and an accepted
plan to each team's worker order, then the simulator's table for a trace, as the benchmark command prints it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from capacity.dispatch_plan import team_orders
from capacity.fleetsim import fleet as simfleet
from capacity.fleetsim.engine import simulate
from capacity.fleetsim.model import Dispatcher, Job, Policy
from capacity.prices.table import Prices
from capacity.schema import PlanLine
from stacks.config import load_stack_file, stack_file

ROOT = Path(__file__).resolve().parents[2]
STACKS = ("aws-train", "azure-train", "gcp-train")


def test_the_plan_decides_where_a_teams_job_lands_and_the_bench_compares_the_policies(tmp_path: Path) -> None:
    fleets = {s: load_stack_file(stack_file(s)) for s in STACKS}
    workers = simfleet.workers(fleets, Prices.load())
    sites = {f"{s}/{c.name}": (f.spec.cloud.value, c.spec.region) for s, f in fleets.items() for c in f.clusters}
    # the accepted plan keeps pretrain's H100 on the GCP reservation (us-central1, the gcp-train stack's region)
    plan = [PlanLine(month="2027-01", team="pretrain", gpu="H100", cloud="gcp", region="us-central1",
                     option="reservation", gpu_hours=64 * 744, usd=0, gang_gpus=8, spot_ok=False)]
    order = team_orders(plan, "2027-01", workers, sites)[("pretrain", "H100")]
    assert order[0] == "gcp-train/train"  # though AWS's capacity block is the cheaper prepaid H100
    assert set(order) == {"aws-train/train", "azure-train/train", "gcp-train/train"}  # every worker with the queue

    # one 64-GPU job on an idle fleet: the plan's order puts it where the plan put the team's capacity
    job = [Job(0, 0.0, "pretrain", "H100", 64, 3600.0)]
    run = simulate(workers, {"pretrain": order}, Policy("plan", Dispatcher.INCREMENTAL, "plan", 1), job)
    assert dict(run.by_worker_gpu_s) == {"gcp-train/train": 64 * 3600.0}

    # the benchmark command, as a user runs it, prints one row per policy and writes the same rows as JSON
    out = tmp_path / "sim.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "fleet_sim_bench.py"), "--trace", "generated",
                           "--jobs", "300", "--json", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "wait p95 min" in done.stdout and "prepaid util" in done.stdout
    [result] = json.loads(out.read_text())
    rows = {r["policy"]: r for r in result["rows"]}
    assert set(rows) == {"all-at-once", "incremental", "plan-order"}
    for row in rows.values():
        assert row["jobs"] == 300 and 0 <= row["prepaid_utilisation"] <= 1 and row["cost_usd"] > 0
