"""A stack that cannot be previewed (invalid fleet, failing program) on either side of a pull request: the comment
says so first, with the errors, shows no resource diff (never a teardown) for it, and the command fails."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.review import comment, cost, report
from gpufleet.review.diff import diff_documents
from gpufleet.review.pr import failed
from stacks.config import STACKS_DIR
from tests.gpufleet.gitrepo import commit_on_main_then_branch, git

OFFERS = Path(__file__).parent / "data" / "offers.csv"


def _repo(tmp_path: Path, stacks: tuple[str, ...], broken_on_main: bool = False) -> Path:
    repo = tmp_path / "repo"
    (repo / "stacks").mkdir(parents=True)
    for s in stacks:
        shutil.copy(STACKS_DIR / f"Pulumi.{s}.yaml", repo / "stacks")
        if broken_on_main:
            _break(repo / "stacks" / f"Pulumi.{s}.yaml")
    commit_on_main_then_branch(repo)
    return repo


def _break(path: Path) -> None:
    stack = yaml.safe_load(path.read_text())
    stack["config"]["gpufleet:fleet"]["clusters"][0]["node_pools"][0]["accelerator"] = "H1000"
    path.write_text(yaml.safe_dump(stack))


def test_invalid_head_leads_the_comment_with_its_errors_and_fails(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _repo(tmp_path, ("aws-train",))
    _break(repo / "stacks" / "Pulumi.aws-train.yaml")
    monkeypatch.chdir(repo)
    out = CliRunner().invoke(app, ["pr", "--base", "main", "--no-policies", "--offers", str(OFFERS)])
    assert out.exit_code == 1
    lines = out.stdout.splitlines()
    assert lines[:2] == [comment.MARKER, "## Preview failed for 1 stack (aws-train): no resource diff for it"]
    assert lines[3] == "### ❌ Stack `aws-train` could not be previewed"
    assert any("H1000" in line and line.startswith("- head: ") for line in lines[4:10])
    # no teardown: nothing deleted, no cost change, no GPU risk
    assert "delete" not in out.stdout and "decrease" not in out.stdout and "GPU disruption" not in out.stdout


def test_pr_leaves_no_temporary_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _repo(tmp_path, ("dev",))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.chdir(repo)
    out = CliRunner().invoke(app, ["pr", "--base", "main", "--no-policies", "--offers", str(OFFERS)])
    assert out.exit_code == 0, out.output
    assert list(scratch.iterdir()) == []


def test_invalid_base_is_reported_too_and_json_says_not_ok(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _repo(tmp_path, ("dev",), broken_on_main=True)
    shutil.copy(STACKS_DIR / "Pulumi.dev.yaml", repo / "stacks")  # the pull request fixes it
    monkeypatch.chdir(repo)
    out = CliRunner().invoke(app, ["pr", "--base", "main", "--no-policies", "--format", "json",
                                   "--offers", str(OFFERS)])
    assert out.exit_code == 1
    doc = json.loads(out.stdout)
    [stack] = doc["stacks"]
    assert stack["ok"] is False and stack["changes"] == [] and stack["risks"] == []
    assert stack["problems"][0].startswith("base: ") and "H1000" in stack["problems"][0]
    assert doc["headline"].startswith("Preview failed for 1 stack (dev)")


def test_a_failed_program_is_a_failure_not_a_teardown() -> None:
    base = {"schema": "gpufleet.preview/v1", "stack": "s", "errors": [],
            "resources": [{"type": "aws:eks/nodeGroup:NodeGroup", "name": "ng", "custom": True,
                           "inputs": {"instanceTypes": ["p5.48xlarge"], "scalingConfig": {"maxSize": 16}}}]}
    diff = diff_documents(base, failed("s", "the stack program failed under the offline preview: boom"))
    assert diff.failed and diff.changes == [] and diff.base == [] and diff.head == []
    r = report.build(diff, cost.Prices.load(OFFERS))
    assert r.delta_usd == 0 and r.risks == []
    text = comment.render([r])
    assert text.splitlines()[1] == "## Preview failed for 1 stack (s): no resource diff for it"
    assert "- head: the stack program failed under the offline preview: boom" in text
    assert "Monthly cost" not in text.split("### ❌")[0]


def test_base_cache_key_follows_content(tmp_path: Path) -> None:
    from gpufleet.review.pr import cache_keys

    repo = _repo(tmp_path, ("dev", "aws-train"))
    first = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    (repo / "README").write_text("docs only")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "docs")
    docs = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    _break(repo / "stacks" / "Pulumi.dev.yaml")
    git(repo, "commit", "-qam", "dev changed")
    changed = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                             text=True).stdout.strip()
    keys = cache_keys(repo, first, "stacks", ["dev", "aws-train"])
    assert keys == cache_keys(repo, docs, "stacks", ["dev", "aws-train"])  # nothing previewed changed: same keys
    assert keys["dev"] != cache_keys(repo, changed, "stacks", ["dev"])["dev"]  # the stack file changed
    assert keys["dev"] != keys["aws-train"]
    assert cache_keys(repo, first, "stacks", ["gone"])["gone"] not in keys.values()  # a stack file absent there


def test_base_cache_key_follows_the_installed_sdks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another version of a provider SDK may record other inputs: its previews are not the cached ones."""
    from gpufleet.review import pr

    repo = _repo(tmp_path, ("dev",))
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    key = pr.cache_keys(repo, head, "stacks", ["dev"])
    installed = pr._installed()
    assert any(name.startswith("pulumi_aws-") for name in installed)
    monkeypatch.setattr(pr, "_installed", lambda: [n.replace("pulumi_aws-", "pulumi_aws-0.") for n in installed])
    assert pr.cache_keys(repo, head, "stacks", ["dev"]) != key
