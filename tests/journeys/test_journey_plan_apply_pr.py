"""Journey: finance accepts a capacity plan, a platform engineer runs `gpufleet capacity apply --write` for its first
month and opens the pull request; CI runs `gpufleet pr`. The comment shows what the plan spends on the work it
places in each stack, beside the cost of every pool at its max nodes (docs/capacity.md, "Apply").

The plan is written by hand (one month, 2027-01, 744 hours) with round FAKE prices, and so is the offers file the
comment prices pools with. What the plan spends, by hand:
  aws-train  pretrain on demand 6 GPUs x 744 h x $10 = 44,640; eval spot 20 x 744 x $3 = 44,640; the 16-node
             capacity block it holds, one month: 16 x 8 x 840 h x $5 = 537,600            -> $626,880
  gcp-train  pretrain on demand 8 x 744 x $10 = 59,520; the 8-node reservation, one month:
             8 x 8 x 744 h x $10 = 476,160                                                -> $535,680
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from capacity.cli import app as capacity_app
from gpufleet.cli import app
from stacks.config import STACKS_DIR
from tests.capacity.apply_helpers import JAN, line, write_plan
from tests.gpufleet.gitrepo import commit_on_main_then_branch

FAKE_OFFERS = ("cloud,region,machine_type,gpu,gpus_per_node,option,usd_per_gpu_hour,source,as_of\n"
               "aws,us-east-1,p5.48xlarge,H100,8,capacity_block,5.0,fake,2026-11-01\n"
               "aws,us-east-1,p5.48xlarge,H100,8,spot,3.0,fake,2026-11-01\n"
               "aws,us-east-1,p4d.24xlarge,A100-40GB,8,on_demand,3.0,fake,2026-11-01\n"
               "gcp,us-central1,a3-megagpu-8g,H100,8,reservation,10.0,fake,2026-11-01\n"
               "gcp,us-central1,a3-ultragpu-8g,H200,8,flex_start,10.0,fake,2026-11-01\n")


def _priced(row: dict, usd_per_gpu_hour: float) -> dict:
    return {**row, "usd": round(row["gpu_hours"] * usd_per_gpu_hour, 2)}


def test_the_pr_after_apply_shows_what_the_plan_spends_per_stack(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(STACKS_DIR, repo / "stacks", ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    commit_on_main_then_branch(repo)
    plan = write_plan(tmp_path / "plan", [
        line(JAN, "pretrain", "H100", "aws", "us-east-1", 90, "capacity_block", gang=64),
        _priced(line(JAN, "pretrain", "H100", "aws", "us-east-1", 6, gang=64), 10.0),
        _priced(line(JAN, "eval", "H100", "aws", "us-east-1", 20, "spot"), 3.0),
        line(JAN, "pretrain", "H100", "gcp", "us-central1", 40, "reservation", gang=64),
        _priced(line(JAN, "pretrain", "H100", "gcp", "us-central1", 8, gang=64), 10.0),
    ], [{"cloud": "aws", "region": "us-east-1", "machine_type": "p5.48xlarge", "gpu": "H100",
         "option": "capacity_block", "start_month": JAN, "nodes": 16, "gpus": 128, "usd_total": 537_600},
        {"cloud": "gcp", "region": "us-central1", "machine_type": "a3-megagpu-8g", "gpu": "H100",
         "option": "reservation", "start_month": JAN, "nodes": 8, "gpus": 64, "usd_total": 476_160}])
    applied = CliRunner().invoke(capacity_app, ["apply", "--plan", str(plan), "--month", JAN, "--stacks-dir",
                                                str(repo / "stacks"), "--write"], env={"COLUMNS": "250"})
    assert applied.exit_code == 0, applied.output
    assert "gpufleet:capacity_plan: {month: 2027-01, usd_per_month: 626880.0}" in \
        (repo / "stacks" / "Pulumi.aws-train.yaml").read_text()
    again = CliRunner().invoke(capacity_app, ["apply", "--plan", str(plan), "--month", JAN, "--stacks-dir",
                                              str(repo / "stacks")], env={"COLUMNS": "250"})
    assert "No stack file changes." in again.output  # the record is part of what applying twice leaves alone

    monkeypatch.chdir(repo)
    offers = tmp_path / "offers.csv"
    offers.write_text(FAKE_OFFERS)
    out = CliRunner().invoke(app, ["pr", "--base", "main", "--no-policies", "--offers", str(offers)])
    assert out.exit_code == 0, out.output
    sections = out.stdout.split("### Stack `")
    aws = next(s for s in sections if s.startswith("aws-train`"))
    gcp = next(s for s in sections if s.startswith("gcp-train`"))
    assert "Capacity plan for 2027-01: $626,880 for the work it places in this stack" in aws
    assert "Capacity plan for 2027-01: $535,680 for the work it places in this stack" in gcp
    document = CliRunner().invoke(app, ["pr", "--base", "main", "--no-policies", "--offers", str(offers),
                                        "--format", "json"])
    stacks = {s["stack"]: s for s in json.loads(document.stdout)["stacks"]}
    assert stacks["aws-train"]["capacity_plan"] == {"month": "2027-01", "usd_per_month": 626_880.0}
