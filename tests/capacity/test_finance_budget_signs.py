"""Budget figures finance acts on, on plans small enough to compute by hand: the per-team variance's sign (over budget
is shown as over, in every output) and a commitment's charge spread over its own term.

Variance, by hand. November 2026 has 30 x 24 = 720 hours; one offer, on demand at $10 per GPU-hour, a quota of 20
GPUs (the 15 GPUs used on average fit).
alpha needs 7,200 GPU-hours ($72,000) and beta 3,600 ($36,000). Each has a budget of $50,000 for November:
  alpha  72,000 - 50,000 = +$22,000: over budget
  beta   36,000 - 50,000 = -$14,000: under budget
  total  108,000 - 100,000 = +$8,000

Spread, by hand. January 2026 (744 hours): t needs 8 GPUs all month (5,952 GPU-hours). On demand costs $30 per
GPU-hour ($178,560); one 8-GPU node on a 3-year commitment at $0.50 costs 8 x 26,280 x 0.5 = $105,120, the plan buys
it. Spread evenly over its 36 term months, January carries 105,120 / 36 = $2,920; the other 35 months, past the
one-month horizon, $102,200. (A 1-year commitment would spread over 12 months: $105,120 / 12 = $8,760 is wrong here.)
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
from openpyxl import load_workbook

from capacity import planner
from capacity import report as plan_report
from capacity.finance import markdown
from capacity.finance import report as finance
from capacity.finance.budget import BudgetRow
from capacity.finance.model import AFTER, Report
from capacity.schema import DemandRow, OfferRow, Option, QuotaRow


def offer(option: Option, usd: float) -> OfferRow:
    return OfferRow.model_validate({"cloud": "aws", "region": "us-east-1", "machine_type": "p5.48xlarge",
                                    "gpu": "H100", "gpus_per_node": 8, "option": option.value,
                                    "usd_per_gpu_hour": usd, "source": "test", "as_of": "2026-11-01"})


QUOTA = QuotaRow.model_validate({"cloud": "aws", "region": "us-east-1", "gpu": "H100", "market": "on_demand",
                                 "max_gpus": 20})


def demand(month: str, team: str, gpu_hours: float) -> DemandRow:
    return DemandRow(month=month, team=team, gpu="H100", gpu_hours=gpu_hours, gang_gpus=1, spot_ok=False)


def write(run: planner.Run, out: Path, budget: list[BudgetRow] | None) -> Report:
    return finance.write(run, plan_report.write(run, out), out, budget, on=dt.date(2026, 1, 1))


@pytest.fixture(scope="module")
def over_and_under(tmp_path_factory: pytest.TempPathFactory) -> tuple[Report, Path]:
    run = planner.plan([demand("2026-11", "alpha", 7_200), demand("2026-11", "beta", 3_600)],
                       [offer(Option.ON_DEMAND, 10.0)], [QUOTA], time_limit_s=20)
    out = tmp_path_factory.mktemp("signs")
    budget = [BudgetRow(month="2026-11", cost_center=team, usd=50_000) for team in ("alpha", "beta")]
    return write(run, out, budget), out


def test_a_team_over_budget_has_a_positive_variance(over_and_under: tuple[Report, Path]) -> None:
    report, _ = over_and_under
    teams = {t.team: t for t in report.teams}
    assert teams["alpha"].planned_in_budget_usd == pytest.approx(72_000)
    assert teams["alpha"].variance_usd == pytest.approx(22_000)
    assert teams["beta"].variance_usd == pytest.approx(-14_000)
    rows = {(v.month, v.cost_center): v for v in report.variance or []}
    assert rows[("2026-11", "alpha")].variance_usd == pytest.approx(22_000)
    assert rows[("2026-11", "beta")].variance_usd == pytest.approx(-14_000)
    assert report.headline.position.value == "over" and report.headline.variance_usd == pytest.approx(8_000)
    assert report.headline.position_text() == (  # nothing unmet: no "with every quota request granted"
        "Over budget by $8,000.00: the plan that serves all demand costs $108,000.00 in the budgeted months against "
        "a budget of $100,000.00 for the 1 budgeted month(s).")


def test_quota_headroom_counts_gpus_not_gpu_hours(over_and_under: tuple[Report, Path]) -> None:
    """10,800 GPU-hours in November's 720 hours are 15 GPUs on average, under a quota of 20: 5 to spare."""
    report, _ = over_and_under
    (row,) = report.headroom
    assert (row.label, row.quota_gpus, row.used_gpus, row.headroom()) == (
        "aws us-east-1 H100 on_demand", 20, [pytest.approx(15.0)], [pytest.approx(5.0)])


def test_over_budget_is_shown_as_over_in_html_markdown_and_xlsx(over_and_under: tuple[Report, Path]) -> None:
    report, out = over_and_under
    html = (out / "report.html").read_text()
    teams = html[html.index('id="teams"'):]
    teams = teams[:teams.index("</table>")]

    def cell(team: str) -> str:
        found = re.search(rf"<tr><td>{team}</td>.*?</tr>", teams)
        assert found, team
        return found.group(0).split("<td")[-1]  # the last cell: the variance

    assert cell("alpha") == ' class="n over">+$22,000.00</td></tr>'
    assert cell("beta") == ' class="n under">-$14,000.00</td></tr>'
    md = markdown.render(report)
    assert "| alpha | 0 | $72,000.00 | $50,000.00 | $72,000.00 | +$22,000.00 |" in md
    assert "| beta | 0 | $36,000.00 | $50,000.00 | $36,000.00 | -$14,000.00 |" in md
    sheet = load_workbook(out / "report.xlsx")["By team"]
    by_team = {r[0]: r for r in sheet.iter_rows(min_row=2, values_only=True) if r[0] in ("alpha", "beta")}
    assert by_team["alpha"][-1] == pytest.approx(22_000) and by_team["beta"][-1] == pytest.approx(-14_000)


@pytest.fixture(scope="module")
def three_year(tmp_path_factory: pytest.TempPathFactory) -> Report:
    run = planner.plan([demand("2026-01", "t", 8 * 744.0)],
                       [offer(Option.ON_DEMAND, 30.0), offer(Option.COMMIT_3Y, 0.5)], None, time_limit_s=20)
    assert [(c.option, c.nodes, c.usd_total) for c in run.plan.commitments] == [(Option.COMMIT_3Y, 1, 105_120.0)]
    return write(run, tmp_path_factory.mktemp("spread"), None)


def test_a_three_year_commitment_is_spread_over_36_months(three_year: finance.Report) -> None:
    assert three_year.by_cloud["2026-01"]["aws"] == pytest.approx(2_920.0)
    assert three_year.by_option["2026-01"]["commit_3y"] == pytest.approx(2_920.0)
    assert three_year.by_cloud[AFTER]["aws"] == pytest.approx(102_200.0)
    assert three_year.team_month[("2026-01", "t")] == pytest.approx(2_920.0)
    (advice,) = three_year.commitments
    assert advice.charge_in_horizon_usd == pytest.approx(2_920.0)
    # the node's 8 x 744 committed GPU-hours in January are all used; it pays off above $0.50 / $30 = 1.7 % use
    assert advice.expected_utilisation == pytest.approx(1.0)
    assert advice.break_even_utilisation == pytest.approx(0.5 / 30)
    assert three_year.total_usd == pytest.approx(105_120.0)  # every breakdown adds up to the whole charge
