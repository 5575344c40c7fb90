"""One planning run: the MILP, the greedy baseline, the relaxed-quota solve and the independent check.

Pure: rows in, results out. The CLI (capacity/cli.py) reads files, shows progress and writes outputs.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from capacity import check, greedy, optimize, problem, requests, stay
from capacity.optimize import ProgressFn, Solution
from capacity.plan import Plan
from capacity.schema import DemandRow, HeldRow, OfferRow, QuotaRequest, QuotaRow

RELAXED_GAP = 0.02  # quota requests are advice, rounded up to whole GPUs: a looser proof is enough
RELAXED_TIME_S = 30.0


@dataclass
class Run:
    problem: problem.Problem
    solution: Solution
    greedy: Plan
    greedy_seconds: float
    relaxed: Solution | None
    requests: list[QuotaRequest]
    verdict: check.Verdict
    held_left_out: list[str] = field(default_factory=list)  # ledger entries not used as held capacity, and why

    @property
    def plan(self) -> Plan:
        return self.solution.plan

    @property
    def requests_proven(self) -> bool | None:
        """Whether the quota requests come from a relaxed solve proven within its gap (None: no such solve)."""
        return None if self.relaxed is None else self.relaxed.status == "optimal"

    @property
    def unmet_after_requests(self) -> float | None:
        """GPU-hours still unserved if every quota request were granted (no offer, or the solve's limits)."""
        return None if self.relaxed is None else self.granted.unmet_gpu_hours

    @property
    def granted(self) -> Plan:
        """The plan if every quota request is granted: the relaxed solve's plan for the GPU models it re-planned
        (those short in the plan), the plan's own lines for the others. GPU models share no offer, quota or
        demand row, so the two parts add up to one plan."""
        if self.relaxed is None:
            return self.plan
        short = {s.gpu for s in self.plan.shortfall}
        mine, theirs = self.plan, self.relaxed.plan

        def pick(own: list, relaxed: list) -> list:
            return [x for x in own if x.gpu not in short] + [x for x in relaxed if x.gpu in short]

        return Plan(pick(mine.lines, theirs.lines), pick(mine.commitments, theirs.commitments),
                    pick(mine.shortfall, theirs.shortfall), mine.penalty)


def plan(demand: Sequence[DemandRow], offers: Sequence[OfferRow], quotas: Sequence[QuotaRow] | None,
         penalty: float = problem.DEFAULT_PENALTY_USD_PER_GPU_HOUR, gap: float = problem.DEFAULT_GAP,
         time_limit_s: float = problem.DEFAULT_TIME_LIMIT_S, progress: ProgressFn | None = None,
         stay_threshold: float = stay.DEFAULT_THRESHOLD, held: Sequence[HeldRow] = ()) -> Run:
    """Plan demand over the offers within the quotas, using the capacity already ``held`` first (sunk)."""
    built = problem.build(demand, offers, quotas, penalty, held)
    started = time.perf_counter()
    baseline = greedy.greedy(built)
    greedy_seconds = time.perf_counter() - started
    # the greedy plan is every part's start: the plan returned is never worse than the baseline
    solution = optimize.solve(built, gap=gap, time_limit_s=time_limit_s, progress=progress, starts=[baseline],
                              stay_threshold=stay_threshold)
    relaxed = None
    found: list[QuotaRequest] = []
    short = {s.gpu for s in solution.plan.shortfall}
    if built.quotas_given and short:
        relaxed = optimize.solve(built, gap=max(gap, RELAXED_GAP), time_limit_s=min(time_limit_s, RELAXED_TIME_S),
                                 progress=progress, relax=True, only=short, starts=[solution.plan])
        found = requests.quota_requests(built, relaxed)
    result = solution.plan
    verdict = check.check(demand, offers, quotas, result.lines, result.commitments, result.shortfall, penalty, held)
    return Run(built, solution, baseline, greedy_seconds, relaxed, found, verdict)
