"""Journey: a platform engineer opens a pull request on the aws-train stack and CI runs `gpufleet pr`. A change
that adds a GPU pool nobody can price, or that lowers the budget below the stack's cost, must not pass: the command
exits 3 and the comment's first line says why (docs/pr-comment.md, "Exit codes"). Unknown is never $0: the
comment's cost says "at least" and names the pool it leaves out.

The prices are a FAKE offers file typed here (round numbers): p5.48xlarge capacity block $5/GPU-h and p4d.24xlarge
on-demand $3/GPU-h; nothing prices g6e.12xlarge in it or in the list-price table."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.cli import app
from tests.gpufleet.gitrepo import example_stacks_branch

FAKE_OFFERS = ("cloud,region,machine_type,gpu,gpus_per_node,option,usd_per_gpu_hour,source,as_of\n"
               "aws,us-east-1,p5.48xlarge,H100,8,capacity_block,5.0,fake,2026-11-01\n"
               "aws,us-east-1,p4d.24xlarge,A100-40GB,8,on_demand,3.0,fake,2026-11-01\n")


def _repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change) -> Path:
    monkeypatch.chdir(example_stacks_branch(tmp_path, "aws-train", change))
    offers = tmp_path / "offers.csv"
    offers.write_text(FAKE_OFFERS)
    return offers


def _add_unpriced_pool(fleet: dict) -> None:
    cluster = fleet["clusters"][0]
    cluster["node_pools"].append({"name": "l40s", "machine_type": "g6e.12xlarge", "nodes": {"min": 0, "max": 2},
                                  "zone": "use1-az6"})


def test_an_unpriced_gpu_pool_blocks_the_pr_and_the_comment_says_so_first(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    offers = _repo(tmp_path, monkeypatch, _add_unpriced_pool)
    out = CliRunner().invoke(app, ["pr", "--base", "main", "--no-policies", "--offers", str(offers)])
    assert out.exit_code == 3, out.output
    lines = out.stdout.splitlines()
    assert lines[1].startswith("## Blocked: stack aws-train: cannot price GPU pool train-l40s-ng "
                               "(2 x g6e.12xlarge, on-demand, us-east-1)")
    # the new pool adds an unknown amount >= 0: the priced pools' delta is a lower bound, and says what it leaves out
    assert "**Monthly cost will change by at least +0 USD: it leaves out train-l40s-ng (2 x g6e.12xlarge" in out.stdout
    # aws-train's Lustre has no sourced rate at its tier either (capacity/data/prices/typed.json): named, not $0
    assert "at least $" in out.stdout and "(train-l40s-ng, train-lustre-fsx unpriced)" in out.stdout
    assert "| after | `train-l40s-ng` | g6e.12xlarge | 2 | 8 L40S | on-demand | unpriced |" in out.stdout
    assert "cannot price GPU pool train-l40s-ng" in out.stderr


def test_a_budget_lowered_below_the_cost_blocks_the_pr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def lower(fleet: dict) -> None:
        fleet["monthly_budget_usd"] = 1000

    offers = _repo(tmp_path, monkeypatch, lower)
    out = CliRunner().invoke(app, ["pr", "--base", "main", "--offers", str(offers)])
    assert out.exit_code == 3, out.output
    first = out.stdout.splitlines()[1]
    assert first.startswith("## Blocked: stack aws-train: new mandatory violation of stack-monthly-budget: estimated "
                            "at least $")  # at least: aws-train's Lustre has no sourced rate at its tier
    assert "exceeds the budget of $1,000" in first
    assert "### ⛔ This change is blocked" in out.stdout
