"""`gpufleet diff --ledger`: the head graph's pools against a recorded capacity ledger. A pool on a capacity block
that has ended blocks (exit 3: its nodes cannot start); one ending within --warn-days and an active reservation no
pool draws on are advice (exit 0), in the JSON with ``blocking`` and in the comment. The ledger is a FAKE in the
shape `capacity ledger --live --format json` prints, dated from the clock the command reads (now)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.engine.capture import Graph, run_program
from tests.conftest import example_fleet

BLOCK, ODCR = "cr-0a1b2c3d4e5f60718", "cr-0123456789abcdef0"  # the example stack's block; an idle reservation
OFFERS = Path(__file__).parent / "data" / "offers.csv"


def ledger(path: Path, block_ends_in: dt.timedelta) -> Path:
    now = dt.datetime.now(dt.UTC)
    entries = [
        {"cloud": "aws", "kind": "capacity_block", "id": BLOCK, "region": "us-east-1", "zone": "use1-az6",
         "machine_type": "p5.48xlarge", "gpus": 128, "start": (now - dt.timedelta(days=7)).isoformat(),
         "end": (now + block_ends_in).isoformat(), "references": [{"stack": "aws-train", "cluster": "train",
                                                                   "pool": "h100"}],
         "state": "active", "active": True, "source": "stacks+live"},
        {"cloud": "aws", "kind": "capacity_reservation", "id": ODCR, "region": "us-east-1", "zone": "use1-az4",
         "machine_type": "p5.48xlarge", "gpus": 16, "end": None, "state": "active", "active": True, "source": "live"},
        {"cloud": "aws", "kind": "capacity_reservation", "id": "cr-0fedcba9876543210", "region": "eu-west-1",
         "machine_type": "p5.48xlarge", "gpus": 8, "end": None, "state": "active", "active": True, "source": "live"}]
    path.write_text(json.dumps({"entries": entries}))
    return path


@pytest.fixture(scope="module")
def previews(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """aws-train before and after a change that leaves its h100 pool on the block (a fleet tag)."""
    def doc(g: Graph) -> dict[str, Any]:
        return {"schema": "gpufleet.preview/v1", "project": "gpufleet", "stack": "aws-train", "errors": [],
                "resources": [{"type": x.type, "name": x.name, "parent": x.parent, "custom": x.custom,
                               "inputs": x.inputs, "dependencies": x.dependencies} for x in g.resources]}
    tagged = example_fleet("aws-train")
    tagged["tags"]["owner"] = "alice"
    out = tmp_path_factory.mktemp("previews")
    for name, fleet in (("base", example_fleet("aws-train")), ("head", tagged)):
        (out / f"{name}.json").write_text(json.dumps(doc(run_program("aws-train", {"gpufleet:fleet": fleet}))))
    return out / "base.json", out / "head.json"


def diff(previews: tuple[Path, Path], *args: str) -> Any:
    return CliRunner().invoke(app, ["diff", *map(str, previews), "--offers", str(OFFERS), *args])


def test_an_expired_block_blocks_and_the_idle_reservation_is_advice(previews: tuple[Path, Path],
                                                                    tmp_path: Path) -> None:
    path = ledger(tmp_path / "ledger.json", -dt.timedelta(days=1))
    out = diff(previews, "--ledger", str(path), "--format", "json")
    assert out.exit_code == 3, out.output
    doc = json.loads(out.stdout)
    flags = {(f["rule"], f["id"], f["blocking"]) for f in doc["stacks"][0]["capacity"]["flags"]}
    assert flags == {("expired", BLOCK, True), ("idle_billed", ODCR, False)}  # eu-west-1 is no pool's region
    assert doc["blocked_by"][0]["reason"].startswith(f"reserved capacity: pool aws-train/train/h100 draws on "
                                                     f"capacity_block {BLOCK}, which ended on ")
    assert doc["ledger"]["file"] == str(path) and doc["ledger"]["warn_days"] == 30
    assert doc["headline"].startswith("Blocked: stack aws-train: reserved capacity: pool aws-train/train/h100")


def test_ending_soon_is_advice_and_warn_days_sets_the_window(previews: tuple[Path, Path], tmp_path: Path) -> None:
    path = ledger(tmp_path / "ledger.json", dt.timedelta(days=10, hours=1))
    out = diff(previews, "--ledger", str(path), "--format", "markdown")
    assert out.exit_code == 0, out.output
    assert (f"> ⚠️ reserved capacity (ending): pool aws-train/train/h100 draws on capacity_block {BLOCK}, which ends "
            "on ") in out.stdout and "(in 10 day(s), within 30): renew or replace it before then." in out.stdout
    assert (f"> ⚠️ reserved capacity (idle billed): capacity_reservation {ODCR} (16 GPUs in use1-az4) is active and "
            "billed") in out.stdout
    assert "cr-0fedcba9876543210" not in out.stdout and "blocked" not in out.stdout.lower()
    narrower = json.loads(diff(previews, "--ledger", str(path), "--warn-days", "10", "--format", "json").stdout)
    assert [f["rule"] for f in narrower["stacks"][0]["capacity"]["flags"]] == ["idle_billed"]


def test_without_a_ledger_nothing_is_judged_and_a_bad_one_is_refused(previews: tuple[Path, Path],
                                                                     tmp_path: Path) -> None:
    doc = json.loads(diff(previews, "--format", "json").stdout)
    assert doc["ledger"] is None and doc["stacks"][0]["capacity"] == {"note": "", "flags": []}
    bad = tmp_path / "ledger.json"
    bad.write_text(json.dumps({"entries": [{"cloud": "aws", "kind": "capacity_block"}]}))
    out = diff(previews, "--ledger", str(bad))
    assert out.exit_code == 2
    assert f"{bad}, column entries[0].id: Field required." in " ".join(out.output.split())
