"""A throwaway git repository for the `gpufleet pr` tests: what a CI checkout of a pull request looks like."""

from __future__ import annotations

import subprocess
from pathlib import Path


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
