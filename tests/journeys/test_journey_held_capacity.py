"""Journey: finance records the capacity ledger (`gpufleet capacity ledger --live --format json`), plans the next two
months from it (`gpufleet capacity report --ledger`), reads in the report how much of the capacity the fleet already
holds the plan uses, what sits idle, and that the example stack's capacity block ends inside the plan; a platform
engineer applies the first month (the team's Kueue quota to what the plan runs at once on the block while it lasts;
the plan spends nothing there: the block is paid for) and opens the pull request, whose comment says the block is
ending.

The ledger is the offline `capacity ledger --format json` of the example stacks with the live fields of the aws-train
block filled in as `--live` records them (a FAKE: start a week ago, end on the 16th of next month, 00:00 UTC); the
GCP and Azure entries stay offline. Offers are round FAKE prices: on demand $10 per GPU-hour, a capacity block $5
(charged 840 h). Dates follow today's, so the pull request's check (which reads the clock) sees the block ending.

By hand, M1 = next month, M2 = the month after, h2 = hours(M2):
  the block holds 128 GPUs for the first 15 days of M1: 128 x 360 = 46,080 GPU-hours, and nothing in M2;
  M1 demand 96 x 360 = 34,560 GPU-hours: all on the block, nothing bought; 11,520 GPU-hours of it idle;
  M2 demand 64 x h2: the block has ended; 8 new block nodes, 8 x 8 x 840 x $5 = $268,800 (on demand: 640 x h2 >=
  $430,080); total spend $268,800; the report says the block ends inside the plan and the 64 x h2 GPU-hours of
  M2 run on a capacity block bought in aws/us-east-1. The GCP and Azure entries are left out: their end is unknown.
"""

from __future__ import annotations

import calendar
import datetime as dt
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from capacity.cli import app as capacity_app
from gpufleet.cli import app
from stacks.config import STACKS_DIR
from tests.gpufleet.gitrepo import commit_on_main_then_branch

BLOCK = "cr-0a1b2c3d4e5f60718"
FAKE_OFFERS = ("cloud,region,machine_type,gpu,gpus_per_node,option,usd_per_gpu_hour,source,as_of\n"
               "aws,us-east-1,p5.48xlarge,H100,8,on_demand,10.0,fake,2026-11-01\n"
               "aws,us-east-1,p5.48xlarge,H100,8,capacity_block,5.0,fake,2026-11-01\n")


def _month(first: dt.date, ahead: int) -> tuple[str, int]:
    index = first.year * 12 + first.month - 1 + ahead
    year, month = divmod(index, 12)
    return f"{year:04d}-{month + 1:02d}", calendar.monthrange(year, month + 1)[1] * 24


def test_the_plan_starts_from_the_held_block_and_names_its_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(STACKS_DIR, repo / "stacks", ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    commit_on_main_then_branch(repo)
    now = dt.datetime.now(dt.UTC)
    (m1, _), (m2, h2) = _month(now.date(), 1), _month(now.date(), 2)
    end = dt.datetime.fromisoformat(f"{m1}-16T00:00:00+00:00")

    recorded = CliRunner().invoke(capacity_app, ["ledger", "--stacks", str(repo / "stacks"), "--format", "json"])
    assert recorded.exit_code == 0, recorded.output
    document = json.loads(recorded.stdout)
    block = next(e for e in document["entries"] if e["id"] == BLOCK)
    block.update(start=(now - dt.timedelta(days=7)).isoformat(), end=end.isoformat(), state="active", active=True,
                 source="stacks+live")
    ledger = tmp_path / "ledger.json"
    ledger.write_text(json.dumps(document))
    offers, demand = tmp_path / "offers.csv", tmp_path / "demand.csv"
    offers.write_text(FAKE_OFFERS)
    demand.write_text("month,team,gpu,gpu_hours,gang_gpus,spot_ok\n"
                      f"{m1},pretrain,H100,{96 * 360},1,false\n{m2},pretrain,H100,{64 * h2},1,false\n")

    out = tmp_path / "report"
    planned = CliRunner().invoke(capacity_app, ["report", "--demand", str(demand), "--offers", str(offers), "--ledger",
                                                str(ledger), "--out", str(out), "--time-limit", "30"])
    assert planned.exit_code == 0, planned.output
    assert "a3mega-train: not used as held capacity: its state and end are unknown" in planned.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["total_usd"] == 268_800 and summary["check"]["ok"]
    assert (out / "commitments.csv").read_text().splitlines()[1:] == [
        f"aws,us-east-1,p5.48xlarge,H100,capacity_block,{m2},8,64,268800"]
    held = summary["held"]
    assert (held["gpu_hours"], held["used_gpu_hours"], held["idle_gpu_hours"]) == (46_080, 34_560, 11_520)
    assert len(held["left_out"]) == 2  # the GCP reservation and the Azure group: read offline
    entry, = held["capacity"]
    assert (entry["id"], entry["months"], entry["ends_inside_plan"]) == (BLOCK, [m1], True)
    assert entry["after_end"] == [{"cloud": "aws", "region": "us-east-1", "option": "capacity_block",
                                   "gpu_hours": 64 * h2}]
    ending = (f"{BLOCK} (capacity_block, 128 H100 GPUs in aws/us-east-1) ends {end.isoformat()}, inside the plan's "
              f"use of it ({m1}). From {m1} on the plan runs its H100 work from elsewhere: {64 * h2:,} capacity_block "
              "in aws/us-east-1 GPU-hours.")
    page = (out / "report.html").read_text()
    assert 'id="held"' in page and "34,560 of their 46,080 GPU-hours" in page and "11,520 sit idle" in page
    assert ending.replace("'", "&#39;") in page
    assert f"> **Ends inside the plan:** {ending}" in (out / "report.md").read_text()

    applied = CliRunner().invoke(capacity_app, ["apply", "--plan", str(out), "--month", m1, "--stacks-dir",
                                                str(repo / "stacks"), "--write"], env={"COLUMNS": "250"})
    assert applied.exit_code == 0, applied.output
    # the 34,560 GPU-hours run inside the block's 360 hours: 96 GPUs at once, not the month's average of 34,560 / h1
    assert "- {name: pretrain, gpus: {H100: 96}}" in (repo / "stacks" / "Pulumi.aws-train.yaml").read_text()
    monkeypatch.chdir(repo)
    comment = CliRunner().invoke(app, ["pr", "--base", "main", "--no-policies", "--offers", str(offers), "--ledger",
                                       str(ledger), "--warn-days", "62"])
    assert comment.exit_code == 0, comment.output
    aws = next(s for s in comment.stdout.split("### Stack `") if s.startswith("aws-train`"))
    assert (f"> ⚠️ reserved capacity (ending): pool aws-train/train/h100 draws on capacity_block {BLOCK}, which ends "
            f"on {end.date().isoformat()} (in ") in aws  # the same end the report names, before it cuts the plan
