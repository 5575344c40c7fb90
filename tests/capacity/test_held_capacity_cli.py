"""`gpufleet capacity plan --ledger`: the capacity blocks the example stacks reference, recorded live, are supply the
plan uses first. The ledger is the offline `capacity ledger --format json` of the example stacks, with the aws-train
block's live fields filled in as `--live` records them (a FAKE: active, 1 Dec 2026 to 1 Feb 2027); the GCP and Azure
entries stay as read offline (end unknown) and are left out, each named. Offers are round FAKE prices.

By hand: the block holds 16 p5.48xlarge nodes, 128 H100 GPUs, all January 2027 (744 h): 95,232 GPU-hours.
* A 128-GPU gang needing 95,232 GPU-hours: the block holds it; nothing bought, $0.
* 144 x 744 = 107,136 GPU-hours of jobs that may spread: 11,904 more than the block, 16 GPUs all month: two
  new block nodes, 2 x 8 x 840 h x $5 = $67,200 (on demand: 11,904 x $10 = $119,040).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from capacity.cli import app

BLOCK = "cr-0a1b2c3d4e5f60718"
OFFERS = ("cloud,region,machine_type,gpu,gpus_per_node,option,usd_per_gpu_hour,source,as_of\n"
          "aws,us-east-1,p5.48xlarge,H100,8,on_demand,10.0,fake,2026-11-01\n"
          "aws,us-east-1,p5.48xlarge,H100,8,capacity_block,5.0,fake,2026-11-01\n")


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    recorded = CliRunner().invoke(app, ["ledger", "--format", "json"])
    assert recorded.exit_code == 0, recorded.output
    document = json.loads(recorded.stdout)
    block = next(e for e in document["entries"] if e["id"] == BLOCK)
    assert (block["machine_type"], block["gpus"]) == ("p5.48xlarge", 128)  # what the stack's pool holds
    block.update(start="2026-12-01T00:00:00+00:00", end="2027-02-01T00:00:00+00:00", state="active", active=True,
                 source="stacks+live")
    path = tmp_path_factory.mktemp("ledger") / "ledger.json"
    path.write_text(json.dumps(document))
    return path


def plan(tmp_path: Path, ledger: Path, row: str, *more: str) -> tuple[dict, Path]:
    (tmp_path / "demand.csv").write_text(f"month,team,gpu,gpu_hours,gang_gpus,spot_ok\n{row}\n")
    (tmp_path / "offers.csv").write_text(OFFERS)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["plan", "--demand", str(tmp_path / "demand.csv"), "--offers",
                                      str(tmp_path / "offers.csv"), "--out", str(out), "--ledger", str(ledger),
                                      "--time-limit", "30", *more], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return json.loads((out / "summary.json").read_text()), out


def test_demand_the_stacks_block_can_hold_buys_no_new_block(tmp_path: Path, ledger: Path) -> None:
    summary, out = plan(tmp_path, ledger, "2027-01,pretrain,H100,95232,128,false")
    assert (out / "commitments.csv").read_text().splitlines()[1:] == []
    assert summary["total_usd"] == 0 and summary["unmet_gpu_hours"] == 0 and summary["check"]["ok"]
    held = summary["held"]
    assert (held["gpu_hours"], held["used_gpu_hours"], held["idle_gpu_hours"]) == (95_232, 95_232, 0)
    assert [c["id"] for c in held["capacity"]] == [BLOCK]
    assert not held["capacity"][0]["ends_inside_plan"]  # it ends with the horizon
    assert sorted(x.split(":")[0] for x in held["left_out"]) == [
        "azure /subscriptions/3f2a6b1c-9d4e-4f5a-8b7c-1d2e3f4a5b6c/resourceGroups/capacity/providers/"
        "Microsoft.Compute/capacityReservationGroups/nd-h100-eastus2", "gcp a3mega-train"]
    assert (out / "held.csv").read_text().splitlines()[1].startswith(f"{BLOCK},aws,us-east-1,p5.48xlarge,H100,128,")


def test_demand_beyond_the_block_buys_only_the_difference(tmp_path: Path, ledger: Path) -> None:
    summary, out = plan(tmp_path, ledger, "2027-01,research,H100,107136,1,false")
    assert (out / "commitments.csv").read_text().splitlines()[1:] == [
        "aws,us-east-1,p5.48xlarge,H100,capacity_block,2027-01,2,16,67200"]
    assert summary["total_usd"] == 67_200 and summary["check"]["ok"]
    assert summary["held"]["used_gpu_hours"] == 95_232


def test_the_text_summary_shows_the_held_block(tmp_path: Path, ledger: Path) -> None:
    (tmp_path / "demand.csv").write_text("month,team,gpu,gpu_hours,gang_gpus,spot_ok\n"
                                         "2027-01,research,H100,47616,1,false\n2027-02,research,H100,1000,1,false\n")
    (tmp_path / "offers.csv").write_text(OFFERS)
    result = CliRunner().invoke(app, ["plan", "--demand", str(tmp_path / "demand.csv"), "--offers",
                                      str(tmp_path / "offers.csv"), "--out", str(tmp_path / "out"), "--ledger",
                                      str(ledger), "--time-limit", "30"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    row = next([c.strip() for c in line.split("│")[1:-1]] for line in result.stdout.splitlines() if BLOCK in line)
    assert row == [BLOCK, "aws/us-east-1", "p5.48xlarge", "128", "2027-02-01T00:00:00+00:00", "95,232", "47,616",
                   "47,616"]  # half the block idle in January
    assert "ends inside the plan" in result.stdout  # February's 1,000 GPU-hours run after it ends
    assert "From 2027-02 on the plan runs its H100 work from elsewhere: 1,000 on_demand in aws/us-east-1" \
        in " ".join(result.stdout.split())


def test_a_ledger_that_is_not_one_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "ledger.json"
    bad.write_text(json.dumps({"entries": [{"cloud": "aws", "kind": "capacity_block"}]}))
    (tmp_path / "demand.csv").write_text("month,team,gpu,gpu_hours,gang_gpus,spot_ok\n2027-01,r,H100,10,1,false\n")
    result = CliRunner().invoke(app, ["plan", "--demand", str(tmp_path / "demand.csv"), "--out", str(tmp_path / "o"),
                                      "--ledger", str(bad)])
    assert result.exit_code == 2
    assert "entries[0].id" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "o").exists()  # nothing half-built
