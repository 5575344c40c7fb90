"""`gpufleet pr` in a repository that holds the gpufleet code itself (this one's case): the merge base is previewed
with its own code, every touched stack in one subprocess that runs while the working tree is previewed, and a
program that fails at the base is told apart from the stacks that preview. When only stack files change, the base's
code is this code: its stacks are previewed in this process, as its own CLI would."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
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


def _project(tmp_path: Path, base_main: str = "", stack_change: bool = False, broken_on_main: bool = False) -> Path:
    """A copy of the project with two small stacks; ``base_main`` is prepended to the program's loop on main only.
    The branch changes the program (every stack touched), or with ``stack_change`` only dev2's stack file (its pool
    one node larger), which ``broken_on_main`` breaks on main (an accelerator that does not exist)."""
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
    dev2 = repo / "stacks" / "Pulumi.dev2.yaml"
    if broken_on_main:
        dev2.write_text(dev2.read_text().replace("accelerator: L4", "accelerator: L4000", 1))
    commit_on_main_then_branch(repo)
    if stack_change:
        dev2.write_text((ROOT / "stacks" / "Pulumi.dev.yaml").read_text().replace("max: 2", "max: 3", 1))
    else:
        program.write_text(original + "# a code change: every stack is touched\n")
    git(repo, "commit", "-qam", "the change")
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


def _base_cli(repo: Path, tmp_path: Path) -> dict[str, dict[str, Any]]:
    """The documents the base's own CLI gives for STACKS, from a checkout of main."""
    base = tmp_path / "main-checkout"
    git(repo, "worktree", "add", "-q", "--detach", str(base), "main")
    names = [a for s in STACKS for a in ("--stack", s)]
    done = subprocess.run([sys.executable, "-m", "gpufleet.cli", "preview", *names, "--format", "json",
                           "--no-policies"], cwd=base, env={**os.environ, "PYTHONPATH": str(base)},
                          capture_output=True, text=True, check=True)
    return {d["stack"]: d for d in json.loads(done.stdout)}


def test_a_change_to_stack_files_only_previews_the_base_in_this_process(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The base's code is this code: no second interpreter, and the same documents as the base's own CLI."""
    repo = _project(tmp_path, stack_change=True)
    doc, started = _pr(repo, monkeypatch, tmp_path)
    assert started == []
    assert [(s["stack"], s["ok"]) for s in doc["stacks"]] == [("dev2", True)]
    assert [c["op"] for c in doc["stacks"][0]["changes"]] == ["update"]
    [cached] = [json.loads(p.read_text()) for p in (tmp_path / "cache").glob("*.json")]
    from_cli = _base_cli(repo, tmp_path)["dev2"]
    for key in ("stack", "resources", "policy_config", "capacity_plan", "errors"):
        assert cached[key] == from_cli[key], key


def test_a_base_failing_here_is_told_by_the_bases_own_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its message names the base's file as the base's CLI does, not this process's temporary worktree."""
    doc, started = _pr(_project(tmp_path, stack_change=True, broken_on_main=True), monkeypatch, tmp_path)
    assert [_stacks_named(a) for a in started] == [["dev2"]]
    [stack] = doc["stacks"]
    assert stack["ok"] is False and stack["changes"] == []
    assert stack["problems"][0].startswith("base: stacks/Pulumi.dev2.yaml") and "L4000" in stack["problems"][0]
    assert list((tmp_path / "cache").glob("*.json")) == []
