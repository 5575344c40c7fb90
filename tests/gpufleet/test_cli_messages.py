"""CLI messages: a missing or empty stacks folder fails clearly, stack names get a did-you-mean, tables name their
stack, YAML errors cite the file and keep their lines."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.engine.preview import Preview, preview_stack
from gpufleet.engine.render import summary_tables
from stacks.config import STACKS_DIR


@pytest.mark.parametrize("command", [["preview", "--all"], ["policy", "check", "--all"], ["preview", "-s", "dev"]])
def test_missing_or_empty_stacks_dir_fails_with_a_message(command: list[str], tmp_path: Path) -> None:
    for folder, words in ((tmp_path / "nope", "no such folder"), (tmp_path, "no Pulumi.<stack>.yaml stack files")):
        out = CliRunner().invoke(app, [*command, "--stacks-dir", str(folder)])
        assert out.exit_code == 2
        said = " ".join(out.stderr.split())  # rich wraps long lines
        assert words in said and str(folder) in said


@pytest.mark.parametrize("command", [["preview", "-s", "aws-trian"], ["policy", "check", "-s", "aws-trian"],
                                     ["policy", "config", "-s", "aws-trian"]])
def test_a_misspelt_stack_gets_a_did_you_mean(command: list[str]) -> None:
    out = CliRunner().invoke(app, command)
    assert out.exit_code == 2
    said = " ".join(out.stderr.split())
    assert "Did you mean 'aws-train'?" in said and "Stacks: aws-train, azure-train, dev, fleet, gcp-train" in said


def test_summary_tables_name_their_stack() -> None:
    console = Console(record=True, width=120)
    console.print(summary_tables(Preview(stack="gcp-train")))
    text = " ".join(console.export_text().split())
    assert "stack gcp-train: resources by type" in text and "stack gcp-train: GPUs by model" in text


def test_yaml_errors_cite_the_file_and_keep_their_lines(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.broken.yaml").write_text((STACKS_DIR / "Pulumi.dev.yaml").read_text() + "  bad: [1, 2\n")
    [error] = preview_stack("broken", tmp_path).errors
    assert "<unicode string>" not in error
    marks = [line for line in error.splitlines() if line.strip().startswith('in "')]
    assert marks and all(str(tmp_path / "Pulumi.broken.yaml") in m for m in marks)  # in "<file>", line N, column M
    assert len(error.splitlines()) > 2
