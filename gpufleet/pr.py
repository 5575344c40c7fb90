"""`gpufleet pr`: from a git checkout, preview the merge base (through a git worktree) and the working tree for
every stack the change touches, and report the difference.

A stack is touched when its ``Pulumi.<stack>.yaml`` changed, or (every stack) when code the programs run changed
(``components/``, ``stacks/*.py``, ``gpufleet/``, ``pyproject.toml``). When the merge base holds the gpufleet code
itself, its stacks are previewed with its own code (a subprocess in the worktree), so a code change shows up;
a repository of stack files only is previewed on both sides with the installed gpufleet.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.errors import SpecError
from gpufleet.analyzer import stack_policy_config
from gpufleet.capture import ProgramError
from gpufleet.preview import preview_stack
from stacks.config import stack_names

CODE = ("components/", "gpufleet/", "policies/", "pyproject.toml")
EMPTY: dict[str, Any] = {"schema": "gpufleet.preview/v1", "resources": [], "errors": []}


class PrError(RuntimeError):
    """Not a git checkout, no merge base, or a preview failed: the message says which and what to do."""


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise PrError(f"git {' '.join(args)} failed in {repo}: {done.stderr.strip()}")
    return done.stdout


def merge_base(repo: Path, base_ref: str | None) -> str:
    refs = [base_ref] if base_ref else ["origin/main", "main", "origin/master", "master"]
    for ref in refs:
        try:
            return git(repo, "merge-base", "HEAD", ref).strip()
        except PrError:
            continue
    raise PrError(f"no merge base between HEAD and {' / '.join(refs)}: fetch the base branch "
                  "(actions/checkout with fetch-depth: 0) or pass --base REF")


def changed_files(repo: Path, base: str) -> list[str]:
    tracked = git(repo, "diff", "--name-only", base).splitlines()
    untracked = git(repo, "ls-files", "--others", "--exclude-standard").splitlines()
    return sorted(set(tracked) | set(untracked))


def touched_stacks(files: list[str], stacks_rel: str, known: list[str]) -> list[str]:
    prefix = stacks_rel.rstrip("/") + "/"
    code = any(f.startswith(CODE) or (f.startswith(prefix) and f.endswith(".py")) for f in files)
    named = {Path(f).name[len("Pulumi."):-len(".yaml")] for f in files
             if f.startswith(prefix) and Path(f).name.startswith("Pulumi.") and f.endswith(".yaml")}
    return sorted(known) if code else sorted(named)


@contextmanager
def worktree(repo: Path, commit: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="gpufleet-base-") as scratch:
        path = Path(scratch) / "base"
        git(repo, "worktree", "add", "--detach", str(path), commit)
        try:
            yield path
        finally:
            git(repo, "worktree", "remove", "--force", str(path))


def failed(stack: str, message: str) -> dict[str, Any]:
    """The document of a side whose program failed: no resources, the failure as its error."""
    return {**EMPTY, "stack": stack, "errors": [message]}


def _own_code_preview(root: Path, stack: str, stacks_dir: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-m", "gpufleet.cli", "preview", "--stack", stack, "--format", "json",
                           "--no-policies", "--stacks-dir", str(stacks_dir)], cwd=root, env=env, capture_output=True,
                          text=True, check=False)
    try:
        document = json.loads(done.stdout) if done.stdout.strip() else None
    except ValueError:
        document = None
    if not isinstance(document, dict):  # exit 2: the program failed; its message is on stderr
        lines = [line.strip() for line in done.stderr.strip().splitlines() if line.strip()]
        return failed(stack, " ".join(lines[-20:]) or f"the preview exited {done.returncode} with no output")
    if "policy_config" not in document:  # a merge base whose gpufleet predates policy_config
        document["policy_config"] = _policy_config(stack, stacks_dir)
    return document


def _policy_config(stack: str, stacks_dir: Path) -> dict[str, Any]:
    try:
        return stack_policy_config(stack, stacks_dir)
    except SpecError:
        return {}


def preview_document(root: Path, stack: str, stacks_dir: Path, own_code: bool) -> dict[str, Any]:
    """The stack's preview document; an empty one when the stack file does not exist on that side, one with the
    failure as its error when the program fails."""
    if not (stacks_dir / f"Pulumi.{stack}.yaml").exists():
        return {**EMPTY, "stack": stack}
    if own_code and (root / "gpufleet" / "cli.py").exists() and (root / "stacks" / "__main__.py").exists():
        return _own_code_preview(root, stack, stacks_dir)
    try:
        return preview_stack(stack, stacks_dir).document()
    except ProgramError as err:
        return failed(stack, str(err))


@dataclass
class PrPreviews:
    base_commit: str
    stacks: list[str]
    base: dict[str, dict[str, Any]]
    head: dict[str, dict[str, Any]]


def _quiet(_: str) -> None:
    return None


def previews(repo: Path, stacks_rel: str = "stacks", base_ref: str | None = None,
             progress: Callable[[str], None] = _quiet) -> PrPreviews:
    """``progress`` gets one line per stack and side as the previews start."""
    root = Path(git(repo, "rev-parse", "--show-toplevel").strip())
    commit = merge_base(root, base_ref)
    head_dir = root / stacks_rel
    with worktree(root, commit) as base_root:
        base_dir = base_root / stacks_rel
        known = sorted(set(stack_names(head_dir) if head_dir.exists() else []) |
                       set(stack_names(base_dir) if base_dir.exists() else []))
        stacks = touched_stacks(changed_files(root, commit), stacks_rel, known)
        base = {}
        for i, s in enumerate(stacks, 1):
            progress(f"[{i}/{len(stacks)}] {s}: previewing the merge base {commit[:8]}…")
            base[s] = preview_document(base_root, s, base_dir, own_code=True)
    head = {}
    for i, s in enumerate(stacks, 1):
        progress(f"[{i}/{len(stacks)}] {s}: previewing the working tree…")
        head[s] = preview_document(root, s, head_dir, own_code=False)
    return PrPreviews(commit, stacks, base, head)
