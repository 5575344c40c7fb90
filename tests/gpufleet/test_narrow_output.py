"""Tables read at 80 columns, in a terminal or a CI log: names whole, numbers whole, prose wrapped
(capacity/terminal.py and every table the CLIs print)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from capacity.terminal import Column, print_table

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"
runner = CliRunner()


def narrow(*args: str) -> str:
    """The real CLI in an 80-column, non-TTY environment, as in a CI log."""
    env = {**os.environ, "COLUMNS": "80", "TERMINAL_WIDTH": "80"}
    done = subprocess.run([sys.executable, "-m", "gpufleet.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    return done.stdout


def words(text: str) -> set[str]:
    return set(re.findall(r"[\w.:/@$,+-]+", text))


def test_policy_list_shows_every_policy_name_whole_at_80_columns() -> None:
    out = narrow("policy", "list")
    names = [p["name"] for p in __import__("json").loads(narrow("policy", "list", "--format", "json"))]
    assert len(names) >= 30
    assert set(names) <= words(out), sorted(set(names) - words(out))
    assert max(map(len, out.splitlines())) <= 80


def test_a_table_that_fits_is_a_table_and_one_column_more_is_a_list() -> None:
    # two name columns of 10 and 12 characters and one prose column: 3 x 3 + 1 = 10 for rules and padding,
    # + 10 + 12 + 24 (the prose column's minimum) = 56 columns
    cols = [Column("a"), Column("b"), Column("why", prose=True)]
    rows = [("x" * 10, "y" * 12, "a sentence " * 8)]
    for width, table in ((56, True), (55, False)):
        console = Console(width=width, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
        print_table(console, "t", cols, rows)
        text = console.export_text()
        assert ("┃" in text or "│" in text) is table, (width, text)
        assert "x" * 10 in text and "y" * 12 in text
        assert max(map(len, text.splitlines())) <= width


def test_list_layout_keeps_numbers_whole_and_labels_them() -> None:
    console = Console(width=40, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    print_table(console, "plan", [Column("month"), Column("GPUs off", justify="right"),
                                  Column("USD/month", justify="right")],
                [("2027-01-extra-long-month-label", "1,024.5", "12,345,678")])
    text = console.export_text()
    assert "GPUs off 1,024.5" in text and "USD/month 12,345,678" in text and "…" not in text


def test_pr_text_keeps_resource_names_whole_at_80_columns() -> None:
    out = narrow("diff", "--pulumi-preview", str(DATA / "pulumi-preview.json"), "--format", "text")
    keys = set(re.findall(r"^(\S+::\S+)$", out, re.M))
    assert keys, out
    assert max(map(len, out.splitlines())) <= 80 or all("::" in line for line in out.splitlines() if len(line) > 80)


def test_netsim_estimate_prints_whole_numbers_at_80_columns() -> None:
    out = narrow("netsim", "estimate", "--profile", "intercontinental", "--workers", "4", "--bytes", "100MB")
    assert "…" not in out
    assert "428.4" in out  # the all-reduce seconds worked by hand in test_estimate_cli.py
