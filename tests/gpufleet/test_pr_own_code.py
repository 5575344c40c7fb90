"""`gpufleet pr` in a repository that holds the gpufleet code itself (this one's case): the merge base is previewed
with its own code, every touched stack in one subprocess that runs while the working tree is previewed, and a
program that fails at the base is told apart from the stacks that preview."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpufleet.cli import app
from tests.gpufleet.gitrepo import commit_on_main_then_branch, git

ROOT = Path(__file__).resolve().parents[2]
OFFERS = Path(__file__).parent / "data" / "offers.csv"
STACKS = ("dev", "dev2")  # dev2: a copy of dev under another name, two small stacks keep the test short
BOOM = "if pulumi.get_stack() == 'dev2':\n    raise RuntimeError('boom at the base')\n"


def _project(tmp_path: Path, base_main: str = "") -> Path:
    """A copy of the project with two small stacks; ``base_main`` is prepended to the program's loop on main only."""
    repo = tmp_path / "repo"
    for d in ("components", "gpufleet", "policies", "stacks", "capacity"):
        shutil.copytree(ROOT / d, repo / d, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy(ROOT / "pyproject.toml", repo)
    for f in (repo / "stacks").glob("Pulumi.*.yaml"):
        f.unlink()
    for s in STACKS:
        shutil.copy(ROOT / "stacks" / "Pulumi.dev.yaml", repo / "stacks" / f"Pulumi.{s}.yaml")
    program = repo / "stacks" / "__main__.py"
    original = program.read_text()
    program.write_text(original.replace("fleet = config.load()\n", "fleet = config.load()\n" + base_main))
    commit_on_main_then_branch(repo)
    program.write_text(original + "# a code change: every stack is touched\n")
    git(repo, "commit", "-qam", "code change")
    return repo


def _pr(repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[dict[str, Any], list[list[str]]]:
    """Run `gpufleet pr --format json` in ``repo``; also the preview subprocesses it started (a spy: the real
    subprocess runs)."""
    started: list[list[str]] = []
    real = subprocess.Popen

    def spy(args: list[str], *rest: Any, **kwargs: Any) -> subprocess.Popen:
        if "gpufleet.cli" in args:
            started.append([a for a in args])
        return real(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", spy)
    monkeypatch.setenv("GPUFLEET_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(repo)
    out = CliRunner().invoke(app, ["pr", "--base", "main", "--no-policies", "--format", "json",
                                   "--offers", str(OFFERS)])
    assert out.exit_code in (0, 1), out.output
    return json.loads(out.stdout), started


def _stacks_named(args: list[str]) -> list[str]:
    return [args[i + 1] for i, a in enumerate(args) if a == "--stack"]


def test_base_stacks_are_previewed_in_one_subprocess_with_the_bases_code(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    doc, started = _pr(_project(tmp_path), monkeypatch, tmp_path)
    assert [_stacks_named(a) for a in started] == [list(STACKS)]
    assert started[0][started[0].index("--stacks-dir") + 1].endswith("/base/stacks")
    assert [(s["stack"], s["ok"], s["changes"]) for s in doc["stacks"]] == [(s, True, []) for s in STACKS]
    # a second run reads the base from the cache: no subprocess
    doc_again, started_again = _pr(tmp_path / "repo", monkeypatch, tmp_path)
    assert started_again == [] and doc_again["stacks"] == doc["stacks"]


def test_a_program_failing_at_the_base_is_told_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc, started = _pr(_project(tmp_path, BOOM), monkeypatch, tmp_path)
    # one run for both, then each alone to tell which failed
    assert [_stacks_named(a) for a in started] == [list(STACKS), ["dev"], ["dev2"]]
    by_stack = {s["stack"]: s for s in doc["stacks"]}
    assert by_stack["dev"]["ok"] is True and by_stack["dev"]["changes"] == []
    assert by_stack["dev2"]["ok"] is False and by_stack["dev2"]["changes"] == []
    assert by_stack["dev2"]["problems"][0].startswith("base: ")
    assert "boom at the base" in by_stack["dev2"]["problems"][0]
    # only the successful base preview was cached
    assert len(list((tmp_path / "cache").glob("*.json"))) == 1
