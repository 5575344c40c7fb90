"""Shorthand for `capacity apply` tests: plan files written by hand, a copy of the example stacks, the CLI."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from capacity.cli import app
from capacity.schema import CommitmentLine, PlanLine
from stacks.config import CONFIG_KEY, STACKS_DIR

runner = CliRunner()
JAN = "2027-01"  # 31 days: 744 hours
FEB = "2027-02"  # 28 days: 672 hours


def line(month: str, team: str, gpu: str, cloud: str, region: str, gpus: float, option: str = "on_demand",
         gang: int = 1) -> dict:
    hours = {JAN: 744, FEB: 672}[month]
    return {"month": month, "team": team, "gpu": gpu, "cloud": cloud, "region": region, "option": option,
            "gpu_hours": gpus * hours, "usd": 0, "gang_gpus": gang, "spot_ok": option == "spot"}


def write_plan(folder: Path, lines: list[dict], commitments: list[dict] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows, model in (("plan.csv", lines, PlanLine), ("commitments.csv", commitments or [], CommitmentLine)):
        header = list(model.model_fields)
        text = ",".join(header) + "\n" + "".join(",".join(str(r[h]).lower() if isinstance(r[h], bool) else str(r[h])
                                                          for h in header) + "\n" for r in rows)
        (folder / name).write_text(text)
    return folder


@pytest.fixture
def stacks(tmp_path: Path) -> Path:
    target = tmp_path / "stacks"
    target.mkdir()
    for f in STACKS_DIR.glob("Pulumi.*.yaml"):
        shutil.copy(f, target / f.name)
    return target


def apply(plan: Path, stacks: Path, month: str, *extra: str):
    return runner.invoke(app, ["apply", "--plan", str(plan), "--month", month, "--stacks-dir", str(stacks), *extra],
                         env={"COLUMNS": "250"})


def fleet(stacks: Path, name: str) -> dict:
    import yaml

    return yaml.safe_load((stacks / f"Pulumi.{name}.yaml").read_text())["config"][CONFIG_KEY]


def commitment(cloud: str, region: str, machine: str, option: str, nodes: int, gpu: str = "H100") -> dict:
    """A commitments.csv row from January of 8-GPU nodes (its charge is not what apply reads: 1 USD)."""
    return {"cloud": cloud, "region": region, "machine_type": machine, "gpu": gpu, "option": option,
            "start_month": JAN, "nodes": nodes, "gpus": 8 * nodes, "usd_total": 1}


def pending_pools(stacks: Path, name: str) -> list[tuple[str, dict]]:
    """(machine type, nodes) of the stack's pools whose capacity is still to buy."""
    pools = fleet(stacks, name)["clusters"][0]["node_pools"]
    return [(p["machine_type"], p["nodes"]) for p in pools if p.get("capacity", {}).get("id") == "pending"]
