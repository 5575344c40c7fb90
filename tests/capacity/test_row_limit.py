"""More demand rows than one plan takes are refused up front, with the limit and the fix, never a traceback.
The limit is lowered for the test (it is read when a file is checked); the boundary is the same."""

from __future__ import annotations

from pathlib import Path

import pytest
from plan_helpers import offer, row
from typer.testing import CliRunner

from capacity import problem
from capacity.cli import app
from capacity.csvio import InputError
from capacity.inputs import load_demand
from capacity.schema import Option


def demand_file(tmp_path: Path, rows: int) -> Path:
    lines = ["month,team,gpu,gpu_hours,gang_gpus,spot_ok"] + [f"2026-01,t{i},H100,100,1,false" for i in range(rows)]
    path = tmp_path / "demand.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_demand_file_at_the_limit_loads_and_one_row_more_is_refused(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(problem, "MAX_DEMAND_ROWS", 3)
    assert len(load_demand(demand_file(tmp_path, 3))) == 3
    with pytest.raises(InputError) as err:
        load_demand(demand_file(tmp_path, 4))
    text = str(err.value)
    assert "'4' demand rows: more than the 3 one plan takes" in text and "Aggregate rows" in text


def test_the_cli_refuses_with_exit_2_and_no_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(problem, "MAX_DEMAND_ROWS", 3)
    result = CliRunner().invoke(app, ["plan", "--demand", str(demand_file(tmp_path, 4)), "--out",
                                      str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "more than the 3 one plan takes" in result.output + (result.stderr or "")
    assert "Traceback" not in result.output and not (tmp_path / "out").exists()


def test_building_a_problem_over_the_limit_is_refused_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(problem, "MAX_DEMAND_ROWS", 1)
    with pytest.raises(InputError):
        problem.build([row("2026-01", "a", 1), row("2026-01", "b", 1)], [offer("r1", Option.ON_DEMAND, 1.0)], None)
