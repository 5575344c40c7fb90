"""`gpufleet capacity report` on the bundled example: HTML with every chart and section, an XLSX whose totals
equal summary.json's to the cent, a Markdown summary, and the page rendered by headless Chromium."""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from openpyxl import load_workbook
from typer.testing import CliRunner

from capacity.cli import app
from capacity.finance.html import SECTIONS
from capacity.schema import Option

MADE_ON = dt.date(2026, 10, 1)  # the example as `gpufleet capacity example` writes it that day: plan from 2026-11
CHART_ALTS = ("Monthly spend by cloud", "Monthly spend by purchase option", "Spend versus budget",
              "Demand forecast", "Quota headroom")
CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target, example = tmp_path_factory.mktemp("report"), tmp_path_factory.mktemp("example")
    made = CliRunner().invoke(app, ["example", "--out", str(example), "--today", MADE_ON.isoformat()])
    assert made.exit_code == 0, made.output
    result = CliRunner().invoke(app, [
        "report", "--history", str(example / "history.csv"), "--quotas", str(example / "quotas.csv"),
        "--budget", str(example / "budget.csv"), "--horizon", "6", "--out", str(target)])
    assert result.exit_code == 0, result.output
    return target


def cents(x: float) -> int:
    return round(x * 100)


def test_report_writes_html_xlsx_markdown_and_the_plan(out: Path) -> None:
    for name in ("report.html", "report.xlsx", "report.md", "summary.json", "plan.csv", "demand.csv"):
        assert (out / name).stat().st_size > 0, name
    summary = json.loads((out / "summary.json").read_text())
    assert summary["months"] == 6 and summary["check"]["ok"]
    md = (out / "report.md").read_text()
    assert f"${summary['total_usd']:,.2f}" in md


def test_xlsx_totals_equal_summary_json_to_the_cent(out: Path) -> None:
    summary = json.loads((out / "summary.json").read_text())
    wb = load_workbook(out / "report.xlsx")
    assert wb.sheetnames == ["Summary", "Monthly plan", "By team", "Quota requests", "Commitments", "Shortfall",
                             "Assumptions"]
    short = list(wb["Shortfall"].iter_rows(min_row=2, values_only=True))
    assert len(short) == len((out / "shortfall.csv").read_text().splitlines()) - 1
    assert all(row[-1] for row in short)  # every unserved row says why
    items = {row[0]: row[1] for row in wb["Summary"].iter_rows(min_row=2, values_only=True)}
    assert cents(items["Total spend (usage + commitments)"]) == cents(summary["total_usd"])
    assert cents(items["Usage"]) == cents(summary["usage_usd"])
    assert cents(items["Commitment charges (whole terms)"]) == cents(summary["commitment_usd"])

    monthly = wb["Monthly plan"]
    header = [c.value for c in monthly[1]]
    rows = list(monthly.iter_rows(min_row=2, values_only=True))
    body, total = rows[:-1], rows[-1]
    assert total[0] == "total"
    col = header.index("total")
    assert cents(total[col]) == cents(summary["total_usd"])
    assert cents(sum(r[col] for r in body)) == cents(summary["total_usd"])
    by_option = sum(r[header.index(o)] for r in body for o in (opt.value for opt in Option))
    assert cents(by_option) == cents(summary["total_usd"])
    assert monthly.freeze_panes == "A2"
    assert monthly.cell(2, 2).number_format.startswith('"$"#,##0.00')
    assert monthly.column_dimensions["A"].width >= 10

    teams = wb["By team"]
    header = [c.value for c in teams[1]]
    team_rows = []
    for row in teams.iter_rows(min_row=2, values_only=True):
        if row[0] is None:
            break
        team_rows.append(row)
    *members, team_total = team_rows
    col = header.index("total USD")
    assert team_total[0] == "total" and cents(team_total[col]) == cents(summary["total_usd"])
    assert cents(sum(r[col] for r in members)) == cents(summary["total_usd"])
    assert {r[0] for r in members} >= {"pretrain", "posttrain", "research", "inference", "eval"}

    commitments = list(wb["Commitments"].iter_rows(min_row=2, values_only=True))
    if commitments:
        assert cents(commitments[-1][8]) == cents(summary["commitment_usd"])
    requests = list(wb["Quota requests"].iter_rows(min_row=2, values_only=True))
    assert len(requests) == summary["quota_requests"]


