"""Quota rows in a region the cloud does not have, and budget cost centers that match no team: refused by name
with a did-you-mean, the file and row cited, no traceback; or, with their flag, dropped / kept with a warning."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from capacity.cli import app

DEMAND = ("month,team,gpu,gpu_hours,gang_gpus,spot_ok\n"
          "2026-11,pretrain,H100,720,1,false\n2026-11,research,H100,720,1,false\n")
OFFERS = ("cloud,region,machine_type,gpu,gpus_per_node,option,usd_per_gpu_hour\n"
          "aws,us-east-1,p5.48xlarge,H100,8,on_demand,10\n")


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "demand.csv").write_text(DEMAND)
    (tmp_path / "offers.csv").write_text(OFFERS)
    (tmp_path / "quotas.csv").write_text("cloud,region,gpu,market,max_gpus\naws,us-east-1,H100,on_demand,8\n")
    (tmp_path / "budget.csv").write_text("month,cost_center,usd\n2026-11,pretrain,9000\n2026-11,research,9000\n")
    return tmp_path


def invoke(files: Path, command: str, *extra: str):
    args = [command, "--demand", str(files / "demand.csv"), "--offers", str(files / "offers.csv"),
            "--quotas", str(files / "quotas.csv"), "--out", str(files / "out"), "--time-limit", "20", *extra]
    if command == "report":
        args += ["--budget", str(files / "budget.csv")]
    result = CliRunner().invoke(app, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, " ".join(result.output.split())


@pytest.mark.parametrize("command", ["plan", "report"])
def test_a_quota_in_a_region_the_cloud_does_not_have_is_refused(files: Path, command: str) -> None:
    quotas = files / "quotas.csv"
    quotas.write_text(quotas.read_text() + "aws,us-east1,H100,on_demand,64\n")  # GCP's spelling, on AWS
    code, out = invoke(files, command)
    assert code == 2
    assert f"{quotas}: row 3, column region: 'us-east1' is not one of AWS's regions" in out
    assert "Did you mean 'us-east-1'?" in out and "'us-east1' is a GCP region." in out
    assert "us-east-2" in out  # the allowed regions are listed
    assert not (files / "out" / "plan.csv").exists()  # nothing half-built


def test_skip_unoffered_drops_the_row_with_a_warning(files: Path) -> None:
    quotas = files / "quotas.csv"
    quotas.write_text(quotas.read_text() + "aws,us-east1,H100,on_demand,64\n")
    code, out = invoke(files, "plan", "--skip-unoffered")
    assert code == 0, out
    assert "warning:" in out and "row 3, column region: 'us-east1'" in out and "Dropped." in out


def test_a_region_nothing_resembles_gets_no_guess(files: Path) -> None:
    quotas = files / "quotas.csv"
    quotas.write_text(quotas.read_text() + "azure,mars-north-9,H100,on_demand,8\n")
    code, out = invoke(files, "plan")
    assert code == 2 and "'mars-north-9' is not one of Azure's regions" in out and "Did you mean" not in out


def test_a_cost_center_matching_no_team_is_refused_with_a_guess(files: Path) -> None:
    budget = files / "budget.csv"
    budget.write_text(budget.read_text() + "2026-11,pretrian,5000\n")
    code, out = invoke(files, "report")
    assert code == 2
    assert f"{budget}: row 4, column cost_center: 'pretrian' matches no team of the demand." in out
    assert "Did you mean 'pretrain'?" in out and "Write one of pretrain, research" in out
    assert not (files / "out" / "report.html").exists()


def test_allow_unmatched_budget_keeps_the_row_with_a_warning(files: Path) -> None:
    budget = files / "budget.csv"
    budget.write_text(budget.read_text() + "2026-11,finance-ops,5000\n")
    code, out = invoke(files, "report", "--allow-unmatched-budget")
    assert code == 0, out
    assert "warning:" in out and "'finance-ops' matches no team" in out and "Kept" in out
    assert "finance-ops" in (files / "out" / "report.md").read_text()
