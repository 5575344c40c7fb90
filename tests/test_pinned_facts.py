"""Facts shared by the solver, the checker, the brute-force oracle, the PR cost delta and the budget policy, pinned to
literals with their sources, so that one wrong constant cannot agree with itself everywhere.

Every expected value here is typed in, never imported from the module under test.
"""

from __future__ import annotations

import pytest

from capacity import problem
from capacity.schema import Option, add_months, hours

# Days per month in the Gregorian calendar; 2028 is a leap year (divisible by 4, not a century),
# 2100 is not (a century not divisible by 400), 2000 was. https://www.timeanddate.com/date/leapyear.html
MONTH_HOURS = [
    ("2026-02", 28 * 24),  # 672
    ("2028-02", 29 * 24),  # 696
    ("2000-02", 29 * 24),
    ("2100-02", 28 * 24),
    ("2026-04", 30 * 24),  # 720
    ("2026-06", 30 * 24),
    ("2026-09", 30 * 24),
    ("2026-11", 30 * 24),
    ("2026-01", 31 * 24),  # 744
    ("2026-07", 31 * 24),
    ("2026-08", 31 * 24),
    ("2026-12", 31 * 24),
]


@pytest.mark.parametrize(("month", "expected"), MONTH_HOURS)
def test_hours_per_month_for_every_month_length(month: str, expected: int) -> None:
    assert hours(month) == expected


def test_a_year_of_months_is_8760_or_8784_hours() -> None:
    assert sum(hours(add_months("2026-01", k)) for k in range(12)) == 8760  # 365 x 24
    assert sum(hours(add_months("2028-01", k)) for k in range(12)) == 8784  # 366 x 24


@pytest.mark.parametrize(("start", "n", "expected"), [("2026-11", 2, "2027-01"), ("2026-12", 1, "2027-01"),
                                                      ("2026-01", 35, "2028-12"), ("2026-01", 36, "2029-01"),
                                                      ("2026-03", -3, "2025-12")])
def test_add_months_crosses_years(start: str, n: int, expected: str) -> None:
    assert add_months(start, n) == expected


# AWS Savings Plans / Reserved Instances: "One year is defined as 31,536,000 seconds (365 days). Three years is
# defined as 94,608,000 seconds (1,095 days)."
# https://docs.aws.amazon.com/savingsplans/latest/userguide/what-is-savings-plans.html
@pytest.mark.parametrize(("option", "months", "term_hours"), [
    (Option.COMMIT_1Y, 12, 31_536_000 // 3600),  # 8,760
    (Option.COMMIT_3Y, 36, 94_608_000 // 3600),  # 26,280
    (Option.ON_DEMAND, 0, 0),
    (Option.SPOT, 0, 0),
])
def test_commitment_terms(option: Option, months: int, term_hours: int) -> None:
    assert option.term_months == months
    assert option.term_hours == term_hours
    assert option.is_commit == (months > 0)


def test_unmet_demand_penalty_default_is_the_documented_1000_usd() -> None:
    # docs/capacity.md: "Unserved GPU-hours are allowed at a penalty (--penalty, default 1,000 USD per GPU-hour)"
    assert problem.DEFAULT_PENALTY_USD_PER_GPU_HOUR == 1000.0


def test_pr_month_is_730_hours() -> None:
    """docs/pr-comment.md: every node pool at its max nodes, 730 hours a month (8,760 h / 12)."""
    from gpufleet.review import cost
    from gpufleet.review.cost import PoolCost

    pool = PoolCost(key="k", cloud="aws", region="us-east-1", machine_type="p5.48xlarge", nodes=3, gpus=24,
                    gpu="H100", option="on_demand", usd_per_node_hour=10.0, source="test")
    assert pool.monthly_usd == pytest.approx(10.0 * 3 * 730)
    assert cost.total([pool, pool]) == pytest.approx(2 * 21_900)
    assert 8760 / 12 == 730


def test_budget_policy_month_is_730_hours_by_default() -> None:
    """docs/policies.md: stack-monthly-budget hours_per_month defaults to 730."""
    from policies.pack import all_policies

    budget = next(p for p in all_policies() if p.name == "stack-monthly-budget")
    assert budget.config_schema.properties["hours_per_month"]["default"] == 730