def test_html_has_every_section_and_one_png_per_chart(out: Path) -> None:
    html = (out / "report.html").read_text()
    for heading in SECTIONS:
        assert re.search(rf"<h2[^>]*>{re.escape(heading)}</h2>", html), heading
    imgs = re.findall(r'<img alt="([^"]+)" src="data:image/png;base64,([^"]*)">', html)
    assert len(re.findall(r"<img\b", html)) == len(imgs) == len(CHART_ALTS)
    assert sorted(alt for alt, _ in imgs) == sorted(CHART_ALTS)
    for alt, data in imgs:
        png = base64.b64decode(data, validate=True)
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5000, alt
    assert "http://" not in html and "https://" not in html  # self-contained: nothing to fetch
    summary = json.loads((out / "summary.json").read_text())
    assert f"${summary['total_usd']:,.2f}" in html


def test_headless_chromium_renders_every_chart(out: Path, tmp_path: Path) -> None:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not found: install Debian's chromium package (.ci/run does in CI) to render "
                    "report.html headlessly")
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}"]
    url = (out / "report.html").resolve().as_uri()
    shot = tmp_path / "report.png"
    subprocess.run([*flags, f"--screenshot={shot}", "--window-size=1400,4000", url], check=False, timeout=120,
                   capture_output=True)
    assert shot.exists(), "chromium wrote no screenshot"
    assert shot.read_bytes().startswith(b"\x89PNG") and shot.stat().st_size > 50_000
    shutil.copy(shot, out / "report-screenshot.png")  # kept beside the report for a look
    dom = subprocess.run([*flags, "--dump-dom", url], check=False, timeout=120, capture_output=True, text=True).stdout
    rendered = re.findall(r'<img alt="([^"]+)" src="data:image/png;base64,[A-Za-z0-9+/=]{100,}', dom)
    assert sorted(rendered) == sorted(CHART_ALTS)
    for heading in SECTIONS:
        assert heading in dom


def test_report_without_history_or_demand_is_bad_input() -> None:
    result = CliRunner().invoke(app, ["report", "--out", "unused"])
    assert result.exit_code == 2


def test_every_report_states_the_price_date_and_warns_when_stale(out: Path) -> None:
    # the oldest bundled price the example uses is from 2025-11-30 (the AWS spot and 3-year digest,
    # capacity/data/prices/aws_spot_3y.csv): past 90 days on any run date after 2026-02-28
    summary = json.loads((out / "summary.json").read_text())
    assert summary["prices"]["as_of"] <= "2025-11-30" and summary["prices"]["stale"]
    assert summary["prices"]["stale_after_days"] == 90
    html = (out / "report.html").read_text()
    assert f"Prices as of {summary['prices']['as_of']}" in html and 'id="stale-prices"' in html
    assert "Prices as of:" in (out / "report.md").read_text() and "**Warning:**" in (out / "report.md").read_text()
    rows = {r[0].value: r[1].value for r in load_workbook(out / "report.xlsx")["Summary"].iter_rows(min_row=2)}
    assert rows["Prices as of (oldest price date)"] == summary["prices"]["as_of"]
    assert rows["Price warning"].startswith("Prices are as of")


def test_no_quota_request_of_the_example_is_late_on_the_day_it_was_made(out: Path) -> None:
    import csv

    with (out / "quota_requests.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert rows  # its quotas are short on purpose: there are requests to show
    assert min(r["month_needed"] for r in rows) == "2026-11"  # from the first month of the plan
    assert all(dt.date.fromisoformat(r["request_by"]) >= MADE_ON for r in rows), rows
