"""Capacity planner benchmark: generated instances, side by side per seed in one run.

    .venv/bin/python benchmarks/capacity_bench.py                         # S, M and H, seed 7
    .venv/bin/python benchmarks/capacity_bench.py --sizes H --seeds 1 2 3 4 5 --time-limit 300
    .venv/bin/python benchmarks/capacity_bench.py --sizes HL --solvers planner greedy
    .venv/bin/python benchmarks/capacity_bench.py --rows 100000 --time-limit 120   # memory at scale

Sizes (capacity/synth.py says how they are drawn): S 6 months x 10 regions x 4 GPUs; M 24 months x 30
regions x 6 GPUs x 50 teams; L 36 months x 60 regions x 100 demand classes; H the quota-bound family
(24 months, 32 teams, 9 regions over 3 clouds, 4 GPU models, gangs of 8..512 GPUs, 6-14 % of the demand
unservable at the optimum); HL the same over 48 months and 100 teams. ``--rows N`` draws H-like demand
spread over enough teams to make N rows.

Per seed, each solver runs in its own process (so peak memory is its own, read from getrusage):
  planner  capacity.optimize.solve with the greedy plan as its start (what `capacity plan` runs);
  greedy   capacity.greedy.greedy;
  highs    plain HiGHS on the monolithic model (every GPU model in one MILP), same time limit and gap.
Columns: objective (cost + penalty), proven bound, gap, seconds, the first second its plan was within 1 %
and within 0.1 % of the best bound any solver proved for that seed, peak resident memory, and whether the
independent checker accepts the plan. Prints, never asserts.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from capacity import check, greedy, highs, milp, optimize, problem, synth
from capacity.problem import DEFAULT_GAP, DEFAULT_TIME_LIMIT_S

SOLVERS = ("planner", "greedy", "highs")
START = "2026-01"  # instances start here whatever the day, so runs on different days solve the same instances


def instance(size: str, seed: int, rows: int | None) -> synth.Instance:
    if rows is not None:
        return synth.generate_rows(rows, seed=seed, start=START)
    if size in synth.HARD:
        return synth.generate_hard(dataclasses.replace(synth.HARD[size], start=START), seed=seed)
    return synth.generate(dataclasses.replace(synth.SIZES[size], start=START), seed=seed)


def one(solver: str, size: str, seed: int, time_limit_s: float, rows: int | None) -> dict[str, Any]:
    """Run one solver on one instance in this process; the trace is (seconds, incumbent, bound) points."""
    inst = instance(size, seed, rows)
    started = time.perf_counter()
    built = problem.build(inst.demand, inst.offers, inst.quotas)
    trace: list[tuple[float, float | None, float | None]] = []
    out: dict[str, Any] = {"rows": len(inst.demand), "gang_rows": sum(1 for d in inst.demand if d.gang_gpus > 1)}
    if solver == "greedy":
        plan = greedy.greedy(built)
        objective, bound, status, gap = plan.objective_usd, None, "heuristic", None
    elif solver == "planner":
        baseline = greedy.greedy(built)
        s = optimize.solve(built, time_limit_s=time_limit_s, starts=[baseline],
                           progress=lambda p: trace.append((time.perf_counter() - started, p.incumbent_usd,
                                                            p.bound_usd)))
        plan, objective, bound, status, gap = s.plan, s.objective_usd, s.lower_bound_usd, s.status, s.gap
        out["model"] = s.stats
    else:
        plan, objective, bound, status, gap = _plain_highs(built, time_limit_s, started, trace)
    seconds = time.perf_counter() - started
    trace.append((seconds, objective, bound))
    verdict = check.check(inst.demand, inst.offers, inst.quotas, plan.lines, plan.commitments, plan.shortfall,
                          built.penalty)
    out.update({"objective": objective, "bound": bound, "status": status, "gap": gap, "seconds": seconds,
                "trace": trace, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "checked": verdict.ok and abs(verdict.objective_usd - objective) <= 1e-6 * max(1.0, objective)})
    return out


def _plain_highs(built: problem.Problem, time_limit_s: float, started: float, trace: list) -> tuple:
    """HiGHS alone on the whole model: default options but the gap, time limit and 2 threads' worth of nothing
    else (no start, no heuristics of ours); the plan read back with the planner's decoder."""
    from capacity.decode import Usage, decode
    from capacity.plan import PlanBuilder

    model = milp.build(built)
    h = highs.highs_for(model, integral=True, gap=DEFAULT_GAP, time_limit_s=max(0.0, time_limit_s))

    def report(event: Any) -> None:
        out = event.data_out
        trace.append((time.perf_counter() - started, out.mip_primal_bound, out.mip_dual_bound))

    h.cbMipImprovingSolution.subscribe(report)
    h.cbMipInterrupt.subscribe(report)
    h.run()
    import numpy as np

    x = np.asarray(h.getSolution().col_value)
    builder = PlanBuilder(built)
    decode(built, model, x, builder, Usage())
    plan = builder.finish()
    info = h.getInfo()
    status = "optimal" if h.getModelStatus().name == "kOptimal" else h.getModelStatus().name.removeprefix("k")
    return plan, plan.objective_usd, float(info.mip_dual_bound), status, float(info.mip_gap)


