"""Journey: finance plans, the month closes, the clouds' FOCUS export arrives; `capacity report --focus` shows the
plan against the bill (HTML with its chart, XLSX sheets) and `capacity actuals --plan` agrees with it.

The demand, the price and the export are FAKES typed here (one on-demand p5.48xlarge offer at $4/GPU-hour);
every expected figure is computed by hand in the comments."""

from __future__ import annotations

import json
import re
from pathlib import Path

from openpyxl import load_workbook
from typer.testing import CliRunner

from gpufleet.cli import app
from tests.capacity.focus_files import COLUMNS, charge, write_csv

TAGS = json.dumps({"team": "pretrain"})


def _inputs(tmp_path: Path) -> tuple[Path, Path, Path]:
    demand = tmp_path / "demand.csv"
    demand.write_text("month,team,gpu,gpu_hours,gang_gpus,spot_ok\n"
                      "2026-01,pretrain,H100,1000,1,false\n2026-02,pretrain,H100,1000,1,false\n")
    offers = tmp_path / "offers.csv"
    offers.write_text("cloud,region,machine_type,gpu,gpus_per_node,option,usd_per_gpu_hour,source,as_of\n"
                      "aws,us-east-1,p5.48xlarge,H100,8,on_demand,4.0,test,2026-01-01\n")
    # billed: January 125 instance-hours of p5.48xlarge (1,000 GPU-h) for $4,200; February 112.5 h (900) for $3,600
    export = write_csv(tmp_path / "focus.csv", [
        charge("2026-01", 4200.0, ProviderName="AWS", ConsumedQuantity=125, ConsumedUnit="Hours", Tags=TAGS,
               ChargeDescription="On Demand Linux p5.48xlarge Instance Hour"),
        charge("2026-02", 3600.0, ProviderName="AWS", ConsumedQuantity=112.5, ConsumedUnit="Hours", Tags=TAGS,
               ChargeDescription="On Demand Linux p5.48xlarge Instance Hour")], COLUMNS)
    return demand, offers, export


def test_plan_then_bill_then_report(tmp_path: Path) -> None:
    demand, offers, export = _inputs(tmp_path)
    out, db = tmp_path / "report", tmp_path / "actuals.duckdb"
    runner = CliRunner()
    result = runner.invoke(app, ["capacity", "report", "--demand", str(demand), "--offers", str(offers),
                                 "--out", str(out), "--focus", str(export), "--actuals-db", str(db)])
    assert result.exit_code == 0, result.output

    page = (out / "report.html").read_text()
    assert 'alt="Plan against the bill"' in page
    table = re.search(r'<table id="plan-vs-bill">(.*?)</table>', page, re.S).group(1)
    cells = [re.findall(r"<td[^>]*>([^<]*)</td>", row) for row in table.split("</tr>")[1:] if "<td" in row]
    # plan: 1,000 GPU-h x $4 = $4,000 a month
    assert cells[0] == ["2026-01", "$4,000.00", "$4,200.00", "+$200.00", "1,000", "1,000"]
    assert cells[1] == ["2026-02", "$4,000.00", "$3,600.00", "-$400.00", "1,000", "900"]
    assert "WAPE 7.7%" in page  # (200 + 400) / (4,200 + 3,600)

    wb = load_workbook(out / "report.xlsx")
    assert {"Actuals plan vs bill", "Actuals utilisation", "Actuals GPU spend"} <= set(wb.sheetnames)
    rows = list(wb["Actuals plan vs bill"].iter_rows(min_row=2, values_only=True))
    assert rows[0][:3] == ("2026-01", 4000.0, 4200.0)
    assert abs(rows[-1][1] - 600 / 7800) < 1e-6

    result = runner.invoke(app, ["capacity", "actuals", "--focus", str(export), "--plan", str(out), "--db", str(db),
                                 "--json"])
    assert result.exit_code == 0, result.output
    versus = json.loads(result.stdout)["plan_vs_bill"]
    assert abs(versus["wape"] - 600 / 7800) < 1e-6 and versus["months_compared"] == 2


def test_a_bad_export_stops_the_report_before_the_solve(tmp_path: Path) -> None:
    demand, offers, _ = _inputs(tmp_path)
    bad = write_csv(tmp_path / "bad.csv", [charge("2026-01", "lots")], COLUMNS)
    result = CliRunner().invoke(app, ["capacity", "report", "--demand", str(demand), "--offers", str(offers),
                                      "--out", str(tmp_path / "report"), "--focus", str(bad),
                                      "--actuals-db", str(tmp_path / "db.duckdb")])
    assert result.exit_code == 2
    assert "row 2, column EffectiveCost: 'lots' is not a decimal number" in " ".join(result.output.split())
    assert not (tmp_path / "report" / "plan.csv").exists()
