"""`capacity chargeback`: Kueue GPU-hours x the effective rate of the pool's capacity on the example aws-train stack,
the idle remainder as unallocated rows, in FOCUS 1.3's allocation columns. The bill and the Kueue records are FAKES
typed here; expected amounts are computed by hand in the comments."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from capacity.actuals import chargeback
from gpufleet.cli import app
from tests.capacity.focus_files import COLUMNS, charge, write_csv

STACK = Path(__file__).resolve().parents[2] / "stacks" / "Pulumi.aws-train.yaml"
CITED = json.loads((Path(__file__).resolve().parents[2] / "capacity/data/recorded/focus_allocation_columns.json")
                   .read_text())
BLOCK = "cr-0a1b2c3d4e5f60718"  # the h100 pool's capacity block in the example stack
TAGS = json.dumps({"team": "ml-platform", "gpufleet-cluster": "train"})
BILL = [
    # March 2026 (744 h): the block's 16 nodes x 744 h = 11,904 instance-hours at $39.33: 10,000 used, 1,904 unused
    charge("2026-03", 393_300.0, ProviderName="AWS", ConsumedQuantity=10_000, ConsumedUnit="Hours", Tags=TAGS,
           CapacityReservationId=BLOCK, CapacityReservationStatus="Used", ChargeDescription="p5.48xlarge block"),
    charge("2026-03", 74_884.32, ProviderName="AWS", ConsumedQuantity=1_904, ConsumedUnit="Hours",
           CapacityReservationId=BLOCK, CapacityReservationStatus="Unused", ChargeDescription="p5.48xlarge block"),
    # the on-demand a100-eval pool: 500 h of p4d.24xlarge (4,000 GPU-h) at $32.77
    charge("2026-03", 16_385.0, ProviderName="AWS", ConsumedQuantity=500, ConsumedUnit="Hours", Tags=TAGS,
           ChargeDescription="On Demand Linux p4d.24xlarge Instance Hour"),
]
USAGE = ("month,cohort,cluster_queue,flavor,gpu_hours\n"
         "2026-03,train,pretrain,h100,70000\n2026-03,train,research,h100,5000\n"
         "2026-03,train,research,a100-eval,3000\n2026-04,train,pretrain,h100,90000\n")


def _run(tmp_path: Path, usage: str = USAGE) -> tuple[int, str, list[dict[str, str]]]:
    (tmp_path / "usage.csv").write_text(usage)
    (tmp_path / "offers.csv").write_text(
        "cloud,region,machine_type,gpu,gpus_per_node,option,usd_per_gpu_hour,source,as_of\n"
        "aws,us-east-1,p5.48xlarge,H100,8,capacity_block,4.9,test,2026-01-01\n")
    export = write_csv(tmp_path / "focus.csv", BILL, COLUMNS)
    out = tmp_path / "chargeback.csv"
    result = CliRunner().invoke(app, ["capacity", "chargeback", "--focus", str(export), "--usage",
                                      str(tmp_path / "usage.csv"), "--stacks", str(STACK), "--offers",
                                      str(tmp_path / "offers.csv"), "--db", str(tmp_path / "db.duckdb"),
                                      "--out", str(out)])
    rows = list(csv.DictReader(out.open())) if out.exists() else []
    return result.exit_code, " ".join(result.output.split()), rows


def _by(rows: list[dict[str, str]]) -> dict[tuple[str, str, str], float]:
    return {(r["ChargePeriodStart"][:7], r["x_GpufleetSource"], r["AllocatedResourceName"] or "(unallocated)"):
            float(r["EffectiveCost"]) for r in rows}


def test_chargeback_rows_with_the_idle_remainder(tmp_path: Path) -> None:
    code, output, rows = _run(tmp_path)
    assert code == 0, output
    rate_block = (393_300 + 74_884.32) / (11_904 * 8)  # $/GPU-h: the block's cost over its paid GPU-hours
    rate_p4d = 16_385 / 4_000
    assert _by(rows) == pytest.approx({
        ("2026-03", BLOCK, "pretrain"): 70_000 * rate_block,
        ("2026-03", BLOCK, "research"): 5_000 * rate_block,
        ("2026-03", BLOCK, "(unallocated)"): 468_184.32 - 75_000 * rate_block,
        ("2026-03", "train/p4d.24xlarge/on_demand", "research"): 3_000 * rate_p4d,
        ("2026-03", "train/p4d.24xlarge/on_demand", "(unallocated)"): 16_385 - 3_000 * rate_p4d,
        # April has no bill: the block at its own price, paid for all 128 GPUs x 720 h
        ("2026-04", BLOCK, "pretrain"): 90_000 * 4.9,
        ("2026-04", BLOCK, "(unallocated)"): 128 * 720 * 4.9 - 90_000 * 4.9,
    })
    idle = [r for r in rows if not r["AllocatedResourceName"]]
    assert all(r["AllocatedResourceId"] == "" and r["AllocatedTags"] == "" for r in idle)  # FOCUS: null there
    team = next(r for r in rows if r["AllocatedResourceName"] == "pretrain" and r["ChargePeriodStart"][:7] == "2026-03")
    assert team["AllocatedResourceId"] == "train/pretrain" and team["ResourceId"] == BLOCK
    assert json.loads(team["AllocatedTags"]) == {"team": "pretrain"}
    elements = json.loads(team["AllocatedMethodDetails"])["Elements"]
    assert elements[0]["AllocatedRatio"] == pytest.approx(70_000 * rate_block / 468_184.32)
    assert elements[0]["UsageQuantity"] == 70_000 and elements[0]["UsageUnit"] == "GPU-Hours"
    assert "price table (capacity_block)" in {r["x_GpufleetRateSource"] for r in rows}


def test_allocation_columns_are_the_cited_focus_1_3_columns() -> None:
    allocation = [c for c in chargeback.COLUMNS if c.startswith("Allocated")]
    assert sorted(allocation) == sorted(CITED["columns"]) and CITED["version"] == "1.3"
    assert all(c in CITED["columns"] or c.startswith("x_") or c in json.loads(
        (Path(__file__).resolve().parents[2] / "capacity/data/recorded/focus_spec.json").read_text())["columns"]["1.2"]
        for c in chargeback.COLUMNS)


def test_a_record_of_no_pool_is_refused(tmp_path: Path) -> None:
    code, output, _ = _run(tmp_path, "month,cohort,cluster_queue,flavor,gpu_hours\n2026-03,train,pretrain,h10,5\n")
    assert code == 2
    assert "usage.csv: row 2, column cohort, flavor: 'train/h10' is no cluster/node pool of the stacks. Did you " \
           "mean 'train/h100'?" in output
