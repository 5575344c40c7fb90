"""budget.csv (`month, cost_center, usd`) and its variance against the plan, per month and cost center.

A cost center is matched to a team of the demand by name; a team without a budget line, or a budget line
without planned spend, still shows (with 0 on the missing side).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path

from pydantic import Field

from capacity.csvio import InputError, RowProblem, duplicates, load_rows
from capacity.schema import Month, Name, Row, Usd
from components.errors import did_you_mean


class BudgetRow(Row):
    """One line of budget.csv: the money a cost center may spend in a month."""

    month: Month
    cost_center: Name = Field(description="a cost center; matched to the demand's team of the same name")
    usd: Usd

    @property
    def key(self) -> tuple[str, str]:
        return (self.month, self.cost_center)


class VarianceRow(Row):
    """Plan versus budget for one month and cost center: variance_usd > 0 means over budget."""

    month: str
    cost_center: str
    budget_usd: float
    plan_usd: float
    variance_usd: float


def _cost_center(label: str, teams: Collection[str], warn: list[str] | None,
                 ) -> Callable[[BudgetRow, int], Iterable[RowProblem]]:
    """A cost center that matches no team of the demand is a typo or a team the demand does not have: its
    budget would show as unspent and its team's spend as unbudgeted, distorting both rows of the team table."""

    def check(item: BudgetRow, line: int) -> Iterable[RowProblem]:
        if item.cost_center in teams:
            return []
        guess = did_you_mean(item.cost_center, teams)
        problem = RowProblem(label, line, "cost_center", item.cost_center,
                             "matches no team of the demand." + (f" Did you mean {guess!r}?" if guess else ""),
                             f"Write one of {', '.join(sorted(teams))} (cost centers are matched to teams by "
                             "name), or pass --allow-unmatched-budget to keep the row with a warning.")
        if warn is None:
            return [problem]
        warn.append(problem.render().replace(", or pass --allow-unmatched-budget to keep the row with a warning",
                                             "") + " Kept: its budget shows with no planned spend.")
        return []

    return check


def load_budget(path: Path, teams: Collection[str] | None = None, warn: list[str] | None = None) -> list[BudgetRow]:
    """budget.csv. With ``teams`` (the demand's), a cost center matching none is refused, or with ``warn`` (a
    list) kept and described there."""
    label = str(path)
    same = duplicates(label, "month, cost_center")
    if teams is None:
        check = same
    else:
        named = _cost_center(label, teams, warn)

        def check(item: BudgetRow, line: int) -> Iterable[RowProblem]:
            return [*same(item, line), *named(item, line)]

    rows = load_rows(path, BudgetRow, label, check)
    if not rows:
        raise InputError([RowProblem(label, None, None, None, "has no budget rows.",
                                     "Add rows: month,cost_center,usd.")])
    return rows


def variance(budget: Sequence[BudgetRow], plan_usd: Mapping[tuple[str, str], float]) -> list[VarianceRow]:
    """One row per (month, cost center) in either the budget or the plan (plan_usd keyed by (month, team))."""
    wanted: dict[tuple[str, str], float] = defaultdict(float)
    for b in budget:
        wanted[(b.month, b.cost_center)] += b.usd
    keys = sorted(set(wanted) | {k for k, v in plan_usd.items() if v})
    return [VarianceRow(month=m, cost_center=c, budget_usd=wanted.get((m, c), 0.0),
                        plan_usd=plan_usd.get((m, c), 0.0),
                        variance_usd=plan_usd.get((m, c), 0.0) - wanted.get((m, c), 0.0)) for m, c in keys]
