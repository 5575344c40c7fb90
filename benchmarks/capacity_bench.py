"""Capacity planner benchmark: generated instances of three sizes, solved with HiGHS, against greedy.

    .venv/bin/python benchmarks/capacity_bench.py            # S, M and L
    .venv/bin/python benchmarks/capacity_bench.py --sizes M --seeds 7 8 9

S: 6 months x 3 clouds x 10 regions x 4 GPUs; M: 24 months x 30 regions x 6 GPUs x 50 teams with gang rows;
L: 36 months x 60 regions x 100 demand classes (capacity/synth.py says how they are drawn). Prints solve
time, proven gap, LP bound and cost versus the greedy baseline; every plan goes through the independent
checker. Target: M proven within 0.1 % in under 10 s on a 2-core machine. Prints, never asserts.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from capacity import check, greedy, optimize, problem, synth


def run(size: str, seed: int, time_limit_s: float) -> dict[str, object]:
    spec = synth.SIZES[size]
    instance = synth.generate(spec, seed=seed)
    built = problem.build(instance.demand, instance.offers, instance.quotas)
    solution = optimize.solve(built, time_limit_s=time_limit_s)
    started = time.perf_counter()
    baseline = greedy.greedy(built)
    greedy_s = time.perf_counter() - started
    verdict = check.check(instance.demand, instance.offers, instance.quotas, solution.plan.lines,
                          solution.plan.commitments, solution.plan.shortfall, built.penalty)
    regions = len({(o.cloud, o.region) for o in instance.offers})
    return {
        "size": size, "seed": seed, "months": spec.months, "regions": regions,
        "gpus": len({o.gpu for o in instance.offers}), "rows": len(instance.demand),
        "gang_rows": sum(1 for d in instance.demand if d.gang_gpus > 1),
        "columns": solution.stats["columns"], "integers": solution.stats["integers"],
        "seconds": solution.solve_seconds, "status": solution.status, "gap": solution.gap,
        "objective": solution.plan.objective_usd, "lp": solution.lp_relaxation_usd,
        "greedy": baseline.objective_usd, "greedy_s": greedy_s, "unmet": solution.plan.unmet_gpu_hours,
        "feasible": verdict.ok,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", default=["S", "M", "L"], choices=sorted(synth.SIZES))
    parser.add_argument("--seeds", nargs="+", type=int, default=[7])
    parser.add_argument("--time-limit", type=float, default=120.0, help="seconds per solve")
    args = parser.parse_args()
    head = (f"{'size':<4} {'seed':>4} {'months':>6} {'regions':>7} {'rows':>6} {'gang':>5} {'cols':>7} {'ints':>6} "
            f"{'solve s':>8} {'status':<10} {'gap':>8} {'LP/opt':>8} {'opt/greedy':>10} {'greedy s':>8} "
            f"{'unmet GPU-h':>11} {'checked':>7}")
    print(head)
    print("-" * len(head))
    for size in args.sizes:
        for seed in args.seeds:
            r = run(size, seed, args.time_limit)
            lp_ratio = f"{r['lp'] / r['objective']:.4f}" if r["lp"] and r["objective"] else "n/a"
            print(f"{r['size']:<4} {r['seed']:>4} {r['months']:>6} {r['regions']:>7} {r['rows']:>6} "
                  f"{r['gang_rows']:>5} {r['columns']:>7} {r['integers']:>6} {r['seconds']:>8.2f} {r['status']:<10} "
                  f"{r['gap']:>8.4%} "
                  f"{lp_ratio:>8} {r['objective'] / r['greedy']:>10.4f} {r['greedy_s']:>8.2f} "
                  f"{r['unmet']:>11,.0f} {'ok' if r['feasible'] else 'FAILED':>7}", flush=True)


if __name__ == "__main__":
    main()
