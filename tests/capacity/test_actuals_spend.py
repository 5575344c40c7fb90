"""GPU spend by team and month, capacity reservation utilisation, and the plan against the bill, from a small
hand-made FOCUS 1.2 export (a FAKE: rows typed here in the shape the spec gives; expected values computed by hand
in the comments)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capacity.csvio import write_models
from capacity.schema import CommitmentLine, PlanLine
from tests.capacity.focus_files import COLUMNS, actuals_json, charge, to_parquet, write_csv

PRETRAIN = json.dumps({"team": "pretrain", "cost-center": "ml"})
RESEARCH = json.dumps({"team": "research"})
ROWS = [
    # 2026-01: 10 h of p5.48xlarge (8 H100) = 80 GPU-h, $983.20, pretrain
    charge("2026-01", 983.2, ProviderName="AWS", ConsumedQuantity=10, ConsumedUnit="Hours", Tags=PRETRAIN,
           ChargeDescription="$98.32 per On Demand Linux p5.48xlarge Instance Hour"),
    # 1 h of Azure ND96isr H100 v5 (8 H100) = 8 GPU-h, $100, research (the meter's spelling, spaces not underscores)
    charge("2026-01", 100.0, ProviderName="Microsoft", ConsumedQuantity=1, ConsumedUnit="Hour", Tags=RESEARCH,
           ChargeDescription="ND96isr H100 v5 Low Priority"),
    # 2 h of a3-megagpu-8g = 16 GPU-h, $50, research; 120 min of g2-standard-48 (4 L4, not g2-standard-4's 1) = 8
    charge("2026-01", 50.0, ProviderName="Google Cloud", ConsumedQuantity=2, ConsumedUnit="Hour", Tags=RESEARCH,
           ChargeDescription="a3-megagpu-8g running in Americas"),
    charge("2026-01", 20.0, ProviderName="Google Cloud", ConsumedQuantity=120, ConsumedUnit="Minutes", Tags=RESEARCH,
           ChargeDescription="g2-standard-48 running in Americas"),
    # not a GPU machine: left out of GPU spend
    charge("2026-01", 7.0, ProviderName="AWS", ConsumedQuantity=1, ConsumedUnit="Hours", Tags=RESEARCH,
           ChargeDescription="$0.192 per On Demand Linux m5.xlarge Instance Hour"),
    # 2026-02: a capacity reservation cr-1 used 5 h by pretrain ($400) and 3 h unused ($240, nobody's)
    charge("2026-02", 400.0, ProviderName="AWS", ConsumedQuantity=5, ConsumedUnit="Hours", Tags=PRETRAIN,
           CapacityReservationId="cr-1", CapacityReservationStatus="Used", ResourceId="i-1",
           ChargeDescription="p5.48xlarge reserved instance hour"),
    charge("2026-02", 240.0, ProviderName="AWS", ConsumedQuantity=3, ConsumedUnit="Hours",
           CapacityReservationId="cr-1", CapacityReservationStatus="Unused", ResourceId="cr-1",
           ChargeDescription="p5.48xlarge unused reservation hour"),
    # a p5 charge counted in requests: its GPU-hours are unknown, so pretrain's February GPU-hours are unknown too
    charge("2026-02", 10.0, ProviderName="AWS", ConsumedQuantity=4, ConsumedUnit="Requests", Tags=PRETRAIN,
           ChargeDescription="p5.48xlarge something per request"),
]


@pytest.fixture(params=["csv", "parquet"])
def export(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    path = write_csv(tmp_path / "focus.csv", ROWS, COLUMNS)
    return to_parquet(path) if request.param == "parquet" else path


def test_gpu_spend_by_team_and_month(tmp_path: Path, export: Path) -> None:
    doc = actuals_json(tmp_path / "db.duckdb", "--focus", str(export))
    spend = {(s["month"], s["team"], s["cloud"], s["gpu"]): (s["usd"], s["gpu_hours"]) for s in doc["gpu_spend"]}
    assert spend == {
        ("2026-01", "pretrain", "aws", "H100"): (983.2, 80.0),
        ("2026-01", "research", "azure", "H100"): (100.0, 8.0),
        ("2026-01", "research", "gcp", "H100"): (50.0, 16.0),
        ("2026-01", "research", "gcp", "L4"): (20.0, 8.0),
        ("2026-02", "pretrain", "aws", "H100"): (410.0, None),
        ("2026-02", "(untagged)", "aws", "H100"): (240.0, 0.0),  # idle reservation hours: spend, no GPU use
    }


def test_capacity_reservation_used_and_unused(tmp_path: Path, export: Path) -> None:
    doc = actuals_json(tmp_path / "db.duckdb", "--focus", str(export))
    assert doc["capacity_reservations"] == [{"id": "cr-1", "cloud": "aws", "used_cost_usd": 400.0,
                                             "unused_cost_usd": 240.0, "utilization": 0.625}]  # 400 / 640
    assert doc["commitments"] == []


def test_plan_against_the_bill(tmp_path: Path, export: Path) -> None:
    plan = tmp_path / "plan"
    plan.mkdir()
    write_models(plan / "plan.csv", PlanLine, [
        PlanLine(month="2026-01", team="pretrain", gpu="H100", cloud="aws", region="us-east-1", option="on_demand",
                 gpu_hours=100, usd=1000, gang_gpus=8, spot_ok=False),
        PlanLine(month="2026-02", team="pretrain", gpu="H100", cloud="aws", region="us-east-1", option="on_demand",
                 gpu_hours=50, usd=500, gang_gpus=8, spot_ok=False)])
    # a one-year commitment of $1,200 from 2026-01: $100 in each of its 12 months
    write_models(plan / "commitments.csv", CommitmentLine, [
        CommitmentLine(cloud="aws", region="us-east-1", machine_type="p5.48xlarge", gpu="H100", option="commit_1y",
                       start_month="2026-01", nodes=1, gpus=8, usd_total=1200)])
    doc = actuals_json(tmp_path / "db.duckdb", "--focus", str(export), "--plan", str(plan))
    versus = doc["plan_vs_bill"]
    months = {m["month"]: m for m in versus["months"]}
    assert len(months) == 12
    assert months["2026-01"] == {"month": "2026-01", "plan_usd": 1100.0, "billed_usd": 1153.2, "plan_gpu_hours": 100.0,
                                 "billed_gpu_hours": 112.0}  # 983.2 + 100 + 50 + 20; 80 + 8 + 16 + 8
    assert months["2026-02"]["billed_usd"] == 650.0 and months["2026-02"]["billed_gpu_hours"] is None
    assert months["2026-03"]["billed_usd"] is None and months["2026-03"]["plan_usd"] == 100.0
    assert versus["months_compared"] == 2
    # (|1153.2 - 1100| + |650 - 600|) / (1153.2 + 650)
    assert versus["wape"] == pytest.approx((53.2 + 50) / 1803.2, abs=1e-6)


def test_the_database_lives_in_the_users_data_directory_and_a_reload_replaces(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import duckdb

    from tests.capacity.focus_files import run

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    path = write_csv(tmp_path / "focus.csv", ROWS, COLUMNS)
    for _ in range(2):
        result = run("--focus", str(path), "--json")
        assert result.exit_code == 0, result.output
    with duckdb.connect(str(tmp_path / "data" / "gpufleet" / "actuals.duckdb")) as con:
        assert con.execute("SELECT count(*), count(DISTINCT file) FROM charges").fetchone() == (len(ROWS), 1)


def test_a_directory_of_parts_is_every_export_in_it(tmp_path: Path) -> None:
    parts = tmp_path / "export"
    parts.mkdir()
    write_csv(parts / "part-0.csv", ROWS[:4], COLUMNS)
    to_parquet(write_csv(tmp_path / "part-1.csv", ROWS[4:], COLUMNS)).rename(parts / "part-1.parquet")
    doc = actuals_json(tmp_path / "db.duckdb", "--focus", str(parts))
    assert [Path(f["file"]).name for f in doc["files"]] == ["part-0.csv", "part-1.parquet"]
    assert sum(s["usd"] for s in doc["gpu_spend"]) == pytest.approx(983.2 + 100 + 50 + 20 + 400 + 240 + 10)
