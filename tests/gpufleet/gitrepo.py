"""A throwaway git repository for the `gpufleet pr` tests: what a CI checkout of a pull request looks like."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from stacks.config import STACKS_DIR


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def commit_on_main_then_branch(repo: Path) -> None:
    """Make ``repo`` (already holding its files) a repository whose branch main has them committed, and check out a
    new branch ``change`` for the test to edit."""
    git(repo.parent, "init", "-q", "-b", "main", str(repo))
    for key, value in (("user.email", "ci@example.com"), ("user.name", "ci")):
        git(repo, "config", key, value)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "stacks")
    git(repo, "checkout", "-q", "-b", "change")


def example_stacks_branch(tmp_path: Path, stack: str, change: Callable[[dict[str, Any]], Any],
                          base: Callable[[dict[str, Any]], Any] | None = None) -> Path:
    """A repository holding the example stack files on main (``stack``'s gpufleet:fleet first edited by ``base``,
    when given), and a branch ``change`` on which ``change`` edited it: a pull request as `gpufleet pr` sees it.
    Returns the repository."""
    repo = tmp_path / "repo"
    shutil.copytree(STACKS_DIR, repo / "stacks", ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    path = repo / "stacks" / f"Pulumi.{stack}.yaml"
    if base is not None:
        _edit(path, base)
    commit_on_main_then_branch(repo)
    _edit(path, change)
    return repo


def _edit(path: Path, change: Callable[[dict[str, Any]], Any]) -> None:
    document = yaml.safe_load(path.read_text())
    change(document["config"]["gpufleet:fleet"])
    path.write_text(yaml.safe_dump(document))
