"""`capacity ledger`, `actuals` and `chargeback` speak the project's `--format json` (ledger and actuals also keep
the `--json` the issue names, as the same choice), and their tables read at 80 columns: names whole, no line wider."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

import capacity.actuals.cli
import capacity.ledger.cli
from gpufleet.cli import app
from tests.capacity.focus_files import COLUMNS, charge, write_csv
from tests.capacity.test_actuals_chargeback import BILL, BLOCK, USAGE

STACK = Path(__file__).resolve().parents[2] / "stacks" / "Pulumi.aws-train.yaml"
AZURE_GROUP = ("/subscriptions/3f2a6b1c-9d4e-4f5a-8b7c-1d2e3f4a5b6c/resourceGroups/capacity/providers/"
               "Microsoft.Compute/capacityReservationGroups/nd-h100-eastus2")  # stacks/Pulumi.azure-train.yaml


def _narrow(*args: str) -> str:
    """stdout at 80 columns (a CI log): the JSON as printed, or the tables as the console shows them."""
    narrow = Console(width=80, record=True, file=io.StringIO())
    with pytest.MonkeyPatch.context() as m:
        for module in (capacity.ledger.cli, capacity.actuals.cli):
            m.setattr(module, "console", narrow)
        result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout + narrow.export_text()


def _fits_80(text: str, *longer: str) -> None:
    """No cell cut, no line over 80 but a single name that is itself longer (printed whole, on its own line)."""
    assert "…" not in text
    assert all(len(line) <= 80 or line.strip() in longer for line in text.splitlines())


def test_ledger_json_is_format_json() -> None:
    by_flag = json.loads(_narrow("capacity", "ledger", "--json"))
    by_format = json.loads(_narrow("capacity", "ledger", "--format", "json"))
    assert by_flag == by_format and {e["id"] for e in by_flag["entries"]} >= {BLOCK, "a3mega-train"}


def test_ledger_table_at_80_columns_keeps_the_long_azure_id_whole() -> None:
    shown = _narrow("capacity", "ledger")
    _fits_80(shown, AZURE_GROUP)
    assert AZURE_GROUP in shown.splitlines() and BLOCK in shown  # the id was cut to its last 48 characters before


def test_actuals_json_is_format_json_and_its_tables_fit(tmp_path: Path) -> None:
    export = write_csv(tmp_path / "focus.csv", BILL, COLUMNS)
    base = ("capacity", "actuals", "--focus", str(export), "--db", str(tmp_path / "db.duckdb"))
    assert json.loads(_narrow(*base, "--json")) == json.loads(_narrow(*base, "--format", "json"))
    shown = _narrow(*base)
    _fits_80(shown)
    assert BLOCK in shown and "GPU spend by team and month" in shown


def test_chargeback_rows_as_json_and_as_a_table_at_80(tmp_path: Path) -> None:
    (tmp_path / "usage.csv").write_text(USAGE)
    export = write_csv(tmp_path / "focus.csv", [*BILL, charge("2026-03", 1.0, ProviderName="AWS")], COLUMNS)
    base = ("capacity", "chargeback", "--focus", str(export), "--usage", str(tmp_path / "usage.csv"), "--stacks",
            str(STACK), "--db", str(tmp_path / "db.duckdb"), "--out", str(tmp_path / "cb.csv"))
    rows = json.loads(_narrow(*base, "--format", "json"))["rows"]
    pretrain = [r for r in rows if r["AllocatedResourceName"] == "pretrain" and r["ChargePeriodStart"][:7] == "2026-03"]
    assert len(pretrain) == 1 and pretrain[0]["ConsumedQuantity"] == 70_000 and pretrain[0]["ResourceId"] == BLOCK
    assert any(r["AllocatedResourceName"] is None for r in rows)  # unallocated: null, as the CSV leaves it empty
    shown = _narrow(*base)
    _fits_80(shown)
    assert "pretrain" in shown and "(unallocated)" in shown
