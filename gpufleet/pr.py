"""`gpufleet pr`: from a git checkout, preview the merge base (through a git worktree) and the working tree for
every stack the change touches, and report the difference.

A stack is touched when its ``Pulumi.<stack>.yaml`` changed, or (every stack) when code the programs run changed
(``components/``, ``stacks/*.py``, ``gpufleet/``, ``pyproject.toml``). When the merge base holds the gpufleet code
itself, its stacks are previewed with its own code (a subprocess in the worktree), so a code change shows up;
a repository of stack files only is previewed on both sides with the installed gpufleet.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.errors import SpecError
from gpufleet.analyzer import stack_policy_config
from gpufleet.capture import ProgramError
from gpufleet.parallel import preview_many, workers
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


def _cache_dir() -> Path:
    return Path(os.environ.get("GPUFLEET_CACHE_DIR") or
                Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpufleet" / "previews")


def cache_key(repo: Path, commit: str, stacks_rel: str, stack: str) -> str:
    """A digest of everything a merge-base preview depends on, read from git at ``commit``: the code the program
    runs (components, gpufleet, policies, stacks, pyproject), the catalogue and prices (capacity/data), the stack
    file, and this interpreter. Content-addressed: a key never needs invalidating."""
    parts = [sys.version, stack, stacks_rel]
    for path in (*CODE, "capacity/data", stacks_rel, f"{stacks_rel}/Pulumi.{stack}.yaml"):
        done = subprocess.run(["git", "-C", str(repo), "rev-parse", f"{commit}:{path.rstrip('/')}"],
                              capture_output=True, text=True, check=False)
        parts.append(f"{path}={done.stdout.strip() if done.returncode == 0 else 'absent'}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _base_document(repo: Path, commit: str, base_root: Path, stacks_rel: str, stack: str) -> dict[str, Any]:
    """The merge-base preview, from the cache when its inputs were previewed before (only successful previews
    are kept: a failure may be transient)."""
    own_code = (base_root / "gpufleet" / "cli.py").exists()
    path = _cache_dir() / f"{cache_key(repo, commit, stacks_rel, stack)}.json" if own_code else None
    if path is not None and path.exists():
        return json.loads(path.read_text())
    document = preview_document(base_root, stack, base_root / stacks_rel, own_code=True)
    if path is not None and not document.get("errors"):
        path.parent.mkdir(parents=True, exist_ok=True)
        scratch = path.with_suffix(f".{os.getpid()}.tmp")
        scratch.write_text(json.dumps(document))
        scratch.replace(path)  # atomic: parallel runs never read half a file
    return document


def previews(repo: Path, stacks_rel: str = "stacks", base_ref: str | None = None,
             progress: Callable[[str], None] = _quiet) -> PrPreviews:
    """Merge-base previews run as parallel subprocesses (one per core; cached by content), then the working tree's
    in parallel forked processes. ``progress`` gets one line per stack and side."""
    root = Path(git(repo, "rev-parse", "--show-toplevel").strip())
    commit = merge_base(root, base_ref)
    head_dir = root / stacks_rel
    with worktree(root, commit) as base_root:
        base_dir = base_root / stacks_rel
        known = sorted(set(stack_names(head_dir) if head_dir.exists() else []) |
                       set(stack_names(base_dir) if base_dir.exists() else []))
        stacks = touched_stacks(changed_files(root, commit), stacks_rel, known)
        progress(f"previewing {len(stacks)} stack(s) at the merge base {commit[:8]}…")
        # With its own code, each base stack is a subprocess: threads only wait on them. Without, the previews run
        # here, one at a time (the Pulumi runtime is process-global).
        def one(s: str) -> dict[str, Any]:
            return _base_document(root, commit, base_root, stacks_rel, s)

        if (base_root / "gpufleet" / "cli.py").exists():
            with ThreadPoolExecutor(workers(0, len(stacks))) as pool:
                base = dict(zip(stacks, pool.map(one, stacks), strict=True))
        else:
            base = {s: one(s) for s in stacks}
    head = {}
    present = [s for s in stacks if (head_dir / f"Pulumi.{s}.yaml").exists()]
    progress(f"previewing {len(present)} stack(s) in the working tree…")
    for s, result in preview_many(present, head_dir, 0, progress):
        head[s] = failed(s, str(result)) if isinstance(result, ProgramError) else result.document()
    for s in stacks:
        head.setdefault(s, {**EMPTY, "stack": s})
    return PrPreviews(commit, stacks, base, {s: head[s] for s in stacks})
