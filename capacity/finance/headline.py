"""The report's headline: what the plan costs, what it costs if the quota requests are granted, what the unmet
demand is worth at the penalty rate, and the budget position of the plan that serves ALL demand.

A plan that leaves demand unserved is cheap because it does not buy the GPUs: calling it "under budget" would
tell finance the opposite of the truth. So the budget is compared with the plan that serves every GPU-hour:
the plan itself when nothing is unmet, else the plan with every quota request granted. When even that leaves
demand unmet (no offer sells the GPU, or a gang larger than any quota), no plan serves all demand and the
position is "not known" (never "within budget"): the report says what is missing and what it is worth.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from capacity.plan import EPS_GPU_HOURS, Plan
from capacity.planner import Run
from capacity.schema import add_months


class Position(StrEnum):
    OVER = "over"  # the plan that serves all demand costs more than the budget
    WITHIN = "within"  # it costs the budget or less
    UNKNOWN = "unknown"  # no plan serves all demand: its cost is not known


def spend_in(plan: Plan, months: Iterable[str]) -> float:
    """Money a plan pays in some months: usage lines of those months, plus each commitment's charge spread
    evenly over its term months (as everywhere in the report)."""
    wanted = set(months)
    usd = sum(line.usd for line in plan.lines if line.month in wanted)
    for c in plan.commitments:
        per_month = c.usd_total / c.option.term_months
        usd += per_month * sum(add_months(c.start_month, k) in wanted for k in range(c.option.term_months))
    return usd


@dataclass(frozen=True)
class Headline:
    total_usd: float  # the plan's spend over the horizon (summary.json total_usd)
    unmet_gpu_hours: float
    penalty_usd_per_gpu_hour: float
    requests: int
    granted_total_usd: float | None  # the plan's spend if every quota request is granted; None: no requests
    granted_unmet_gpu_hours: float | None
    budget_usd: float | None  # the budget of the planned months; None: no budget.csv
    budget_months: tuple[str, ...]
    full_in_budget_usd: float | None  # spend in the budgeted months of the plan that serves all demand
    best_in_budget_usd: float | None  # ... of the plan that serves the most (the granted one when requests exist)

    @property
    def unmet_value_usd(self) -> float:
        return self.unmet_gpu_hours * self.penalty_usd_per_gpu_hour

    @property
    def granted_unmet_value_usd(self) -> float | None:
        hours = self.granted_unmet_gpu_hours
        return None if hours is None else hours * self.penalty_usd_per_gpu_hour

    @property
    def position(self) -> Position | None:
        if self.budget_usd is None:
            return None
        if self.full_in_budget_usd is None:
            return Position.UNKNOWN
        return Position.OVER if self.full_in_budget_usd > self.budget_usd else Position.WITHIN

    @property
    def variance_usd(self) -> float | None:
        """Plan serving all demand minus budget (positive: over); None when no such plan or no budget."""
        if self.budget_usd is None or self.full_in_budget_usd is None:
            return None
        return self.full_in_budget_usd - self.budget_usd

    def position_text(self) -> str | None:
        """One sentence: the call, with the figures behind it."""
        if self.budget_usd is None:
            return None
        budget = f"a budget of {_usd(self.budget_usd)} for the {len(self.budget_months)} budgeted month(s)"
        granted = " with every quota request granted" if self.unmet_gpu_hours > EPS_GPU_HOURS else ""
        if self.variance_usd is not None:
            word = "Over budget by" if self.variance_usd > 0 else "Within budget,"
            tail = "" if self.variance_usd > 0 else " to spare"
            return (f"{word} {_usd(abs(self.variance_usd))}{tail}: the plan that serves all demand{granted} costs "
                    f"{_usd(self.full_in_budget_usd)} in the budgeted months against {budget}.")
        left = self.granted_unmet_gpu_hours if self.granted_unmet_gpu_hours is not None else self.unmet_gpu_hours
        best = self.best_in_budget_usd or 0.0
        already = ("already over it" if best > self.budget_usd else "under it, but the full cost is higher")
        return (f"Not known: no plan serves all demand. {_num(left)} GPU-hours stay unmet even "
                f"{'if every quota request is granted' if self.requests else 'at any price the offers list'} "
                f"(worth {_usd(left * self.penalty_usd_per_gpu_hour)} at the penalty rate). Serving what can be "
                f"served costs {_usd(best)} in the budgeted months against {budget}: {already}.")


def build(run: Run, budget_usd: float | None, budget_months: Iterable[str]) -> Headline:
    months = tuple(sorted(set(budget_months)))
    if not months:  # a budget.csv whose months all lie outside the horizon budgets nothing here: no call to make
        budget_usd = None
    plan, granted = run.plan, run.granted
    full = next((p for p in (plan, granted) if not p.shortfall), None)  # shortfall lines: unmet beyond rounding
    return Headline(
        total_usd=plan.total_usd, unmet_gpu_hours=plan.unmet_gpu_hours, penalty_usd_per_gpu_hour=run.problem.penalty,
        requests=len(run.requests), granted_total_usd=None if run.relaxed is None else granted.total_usd,
        granted_unmet_gpu_hours=None if run.relaxed is None else granted.unmet_gpu_hours,
        budget_usd=budget_usd, budget_months=months,
        full_in_budget_usd=None if budget_usd is None or full is None else spend_in(full, months),
        best_in_budget_usd=None if budget_usd is None else spend_in(granted, months))


def _usd(x: float | None) -> str:
    return "-" if x is None else ("-" if x < 0 else "") + f"${abs(x):,.2f}"


def _num(x: float) -> str:
    return f"{x:,.0f}"
