"""Journey: finance records the capacity ledger where the credentials are (`gpufleet capacity ledger --live --format
json > ledger.json`); a platform engineer opens a pull request on aws-train, and CI runs `gpufleet pr --ledger
ledger.json`. The h100 pool still draws on its capacity block, which ended yesterday: the PR is blocked and the
comment's first line says why; a reservation in the stack's region that no pool draws on is advice under the stack.

The ledger is a FAKE in the shape the live command prints (docs/ledger.md), dated from today."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.cli import app
from tests.gpufleet.gitrepo import example_stacks_branch
from tests.gpufleet.test_pr_reserved_capacity import BLOCK, ODCR, ledger


def test_a_pool_on_an_ended_block_blocks_the_pr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the change under review leaves the h100 pool as it is: a fleet tag
    repo = example_stacks_branch(tmp_path, "aws-train", lambda fleet: fleet["tags"].update(owner="alice"))
    recorded = ledger(tmp_path / "ledger.json", -dt.timedelta(days=1))
    monkeypatch.chdir(repo)
    out = CliRunner().invoke(app, ["pr", "--base", "main", "--no-policies", "--ledger", str(recorded)])
    assert out.exit_code == 3, out.output
    lines = out.stdout.splitlines()
    assert lines[1].startswith(f"## Blocked: stack aws-train: reserved capacity: pool aws-train/train/h100 draws on "
                               f"capacity_block {BLOCK}, which ended on ")
    assert "### ⛔ This change is blocked" in out.stdout and "its nodes cannot start on it" in out.stdout
    assert f"> ⚠️ reserved capacity (idle billed): capacity_reservation {ODCR} (16 GPUs in use1-az4)" in out.stdout
    assert "which ended on" in out.stderr  # the reason is on stderr too
