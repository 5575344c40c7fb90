"""What a planning run leaves behind: the CSV and JSON files, and the terminal summary.

summary.json is machine output with a stable, documented shape (docs/capacity.md, "summary.json"):
keys never change meaning; new keys may be added; ``schema_version`` changes when a key is removed or
renamed.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress as Bar
from rich.progress import SpinnerColumn, TextColumn, TimeElapsedColumn

from capacity import held, staleness
from capacity.csvio import write_models
from capacity.optimize import Progress, ProgressFn
from capacity.planner import Run
from capacity.schema import CommitmentLine, HeldRow, PlanLine, QuotaRequest, ShortfallLine
from capacity.terminal import Column, names, print_table

SCHEMA_VERSION = 1
FILES = ("plan.csv", "commitments.csv", "shortfall.csv", "quota_requests.csv", "held.csv", "summary.json")


def _usd(x: float) -> float:
    return round(x, 2)


def price_dates(run: Run) -> list[str]:
    """The as_of dates of every offer the problem could buy from."""
    out = []
    for site in run.problem.sites.values():
        offers = [site.on_demand, site.spot, *(c.offer for c in site.commits)]
        out += [o.as_of for o in offers if o is not None and o.as_of]
    return out


def held_uses(run: Run) -> list[held.HeldUse]:
    return held.uses(run.problem.held, run.plan, run.problem.months)


def summary(run: Run, stale_after_days: int = staleness.STALE_AFTER_DAYS) -> dict[str, Any]:
    s, g = run.solution, run.greedy
    relaxed = run.relaxed
    return {
        "prices": staleness.of(price_dates(run), stale_after_days).as_dict(),
        "overdue_quota_requests": sum(staleness.overdue(r.request_by) for r in run.requests),
        "schema_version": SCHEMA_VERSION,
        "status": s.status,
        "total_usd": _usd(s.plan.total_usd),
        "usage_usd": _usd(s.plan.usage_usd),
        "commitment_usd": _usd(s.plan.commitment_usd),
        "unmet_gpu_hours": round(s.plan.unmet_gpu_hours, 3),
        "penalty_usd_per_gpu_hour": run.problem.penalty,
        "objective_usd": _usd(s.plan.objective_usd),
        "lower_bound_usd": _usd(s.lower_bound_usd),
        "gap": round(s.gap, 6),
        "lp_relaxation_usd": None if s.lp_relaxation_usd is None else _usd(s.lp_relaxation_usd),
        "greedy_total_usd": _usd(g.total_usd),
        "greedy_objective_usd": _usd(g.objective_usd),
        "greedy_unmet_gpu_hours": round(g.unmet_gpu_hours, 3),
        "saving_vs_greedy_usd": _usd(g.objective_usd - s.plan.objective_usd),
        "solve_seconds": round(s.solve_seconds, 3),
        "greedy_seconds": round(run.greedy_seconds, 3),
        "relaxed_solve_seconds": None if relaxed is None else round(relaxed.solve_seconds, 3),
        "quota_requests": len(run.requests),
        "unmet_after_requests_gpu_hours": (None if run.unmet_after_requests is None
                                           else round(run.unmet_after_requests, 3)),
        "unmet_value_usd": _usd(s.plan.unmet_gpu_hours * run.problem.penalty),
        "granted_total_usd": None if relaxed is None else _usd(run.granted.total_usd),
        "granted_unmet_value_usd": None if relaxed is None else _usd(run.granted.unmet_gpu_hours
                                                                     * run.problem.penalty),
        "relaxed_status": None if relaxed is None else relaxed.status,
        "relaxed_gap": None if relaxed is None else round(relaxed.gap, 6),
        "quota_requests_proven": run.requests_proven,
        "first_month": run.problem.months[0],
        "last_month": run.problem.months[-1],
        "months": len(run.problem.months),
        "demand_rows": len(run.problem.demand),
        "model": dict(sorted(s.stats.items())),
        "check": {"ok": run.verdict.ok, "violations": len(run.verdict.violations)},
        "held": held.as_json(held_uses(run), run.held_left_out),
    }


def write(run: Run, out: Path, stale_after_days: int = staleness.STALE_AFTER_DAYS) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    write_models(out / "plan.csv", PlanLine, run.plan.lines)
    write_models(out / "commitments.csv", CommitmentLine, run.plan.commitments)
    write_models(out / "shortfall.csv", ShortfallLine, run.plan.shortfall)
    write_models(out / "quota_requests.csv", QuotaRequest, run.requests)
    write_models(out / "held.csv", HeldRow, run.problem.held)
    data = summary(run, stale_after_days)
    (out / "summary.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return data


@contextmanager
def solving(console: Console) -> Iterator[ProgressFn]:
    """A live line while HiGHS works: phase, best plan so far, proven bound, gap, elapsed time."""
    with Bar(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console,
             transient=True) as bar:
        task = bar.add_task("building the model", total=None)
        last = [0.0]

        def update(p: Progress) -> None:
            now = time.perf_counter()
            if now - last[0] < 0.05 and p.incumbent_usd is None:
                return
            last[0] = now
            text = f"[bold]{p.phase}[/]"
            if p.incumbent_usd is not None:
                text += f"  best ${p.incumbent_usd:,.0f}"
            if p.bound_usd is not None:
                text += f"  bound ${p.bound_usd:,.0f}"
            if p.gap is not None:
                text += f"  gap {p.gap:.3%}"
            bar.update(task, description=text)

        yield update


def render(run: Run, console: Console, out: Path | None = None,
           stale_after_days: int = staleness.STALE_AFTER_DAYS) -> None:
    s, p = run.solution, run.plan
    head = [("horizon", f"{run.problem.months[0]} .. {run.problem.months[-1]} ({len(run.problem.months)} months)"),
            ("total spend", f"${p.total_usd:,.0f}")]
    head.append(("  usage / commitments", f"${p.usage_usd:,.0f} / ${p.commitment_usd:,.0f}"))
    head.append(("unmet GPU-hours", f"{p.unmet_gpu_hours:,.0f}" + (" [red](shortfall)[/]" if p.shortfall else "")))
    if p.shortfall:
        head.append(("  value at the penalty rate", f"${p.unmet_gpu_hours * run.problem.penalty:,.0f} "
                     f"(${run.problem.penalty:,.0f}/GPU-hour; not spend)"))
    if run.relaxed is not None:
        g = run.granted
        head.append(("spend if quota requests granted", f"${g.total_usd:,.0f} ({g.unmet_gpu_hours:,.0f} GPU-h unmet)"))
    head.append(("objective (spend + penalty)", f"${p.objective_usd:,.0f}"))
    proof = "proven within the gap" if s.status == "optimal" else "[yellow]stopped before proving the gap[/]"
    head.append(("status", f"{s.status}, gap {s.gap:.4%} in {s.solve_seconds:.1f} s ({proof})"))
    head.append(("proven lower bound", f"${s.lower_bound_usd:,.0f}"))
    if s.lp_relaxation_usd is not None:
        head.append(("LP relaxation bound", f"${s.lp_relaxation_usd:,.0f}"))
    saving = run.greedy.objective_usd - p.objective_usd
    head.append(("greedy baseline", f"${run.greedy.total_usd:,.0f} (+{run.greedy.unmet_gpu_hours:,.0f} GPU-h unmet)"))
    head.append(("saving vs greedy", f"${saving:,.0f}" + (f" ({saving / run.greedy.objective_usd:.1%})"
                                                           if run.greedy.objective_usd > 0 else "")))
    print_table(console, "Capacity plan", (Column(""), Column("", prose=True)), head, show_header=False,
                title_justify="left")
    prices = staleness.of(price_dates(run), stale_after_days).as_dict()
    console.print(f"Prices as of {prices['as_of'] or 'an unstated date'}"
                  + (f" ({prices['age_days']} days old)" if prices["age_days"] is not None else ""))
    if prices["warning"]:
        console.print(f"[yellow]warning: {prices['warning']}[/]", highlight=False)
    _spend(run, console)
    if p.commitments:
        print_table(console, "Commitments",
                    names("cloud", "region", "machine type", "term", "from", "nodes#", "GPUs#", "USD#"),
                    [(c.cloud.value, c.region, c.machine_type, c.option.value, c.start_month, str(c.nodes), str(c.gpus),
                      f"{c.usd_total:,.0f}") for c in p.commitments[:15]],
                    caption=f"... {len(p.commitments) - 15} more in commitments.csv" if len(p.commitments) > 15 else "",
                    title_justify="left")
    _held(run, console)
    if p.shortfall:
        worst = sorted(p.shortfall, key=lambda x: (-x.unmet_gpu_hours, x.month, x.team))[:10]
        print_table(console, "Unserved demand and why (largest first)",
                    [*names("month", "team", "gpu", "gang#", "unmet GPU-h#"), Column("why", prose=True)],
                    [(x.month, x.team, x.gpu, str(x.gang_gpus), f"{x.unmet_gpu_hours:,.0f}", x.reason) for x in worst],
                    caption=f"... {len(p.shortfall) - 10} more in shortfall.csv" if len(p.shortfall) > 10 else "",
                    title_justify="left")
    if run.requests:
        rows = [(r.cloud.value, r.region, r.gpu, r.market.value, str(r.current_max_gpus), str(r.requested_max_gpus),
                 f"+{r.native_increase} {r.native_unit} {r.native_quota}", r.month_needed,
                 r.request_by + (" [red]OVERDUE[/]" if staleness.overdue(r.request_by) else ""))
                for r in run.requests]
        after = run.unmet_after_requests
        caption = "" if after is None else (f"if granted, unmet GPU-hours fall from {p.unmet_gpu_hours:,.0f} to "
                                            f"{after:,.0f}; file by = month needed - the cloud's usual lead time")
        if run.requests_proven is False and run.relaxed is not None:
            caption += (f"\n[yellow]not proven: the relaxed solve stopped at its time limit "
                        f"(gap {run.relaxed.gap:.3%})[/]")
        print_table(console, "Quota increases that remove the shortfall",
                    names("cloud", "region", "gpu", "market", "now", "ask", "native", "needed", "file by"), rows,
                    caption=caption.strip(), title_justify="left")
    if not run.verdict.ok:
        console.print(f"[red]The independent check found {len(run.verdict.violations)} violation(s):[/]")
        for line in run.verdict.violations[:10]:
            console.print(f"  - {line}")
    if out is not None:
        console.print(f"Wrote {', '.join(FILES)} to {out}")


def _spend(run: Run, console: Console) -> None:
    by: dict[tuple[str, str], float] = defaultdict(float)
    for line in run.plan.lines:
        by[(line.cloud.value, line.option.value)] += line.gpu_hours
    if not by:
        return
    options = sorted({o for _, o in by})
    rows = [(cloud, *(f"{by.get((cloud, o), 0.0):,.0f}" for o in options)) for cloud in sorted({c for c, _ in by})]
    print_table(console, "GPU-hours by cloud and option", names("cloud", *(f"{o}#" for o in options)), rows,
                title_justify="left")


def _held(run: Run, console: Console) -> None:
    """The capacity already held: what the plan runs on it, what sits idle, and what ends while it is in use."""
    doc = held.as_json(held_uses(run))
    if not doc["capacity"]:
        return
    rows = [(u["id"], f"{u['cloud']}/{u['region']}", u["machine_type"], str(u["gpus"]), u["end"] or "until released",
             f"{u['gpu_hours']:,.0f}", f"{u['used_gpu_hours']:,.0f}", f"{u['idle_gpu_hours']:,.0f}")
            for u in doc["capacity"]]
    sunk = "unknown (a rate the ledger does not know)" if doc["sunk_usd"] is None else f"${doc['sunk_usd']:,.0f}"
    print_table(console, "Held capacity (used first; already paid for, not in the spend above)",
                names("id", "where", "machine type", "GPUs#", "end", "held GPU-h#", "used#", "idle#"), rows,
                caption=f"sunk cost in the horizon: {sunk}", title_justify="left")
    for u in doc["capacity"]:
        if u["ends_inside_plan"]:
            console.print(f"[yellow]ends inside the plan:[/] {held.ending(u)}", highlight=False)
