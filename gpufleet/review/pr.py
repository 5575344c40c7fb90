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
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from components.errors import SpecError
from gpufleet.checks.analyzer import stack_policy_config
from gpufleet.engine.capture import ProgramError
from gpufleet.engine.parallel import preview_many
from gpufleet.engine.preview import Preview, preview_stack
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


def _stack_file(path: str, stacks_rel: str) -> bool:
    """A ``Pulumi.<stack>.yaml`` right in the stacks directory: config the programs read, no code they run."""
    name = Path(path).name
    return str(Path(path).parent) == stacks_rel.rstrip("/") and name.startswith("Pulumi.") and name.endswith(".yaml")


def touched_stacks(files: list[str], stacks_rel: str, known: list[str]) -> list[str]:
    prefix = stacks_rel.rstrip("/") + "/"
    code = any(f.startswith(CODE) or (f.startswith(prefix) and f.endswith(".py")) for f in files)
    named = {Path(f).name[len("Pulumi."):-len(".yaml")] for f in files
             if f.startswith(prefix) and Path(f).name.startswith("Pulumi.") and f.endswith(".yaml")}
    return sorted(known) if code else sorted(named)


def _in_commit(repo: Path, commit: str, *paths: str) -> list[str]:
    """Which of ``paths`` (files or directories) exist at ``commit``."""
    return git(repo, "ls-tree", "--name-only", commit, "--", *paths).splitlines()


@contextmanager
def worktree(repo: Path, commit: str, paths: tuple[str, ...]) -> Iterator[Path]:
    """A worktree of ``commit`` with only ``paths`` checked out (a whole checkout took most of a cached run's git
    time); ``checkout_all`` fills in the rest when the base's code must run."""
    with tempfile.TemporaryDirectory(prefix="gpufleet-base-") as scratch:
        path = Path(scratch) / "base"
        git(repo, "worktree", "add", "--no-checkout", "--detach", str(path), commit)
        try:
            present = _in_commit(repo, commit, *paths)
            if present:
                git(path, "checkout", commit, "--", *present)
            yield path
        finally:
            git(repo, "worktree", "remove", "--force", str(path))


def checkout_all(tree: Path) -> None:
    git(tree, "checkout", "HEAD", "--", ".")


def failed(stack: str, message: str) -> dict[str, Any]:
    """The document of a side whose program failed: no resources, the failure as its error."""
    return {**EMPTY, "stack": stack, "errors": [message]}


def _cli_preview(root: Path, stacks: list[str], stacks_dir: Path, out: IO[str], err: IO[str]) -> subprocess.Popen:
    """Start the side's own CLI on ``stacks`` (its previews fork from one import of the SDKs), output to files."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    names = [arg for s in stacks for arg in ("--stack", s)]
    return subprocess.Popen([sys.executable, "-m", "gpufleet.cli", "preview", *names, "--format", "json",
                             "--no-policies", "--stacks-dir", str(stacks_dir)], cwd=root, env=env, stdout=out,
                            stderr=err, text=True)


def _documents(stdout: str, stacks: list[str]) -> dict[str, dict[str, Any]] | None:
    """The documents of ``stacks`` in the CLI's JSON output (one document, or a list); None unless all are there."""
    try:
        payload = json.loads(stdout) if stdout.strip() else None
    except ValueError:
        return None
    found = payload if isinstance(payload, list) else [payload]
    documents = {d.get("stack"): d for d in found if isinstance(d, dict)}
    return documents if set(documents) == set(stacks) else None


def _own_code_preview(root: Path, stack: str, stacks_dir: Path) -> dict[str, Any]:
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        code = _cli_preview(root, [stack], stacks_dir, out, err).wait()
        out.seek(0), err.seek(0)
        found = _documents(out.read(), [stack])
        if found is None:  # exit 2: the program failed; its message is on stderr
            return _failure(stack, err.read(), code)
    return _with_policy_config(found[stack], stack, stacks_dir)


def _failure(stack: str, stderr: str, code: int) -> dict[str, Any]:
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    return failed(stack, " ".join(lines[-20:]) or f"the preview exited {code} with no output")