def _first_within(trace: list, bound: float, tolerance: float) -> float | None:
    for seconds, incumbent, _ in trace:
        if incumbent is not None and bound > 0 and incumbent <= bound * (1 + tolerance) + 1e-6:
            return seconds
    return None


def _child(solver: str, size: str, seed: int, time_limit_s: float, rows: int | None) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--one", solver, "--sizes", size, "--seeds", str(seed),
           "--time-limit", str(time_limit_s)] + ([] if rows is None else ["--rows", str(rows)])
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["killed"])[-1][:80]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", default=["S", "M", "H"], choices=sorted({*synth.SIZES, *synth.HARD}))
    parser.add_argument("--seeds", nargs="+", type=int, default=[7])
    parser.add_argument("--time-limit", type=float, default=DEFAULT_TIME_LIMIT_S, help="seconds per solve")
    parser.add_argument("--solvers", nargs="+", default=list(SOLVERS), choices=SOLVERS)
    parser.add_argument("--rows", type=int, help="an H-like instance with this many demand rows instead")
    parser.add_argument("--one", choices=SOLVERS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.sizes[0], args.seeds[0], args.time_limit, args.rows)))
        return
    head = (f"{'size':<4} {'seed':>4} {'rows':>7} {'solver':<8} {'objective':>16} {'bound':>16} {'gap':>8} "
            f"{'status':<10} {'s':>7} {'s to 1%':>7} {'s to .1%':>8} {'peak MB':>8} {'vs greedy':>9} {'checked':>7}")
    print(head)
    print("-" * len(head))
    for size in (["rows"] if args.rows else args.sizes):
        for seed in args.seeds:
            results = {s: _child(s, size if size != "rows" else "H", seed, args.time_limit, args.rows)
                       for s in args.solvers}
            bounds = [r["bound"] for r in results.values() if r.get("bound") is not None]
            best = max(bounds) if bounds else None
            base = results.get("greedy", {}).get("objective")
            for solver, r in results.items():
                if "error" in r:
                    print(f"{size:<4} {seed:>4} {'':>7} {solver:<8} failed: {r['error']}", flush=True)
                    continue
                to1 = _first_within(r["trace"], best, 0.01) if best else None
                to01 = _first_within(r["trace"], best, 0.001) if best else None
                gap = "" if r["gap"] is None else f"{r['gap']:.4%}"
                bound = "" if r["bound"] is None else f"{r['bound']:,.0f}"
                ratio = "" if not base else f"{r['objective'] / base:.4f}"
                print(f"{size:<4} {seed:>4} {r['rows']:>7} {solver:<8} {r['objective']:>16,.0f} {bound:>16} {gap:>8} "
                      f"{r['status']:<10} {r['seconds']:>7.1f} {_s(to1):>7} {_s(to01):>8} {r['peak_mb']:>8.0f} "
                      f"{ratio:>9} {'ok' if r['checked'] else 'FAILED':>7}", flush=True)


def _s(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.1f}"


if __name__ == "__main__":
    main()
