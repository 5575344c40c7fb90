"""The finance report's headline on a plan small enough to compute by hand: what the plan costs, what it costs if
the quota requests are granted, what the unmet demand is worth at the penalty rate, the budget position of the
plan that serves ALL demand (never "within budget" while GPU-hours are unmet), per-team variance over the
budgeted months, and overdue quota requests at their boundary day in html, xlsx, md and the terminal.

The plan, by hand: one offer, aws us-east-1 p5.48xlarge (8 x H100) on demand at $10 per GPU-hour; a quota of 10
H100 GPUs there; November 2026 has 30 x 24 = 720 hours. Teams alpha and beta each need 7,200 GPU-hours that
month (14,400 in all); the quota serves 10 x 720 = 7,200 of them.
  plan spend         7,200 GPU-h x $10 = $72,000
  unmet              14,400 - 7,200 = 7,200 GPU-h, worth 7,200 x $1,000 (default penalty) = $7,200,000
  granted (+10 GPUs) 14,400 GPU-h x $10 = $144,000, nothing unmet
  request            file by 2026-11-01 minus AWS's 10-day lead time = 2026-10-22
"""

from __future__ import annotations

import datetime as dt
import io
import json
from pathlib import Path

import pytest
from openpyxl import load_workbook
from rich.console import Console
from typer.testing import CliRunner

from capacity import planner
from capacity import report as plan_report
from capacity.cli import app
from capacity.finance import markdown
from capacity.finance import report as finance
from capacity.finance.budget import BudgetRow
from capacity.schema import DemandRow, OfferRow, QuotaRow

OFFER = OfferRow.model_validate({"cloud": "aws", "region": "us-east-1", "machine_type": "p5.48xlarge", "gpu": "H100",
                                 "gpus_per_node": 8, "option": "on_demand", "usd_per_gpu_hour": 10.0,
                                 "source": "test", "as_of": "2026-11-01"})
QUOTA = QuotaRow.model_validate({"cloud": "aws", "region": "us-east-1", "gpu": "H100", "market": "on_demand",
                                 "max_gpus": 10})


def demand(gpu: str = "H100") -> list[DemandRow]:
    return [DemandRow.model_validate({"month": "2026-11", "team": team, "gpu": gpu, "gpu_hours": 7200,
                                      "gang_gpus": 1, "spot_ok": False}) for team in ("alpha", "beta")]


def budget(alpha: float, beta: float) -> list[BudgetRow]:
    return [BudgetRow(month="2026-11", cost_center="alpha", usd=alpha),
            BudgetRow(month="2026-11", cost_center="beta", usd=beta)]


@pytest.fixture(scope="module")
def run() -> planner.Run:
    return planner.plan(demand(), [OFFER], [QUOTA], time_limit_s=20)


def write(run: planner.Run, out: Path, rows: list[BudgetRow] | None, on: dt.date = dt.date(2026, 10, 1)):
    summary = plan_report.write(run, out)
    return summary, finance.write(run, summary, out, rows, on=on)


def test_the_plan_and_the_granted_plan_by_hand(run: planner.Run, tmp_path: Path) -> None:
    summary, report = write(run, tmp_path, None)
    h = report.headline
    assert round(h.total_usd, 2) == 72_000.00 and round(h.unmet_gpu_hours, 3) == 7_200
    assert round(h.unmet_value_usd, 2) == 7_200_000.00
    assert round(h.granted_total_usd, 2) == 144_000.00 and round(h.granted_unmet_gpu_hours, 3) == 0
    assert h.position is None and h.position_text() is None  # no budget, no call
    assert (summary["unmet_value_usd"], summary["granted_total_usd"], summary["granted_unmet_value_usd"]) == (
        7_200_000.00, 144_000.00, 0.0)
    md = (tmp_path / "report.md").read_text()
    assert "**If the quota requests are granted:** $144,000.00" in md
    assert "7,200 GPU-hours, worth $7,200,000.00 at the penalty rate" in md
    html = (tmp_path / "report.html").read_text()
    assert "$144,000.00" in html and "$7,200,000.00" in html and 'id="budget-position"' not in html


def test_a_budget_the_short_plan_fits_but_the_full_plan_does_not_is_over(run: planner.Run, tmp_path: Path) -> None:
    # budget $100,000: the plan ($72,000) would be "under" by $28,000; serving all demand costs $144,000: over $44,000
    _, report = write(run, tmp_path, budget(50_000, 50_000))
    h = report.headline
    assert h.position.value == "over" and round(h.variance_usd, 2) == 44_000.00
    assert h.position_text().startswith("Over budget by $44,000.00")
    html = (tmp_path / "report.html").read_text()
    card = html[html.index('id="budget-position"'):]
    card = card[:card.index("</div></div>")]
    assert 'class="v over"' in card and "Over budget +$44,000.00" in card and "under" not in card.split("note")[0]
    items = {r[0]: r[1] for r in load_workbook(tmp_path / "report.xlsx")["Summary"].iter_rows(min_row=2,
                                                                                               values_only=True)}
    assert items["Budget position (plan that serves all demand)"] == "over"
    assert round(items["Variance vs budget (plan serving all demand)"], 2) == 44_000.00
    assert round(items["Spend if the quota requests are granted"], 2) == 144_000.00
    assert round(items["Unmet demand at the penalty rate (value, not spend)"], 2) == 7_200_000.00
    assert "Over budget by $44,000.00" in (tmp_path / "report.md").read_text()


