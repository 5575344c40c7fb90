"""`gpufleet capacity ...` end to end through typer's CliRunner: files in, files out, errors without tracebacks."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from capacity import check, inputs
from capacity.cli import app
from capacity.csvio import load_rows
from capacity.schema import CommitmentLine, PlanLine, QuotaRow, ShortfallLine, add_months, hours

runner = CliRunner()
SUMMARY_KEYS = {"total_usd", "usage_usd", "commitment_usd", "unmet_gpu_hours", "lower_bound_usd", "gap",
                "greedy_total_usd", "solve_seconds", "lp_relaxation_usd", "objective_usd", "status",
                "schema_version", "quota_requests", "check"}


def output(result) -> str:
    return result.output + (getattr(result, "stderr", "") or "")


def demand_file(tmp_path: Path) -> Path:
    lines = ["month,team,gpu,gpu_hours,gang_gpus,spot_ok"]
    for i in range(14):
        month = add_months("2026-01", i)
        lines.append(f"{month},pretrain,H100,{200 * hours(month)},64,false")
        lines.append(f"{month},research,A100-40GB,{24 * hours(month)},1,true")
        lines.append(f"{month},serving,L4,{30 * hours(month)},1,false")
    path = tmp_path / "demand.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def quotas_file(tmp_path: Path) -> Path:
    path = tmp_path / "quotas.csv"
    path.write_text("cloud,region,gpu,market,max_gpus\n"
                    "aws,us-east-1,H100,on_demand,128\n"
                    "gcp,us-central1,H100,on_demand,64\n"
                    "gcp,us-central1,A100-40GB,on_demand,16\ngcp,us-central1,A100-40GB,spot,16\n"
                    "aws,us-east-1,L4,on_demand,64\n")
    return path


def test_plan_writes_every_file_a_stable_summary_and_a_checkable_plan(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = runner.invoke(app, ["plan", "--demand", str(demand_file(tmp_path)), "--quotas", str(quotas_file(tmp_path)),
                                 "--out", str(out)])
    assert result.exit_code == 0, output(result)
    assert "Capacity plan" in result.output and "saving vs greedy" in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary) >= SUMMARY_KEYS
    assert summary["check"] == {"ok": True, "violations": 0}
    assert summary["lower_bound_usd"] <= summary["objective_usd"] + 0.01
    # each figure is rounded to the cent on its own, so the parts may sum one cent away from the total
    assert abs(summary["total_usd"] - (summary["usage_usd"] + summary["commitment_usd"])) <= 0.011
    # what was written reads back and passes the independent check
    demand = inputs.load_demand(tmp_path / "demand.csv")
    verdict = check.check(demand, inputs.load_offers(), inputs.load_quotas(tmp_path / "quotas.csv"),
                          load_rows(out / "plan.csv", PlanLine), load_rows(out / "commitments.csv", CommitmentLine),
                          load_rows(out / "shortfall.csv", ShortfallLine))
    assert verdict.ok, verdict.violations
    assert summary["total_usd"] == round(verdict.total_usd, 2) or abs(summary["total_usd"] - verdict.total_usd) < 1
    # H100 needs 200 GPUs in gangs of 64 where quotas hold 128 + 64: the shortfall asks for more quota
    assert summary["unmet_gpu_hours"] > 0 and summary["quota_requests"] >= 1
    requests = (out / "quota_requests.csv").read_text().splitlines()
    assert requests[0].startswith("cloud,region,gpu,market,current_max_gpus,requested_max_gpus")


def test_plan_json_prints_only_the_summary(tmp_path: Path) -> None:
    result = runner.invoke(app, ["plan", "--demand", str(demand_file(tmp_path)), "--out", str(tmp_path / "o"),
                                 "--format", "json"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["schema_version"] == 1


def test_bad_input_exits_2_with_the_row_and_no_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "demand.csv"
    bad.write_text("month,team,gpu,gpu_hours,gang_gpus,spot_ok\n2026-01,a,H100,lots,1,false\n")
    result = runner.invoke(app, ["plan", "--demand", str(bad), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    text = output(result)
    assert "row 2, column gpu_hours: 'lots' is not a number." in text
    assert "Traceback" not in text


def test_forecast_writes_demand_intervals_and_backtest(tmp_path: Path) -> None:
    history = tmp_path / "history.csv"
    rows = ["month,team,gpu,gpu_hours"] + [f"{add_months('2024-01', i)},vision,H100,{(50 + i) * 720}"
                                          for i in range(15)]
    history.write_text("\n".join(rows) + "\n")
    result = runner.invoke(app, ["forecast", "--history", str(history), "--out", str(tmp_path / "f"),
                                 "--horizon", "6", "--quantile", "P90"])
    assert result.exit_code == 0, output(result)
    assert "WAPE" in result.output
    demand = inputs.load_demand(tmp_path / "f" / "demand.csv")
    assert [d.month for d in demand] == [add_months("2025-04", i) for i in range(6)]
    assert (tmp_path / "f" / "forecast_intervals.csv").exists() and (tmp_path / "f" / "backtest.csv").exists()


def test_quotas_with_every_cloud_failing_warns_and_exits_1(tmp_path: Path) -> None:
    result = runner.invoke(app, ["quotas", "--cloud", "gcp", "--cloud", "azure", "--out", str(tmp_path / "q.csv")])
    assert result.exit_code == 1
    text = output(result)
    assert "GCP needs --project" in text and "Azure needs --subscription" in text
    assert load_rows(tmp_path / "q.csv", QuotaRow) == []


def test_reconcile_against_the_example_stacks(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert runner.invoke(app, ["plan", "--demand", str(demand_file(tmp_path)), "--out", str(out)]).exit_code == 0
    result = runner.invoke(app, ["reconcile", "--plan", str(out), "--stacks", "stacks/Pulumi.aws-train.yaml"])
    assert result.exit_code == 0, output(result)
    text = (out / "reconcile.csv").read_text()
    assert text.startswith("month,cloud,region,gpu,planned_gpus")
    assert "capacity_block:cr-0a1b2c3d4e5f60718" in text
    # at 80 columns (a CI log) months and amounts stay whole: the table becomes a list when it must
    import capacity.cli

    narrow = Console(width=80, record=True, file=io.StringIO())
    with pytest.MonkeyPatch.context() as m:
        m.setattr(capacity.cli, "console", narrow)
        assert runner.invoke(app, ["reconcile", "--plan", str(out), "--stacks", "stacks/Pulumi.aws-train.yaml"]
                             ).exit_code == 0
    shown = narrow.export_text()
    assert "…" not in shown and max(map(len, shown.splitlines())) <= 80
    months = {line.split(",")[0] for line in text.splitlines()[1:]}
    assert any(m in shown for m in months)
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text("config:\n  gpufleet:fleet:\n    cloud: aws\n")
    result = runner.invoke(app, ["reconcile", "--plan", str(out), "--stacks", str(bad)])
    assert result.exit_code == 2 and "Traceback" not in output(result)
    assert "clusters" in output(result)