def _with_policy_config(document: dict[str, Any], stack: str, stacks_dir: Path) -> dict[str, Any]:
    if "policy_config" not in document:  # a merge base whose gpufleet predates policy_config
        document["policy_config"] = _policy_config(stack, stacks_dir)
    return document


def _policy_config(stack: str, stacks_dir: Path) -> dict[str, Any]:
    try:
        return stack_policy_config(stack, stacks_dir)
    except SpecError:
        return {}


OWN_CODE = ("gpufleet/cli.py", "stacks/__main__.py")  # a checkout holding gpufleet and its program


def _own_code(root: Path) -> bool:
    return all((root / f).exists() for f in OWN_CODE)


def preview_document(root: Path, stack: str, stacks_dir: Path, own_code: bool) -> dict[str, Any]:
    """The stack's preview document; an empty one when the stack file does not exist on that side, one with the
    failure as its error when the program fails."""
    if not (stacks_dir / f"Pulumi.{stack}.yaml").exists():
        return {**EMPTY, "stack": stack}
    if own_code and _own_code(root):
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


def _quiet(*_: object) -> None:
    return None


Ready = Callable[[str, dict[str, Any]], None]  # ("head" or "base", a stack's preview document) as soon as it is made


def _cache_dir() -> Path:
    return Path(os.environ.get("GPUFLEET_CACHE_DIR") or
                Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpufleet" / "previews")


def _installed() -> list[str]:
    """Every installed distribution with its version (site-packages' ``<name>-<version>.dist-info`` entries): the
    Pulumi SDKs the programs run on are among them."""
    return sorted(entry.name for path in map(Path, sys.path) if path.name == "site-packages" and path.is_dir()
                  for entry in path.iterdir() if entry.name.endswith(".dist-info"))


def cache_keys(repo: Path, commit: str, stacks_rel: str, stacks: list[str]) -> dict[str, str]:
    """Per stack, a digest of everything its merge-base preview depends on, read from git at ``commit`` (one
    ``git ls-tree``): the code the program runs (components, gpufleet, policies, stacks, pyproject), the catalogue
    and prices (capacity/data), the stack file; and this interpreter with the distributions installed in it.
    Content-addressed: a key never needs invalidating."""
    files = {s: f"{stacks_rel}/Pulumi.{s}.yaml" for s in stacks}
    shared = [p.rstrip("/") for p in (*CODE, "capacity/data", stacks_rel)]
    listed = git(repo, "ls-tree", commit, "--", *shared, *files.values())
    objects = {line.split("\t", 1)[1]: line.split("\t", 1)[0].split()[2] for line in listed.splitlines()}
    common = [sys.version, stacks_rel, *_installed(), *(f"{p}={objects.get(p, 'absent')}" for p in shared)]
    return {s: hashlib.sha256("\n".join([*common, s, f"{path}={objects.get(path, 'absent')}"]).encode()).hexdigest()
            for s, path in files.items()}


def _store(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_suffix(f".{os.getpid()}.tmp")
    scratch.write_text(json.dumps(document))
    scratch.replace(path)  # atomic: parallel runs never read half a file


@contextmanager
def base_previews(repo: Path, commit: str, base_root: Path, stacks_rel: str, stacks: list[str],
                  ready: Ready = _quiet, same_code: bool = False,
                  progress: Callable[[str], None] = _quiet) -> Iterator[Callable[[], dict[str, dict[str, Any]]]]:
    """The merge-base previews, as a function that returns them. With the base's own code, those not in the cache
    (keyed by content; only successful previews are kept, a failure may be transient) start at once as one
    subprocess, so they run while the caller previews the working tree; when a program fails there, each stack is
    previewed alone to tell which. When the change touches stack files only (``same_code``: the base's code is this
    code), they are previewed here first, forked like the working tree's, without a second interpreter importing
    the SDKs again; a stack that fails here goes to the base's own CLI, whose messages name its files as the
    base's. Without the base's own code, they run here, one at a time (the Pulumi runtime is process-global), when
    asked for. ``ready`` gets each document as soon as it is there (a cached one at once)."""
    base_dir = base_root / stacks_rel
    if len(_in_commit(repo, commit, *OWN_CODE)) < len(OWN_CODE):
        def one(stack: str) -> dict[str, Any]:
            document = preview_document(base_root, stack, base_dir, own_code=False)
            ready("base", document)
            return document

        yield lambda: {s: one(s) for s in stacks}
        return
    cache = {s: _cache_dir() / f"{key}.json" for s, key in cache_keys(repo, commit, stacks_rel, stacks).items()}
    documents = {s: json.loads(path.read_text()) for s, path in cache.items() if path.exists()}
    documents.update({s: {**EMPTY, "stack": s} for s in stacks if not (base_dir / f"Pulumi.{s}.yaml").exists()})
    missing = [s for s in stacks if s not in documents]
    for document in documents.values():
        ready("base", document)
    if missing and same_code:
        for s, result in preview_many(missing, base_dir, 0, lambda line: progress(f"merge base: {line}")):
            if isinstance(result, Preview) and result.ok:
                documents[s] = _with_policy_config(result.document(), s, base_dir)
                _store(cache[s], documents[s])
                ready("base", documents[s])
        missing = [s for s in missing if s not in documents]
    if missing:
        checkout_all(base_root)
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        run = _cli_preview(base_root, missing, base_dir, out, err) if missing else None

        def collect() -> dict[str, dict[str, Any]]:
            if run is not None:
                code = run.wait()
                out.seek(0), err.seek(0)
                fresh = _documents(out.read(), missing)
                if fresh is None:
                    fresh = ({missing[0]: _failure(missing[0], err.read(), code)} if len(missing) == 1 else
                             {s: _own_code_preview(base_root, s, base_dir) for s in missing})
                for s, document in fresh.items():
                    documents[s] = _with_policy_config(document, s, base_dir)
                    ready("base", documents[s])
                    if not document.get("errors"):
                        _store(cache[s], document)
            return {s: documents[s] for s in stacks}

        try:
            yield collect
        finally:
            if run is not None and run.poll() is None:
                run.kill()
                run.wait()


def previews(repo: Path, stacks_rel: str = "stacks", base_ref: str | None = None,
             progress: Callable[[str], None] = _quiet, ready: Ready = _quiet) -> PrPreviews:
    """The merge base's previews (one subprocess with its own code, cached by content) run while the working
    tree's run in parallel forked processes. ``progress`` gets one line per stack and side; ``ready`` each
    document as soon as it is made (`gpufleet pr` judges it with the policy pack meanwhile)."""
    root = Path(git(repo, "rev-parse", "--show-toplevel").strip())
    commit = merge_base(root, base_ref)
    head_dir = root / stacks_rel
    with worktree(root, commit, (stacks_rel.rstrip("/"),)) as base_root:
        base_dir = base_root / stacks_rel
        known = sorted(set(stack_names(head_dir) if head_dir.exists() else []) |
                       set(stack_names(base_dir) if base_dir.exists() else []))
        files = changed_files(root, commit)
        stacks = touched_stacks(files, stacks_rel, known)
        same_code = all(_stack_file(f, stacks_rel) for f in files)
        progress(f"previewing {len(stacks)} stack(s) at the merge base {commit[:8]}…")
        with base_previews(root, commit, base_root, stacks_rel, stacks, ready, same_code, progress) as base_side:
            head = {}
            present = [s for s in stacks if (head_dir / f"Pulumi.{s}.yaml").exists()]
            progress(f"previewing {len(present)} stack(s) in the working tree…")
            def finished(result: Preview | ProgramError) -> None:  # a failure has no verdicts to start on
                if isinstance(result, Preview):
                    ready("head", result.document())

            for s, result in preview_many(present, head_dir, 0, progress, finished):
                head[s] = failed(s, str(result)) if isinstance(result, ProgramError) else result.document()
            base = base_side()
    return PrPreviews(commit, stacks, base, {s: head.get(s, {**EMPTY, "stack": s}) for s in stacks})