def test_within_budget_only_when_the_plan_serving_all_demand_fits(run: planner.Run, tmp_path: Path) -> None:
    _, report = write(run, tmp_path, budget(80_000, 80_000))  # $160,000 - $144,000 = $16,000 to spare
    h = report.headline
    assert h.position.value == "within" and round(h.variance_usd, 2) == -16_000.00
    assert h.position_text().startswith("Within budget, $16,000.00 to spare")


def test_no_plan_serves_all_demand_the_position_is_not_known_never_green(tmp_path: Path) -> None:
    # B200 has no offer at all: nothing can serve it, with or without quota requests
    lone = planner.plan([*demand(), *demand("B200")], [OFFER], [QUOTA], time_limit_s=20)
    _, report = write(lone, tmp_path, budget(1e9, 1e9))
    h = report.headline
    assert h.position.value == "unknown" and h.variance_usd is None
    assert round(h.granted_unmet_gpu_hours, 3) == 14_400  # alpha's and beta's B200 hours
    text = h.position_text()
    assert text.startswith("Not known: no plan serves all demand. 14,400 GPU-hours stay unmet")
    assert "$14,400,000.00 at the penalty rate" in text and "costs $144,000.00" in text
    html = (tmp_path / "report.html").read_text()
    card = html[html.index('id="budget-position"'):]
    assert 'class="v unknown"' in card[:card.index("</div></div>")]
    teams = html[html.index('id="teams"'):]
    assert "under" not in teams[:teams.index("</table>")]  # both teams are short: no green variance
    assert teams.count("(demand unmet)") == 2


def test_team_variance_compares_the_same_months(run: planner.Run, tmp_path: Path) -> None:
    # a budget line outside the horizon (2027-01) is not compared; each team's planned cost is its November spend
    rows = [*budget(50_000, 50_000), BudgetRow(month="2027-01", cost_center="alpha", usd=999.0)]
    _, report = write(run, tmp_path, rows)
    by = {t.team: t for t in report.teams}
    assert round(by["alpha"].planned_in_budget_usd + by["beta"].planned_in_budget_usd, 2) == 72_000.00
    for t in by.values():
        assert t.budget_usd == 50_000.00
        assert round(t.variance_usd, 2) == round(t.planned_in_budget_usd - 50_000.00, 2)
    wb = load_workbook(tmp_path / "report.xlsx")["By team"]
    header = [c.value for c in wb[1]]
    assert header[-3:] == ["budget USD", "planned in budgeted months USD", "variance USD"]
    total = next(r for r in wb.iter_rows(min_row=2, values_only=True) if r[0] == "total")
    assert (round(total[-3], 2), round(total[-2], 2), round(total[-1], 2)) == (100_000.00, 72_000.00, -28_000.00)


@pytest.mark.parametrize(("on", "late"), [(dt.date(2026, 10, 22), False), (dt.date(2026, 10, 23), True)])
def test_a_request_is_overdue_the_day_after_its_file_by_day_everywhere(run: planner.Run, tmp_path: Path,
                                                                      on: dt.date, late: bool) -> None:
    _, report = write(run, tmp_path, None, on=on)
    assert [q.request_by for q in report.requests] == ["2026-10-22"]
    html = (tmp_path / "report.html").read_text()
    assert ("2026-10-22 (overdue)" in html) is late and ('id="overdue"' in html) is late
    md = markdown.render(report)
    assert ("2026-10-22 **overdue**" in md) is late and ("> **Overdue:** 1 quota request(s)" in md) is late
    sheet = load_workbook(tmp_path / "report.xlsx")["Quota requests"]
    col = [c.value for c in sheet[1]].index("overdue")
    assert (sheet.cell(2, col + 1).value == "overdue") is late
    items = {r[0]: r[1] for r in load_workbook(tmp_path / "report.xlsx")["Summary"].iter_rows(min_row=2,
                                                                                               values_only=True)}
    assert items["Quota requests past their file-by day"] == (1 if late else 0)
    buf = io.StringIO()
    finance.render(report, Console(file=buf, width=200))
    assert ("OVERDUE: the aws us-east-1 H100 on_demand quota request was to be filed by 2026-10-22" in buf.getvalue()
            ) is late
    assert "spend if the quota requests are granted" in buf.getvalue()


def test_the_report_command_prints_the_headline(tmp_path: Path) -> None:
    files = tmp_path / "in"
    files.mkdir()
    (files / "demand.csv").write_text("month,team,gpu,gpu_hours,gang_gpus,spot_ok\n"
                                      "2026-11,alpha,H100,7200,1,false\n2026-11,beta,H100,7200,1,false\n")
    (files / "offers.csv").write_text("cloud,region,machine_type,gpu,gpus_per_node,option,usd_per_gpu_hour\n"
                                      "aws,us-east-1,p5.48xlarge,H100,8,on_demand,10\n")
    (files / "quotas.csv").write_text("cloud,region,gpu,market,max_gpus\naws,us-east-1,H100,on_demand,10\n")
    (files / "budget.csv").write_text("month,cost_center,usd\n2026-11,alpha,50000\n2026-11,beta,50000\n")
    result = CliRunner().invoke(app, ["report", *[f"--{k}={files / (k + '.csv')}" for k in
                                                  ("demand", "offers", "quotas", "budget")],
                                      "--out", str(tmp_path / "out"), "--time-limit", "20"])
    assert result.exit_code == 0, result.output
    assert "Over budget by $44,000.00" in " ".join(result.output.split())
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["granted_total_usd"] == 144_000.00



def test_a_budget_outside_the_horizon_makes_no_call(run: planner.Run, tmp_path: Path) -> None:
    _, report = write(run, tmp_path, [BudgetRow(month="2027-01", cost_center="alpha", usd=1e6)])
    assert report.headline.position is None and 'id="budget-position"' not in (tmp_path / "report.html").read_text()
