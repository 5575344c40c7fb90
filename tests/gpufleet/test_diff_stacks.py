"""The example aws-train stack, changed as a pull request would: machine type, a tag, a pool label; the CLI, `pr`
in a temporary git repository, and the Automation API wrapper's argument handling."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.deploy.automation import RealError, check_stack, require_cli, run
from gpufleet.engine.capture import Graph, run_program
from gpufleet.review import comment, cost, report
from gpufleet.review.diff import StackDiff, diff_resources
from tests.conftest import Capture, example_fleet
from tests.gpufleet.gitrepo import example_stacks_branch

DATA = Path(__file__).parent / "data"
OFFERS = DATA / "offers.csv"


def p5en(fleet: dict[str, Any]) -> dict[str, Any]:
    pool = fleet["clusters"][0]["node_pools"][0]
    pool.pop("accelerator"), pool.pop("gpus")
    pool["machine_type"] = "p5en.48xlarge"
    # a capacity block holds one instance type: the p5en nodes come from a new block (keeping the p5 block's id
    # cannot apply: tests/gpufleet/test_cannot_apply.py)
    pool["capacity"]["id"] = "cr-0fedcba9876543210"
    fleet["clusters"][0]["addons"]["kueue_teams"][0]["gpus"] = {"H200": 128}  # the queue follows the GPU model
    return fleet


@pytest.fixture(scope="module")
def graphs() -> dict[str, Graph]:
    def cap(fleet: dict[str, Any]) -> Graph:
        return run_program("aws-train", {"gpufleet:fleet": fleet})

    tagged, labelled, recharged = (example_fleet("aws-train") for _ in range(3))
    tagged["tags"]["owner"] = "alice"
    labelled["clusters"][0]["node_pools"][1]["labels"]["tier"] = "eval"
    recharged["tags"]["cost_center"] = "cc-9999"
    return {"base": cap(example_fleet("aws-train")), "p5en": cap(p5en(example_fleet("aws-train"))),
            "tag": cap(tagged), "label": cap(labelled), "cost-tag": cap(recharged)}


def build(graphs: dict[str, Graph], head: str) -> report.StackReport:
    diff: StackDiff = diff_resources("aws-train", graphs["base"].resources, graphs[head].resources)
    return report.build(diff, cost.Prices.load(OFFERS))


def test_machine_type_change_leads_with_128_h100_replacement(graphs: dict[str, Graph]) -> None:
    r = build(graphs, "p5en")
    text = comment.render([r])
    expected = 16 * (63.296 - 55.04) * 730  # 16 nodes x $/node-hour difference x 730 h
    assert r.delta_usd == pytest.approx(expected)
    lines = text.splitlines()
    assert lines[:2] == [comment.MARKER, f"## Monthly cost will increase by ${expected:,.0f}"]
    first_risk = next(line for line in lines if line.startswith("- **"))
    assert first_risk == "- **aws-train: replaces 128 H100 GPUs (train-h100-ng)** — instanceTypes[0]"
    assert [k.action for k in r.risks] == ["replace"]  # the launch-template roll is folded into the replacement


def test_capture_fixture_gives_the_same_graph(capture: Capture, graphs: dict[str, Graph]) -> None:
    graph = capture(example_fleet("aws-train"))
    assert [x.key for x in graph.resources] == [x.key for x in graphs["base"].resources]


def test_adding_a_tag_is_an_update_without_replacement_or_cost(graphs: dict[str, Graph]) -> None:
    r = build(graphs, "tag")
    assert {c.op.value for c in r.diff.changes} == {"update"}
    assert not any(c.replacement_unknown for c in r.diff.changes)
    assert r.delta_usd == 0 and "Monthly cost will not change" in comment.render([r])
    assert r.risks == []  # only cost-allocation tags are baked into launch template versions


def test_changing_a_cost_tag_rolls_the_gpu_node_groups(graphs: dict[str, Graph]) -> None:
    r = build(graphs, "cost-tag")
    # Instance tags live in launch template versions; EKS rolls node groups that track the latest version.
    assert {(k.action, k.resource) for k in r.risks} == {
        ("roll", "aws:eks/nodeGroup:NodeGroup::train-h100-ng"),
        ("roll", "aws:eks/nodeGroup:NodeGroup::train-a100-eval-ng")}
    assert all("tagSpecifications" in k.cause for k in r.risks)


def test_adding_a_pool_label_is_an_update_with_no_risk(graphs: dict[str, Graph]) -> None:
    r = build(graphs, "label")
    assert [(c.name, c.label) for c in r.diff.changes] == [("train-a100-eval-ng", "update")]
    assert r.risks == [] and r.delta_usd == 0


def test_diff_cli_on_preview_files_and_digest(graphs: dict[str, Graph], tmp_path: Path) -> None:
    def doc(g: Graph) -> dict[str, Any]:
        return {"schema": "gpufleet.preview/v1", "project": "gpufleet", "stack": "aws-train", "errors": [],
                "resources": [{"type": x.type, "name": x.name, "parent": x.parent, "custom": x.custom,
                               "inputs": x.inputs, "dependencies": x.dependencies} for x in g.resources]}
    (tmp_path / "base.json").write_text(json.dumps(doc(graphs["base"])))
    (tmp_path / "head.json").write_text(json.dumps([doc(graphs["p5en"])]))
    runner = CliRunner()
    out = runner.invoke(app, ["diff", str(tmp_path / "base.json"), str(tmp_path / "head.json"), "--format", "json",
                              "--offers", str(OFFERS)])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["stacks"][0]["risks"][0]["gpus"] == 128
    out = runner.invoke(app, ["diff", "--pulumi-preview", str(DATA / "pulumi-preview.json"), "--format", "markdown",
                              "--offers", str(OFFERS)])
    assert out.exit_code == 0 and out.output.startswith(comment.MARKER)
    assert runner.invoke(app, ["diff", str(tmp_path / "base.json")]).exit_code == 2
    assert runner.invoke(app, ["diff", "--format", "text", "--pulumi-preview",
                               str(DATA / "pulumi-preview.json")]).exit_code == 0


def test_pr_in_a_temporary_git_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(example_stacks_branch(tmp_path, "aws-train", p5en))
    args = ["pr", "--base", "main", "--no-policies", "--format", "json", "--offers", str(OFFERS)]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)  # progress lines go to stderr
    assert [s["stack"] for s in doc["stacks"]] == ["aws-train"]
    assert doc["headline"].startswith("Monthly cost will increase by $96,430")
    assert doc["stacks"][0]["risks"][0]["headline"] == "aws-train: replaces 128 H100 GPUs (train-h100-ng)"
    assert doc["stacks"][0]["policy"]["note"] == "policy pack not run (--no-policies)"
    assert "gpufleet-base" not in subprocess.run(["git", "worktree", "list"], capture_output=True, text=True).stdout


def test_real_needs_the_pulumi_cli_and_a_known_stack(tmp_path: Path) -> None:
    with pytest.raises(RealError, match="Pulumi CLI is not installed"):
        require_cli(lambda _name: None)
    with pytest.raises(RealError, match=r"no stack file stacks/Pulumi\.nope\.yaml"):
        check_stack("nope")
    with pytest.raises(RealError, match="unknown action"):
        run("aws-train", "destroy")
    with pytest.raises(RealError, match="Pulumi CLI"):
        run("aws-train", "preview", which=lambda _name: None)
    out = CliRunner().invoke(app, ["up", "--stack", "nope"])
    assert out.exit_code == 2


@pytest.mark.skipif(not (shutil.which("pulumi") and os.environ.get("PULUMI_ACCESS_TOKEN")
                         and os.environ.get("AWS_ACCESS_KEY_ID")), reason="live: needs the Pulumi CLI and credentials")
def test_live_real_preview() -> None:  # pragma: no cover - opt-in
    assert isinstance(run("aws-train", "preview"), dict)


def test_one_tag_added_everywhere_is_one_line_with_a_count(graphs: dict[str, Graph]) -> None:
    r = build(graphs, "tag")
    updates = [c for c in r.diff.changes if c.op.value == "update"]
    assert len(updates) > 5  # every tagged resource
    text = comment.render([r])
    rows = [line for line in text.splitlines() if line.startswith("| update")]
    assert rows == [next(line for line in rows if line.startswith(f"| update on {len(updates)} | {len(updates)} "
                                                                    "resources: "))]
    assert "`tags.owner`" in rows[0] and "(the same change on each)" in rows[0]
    details = [line for line in text.splitlines() if line.startswith("- ") and "tags.owner" in line]
    assert len(details) == 1 and f"{len(updates)} resources" in details[0]


def test_no_empty_details_blocks() -> None:
    from gpufleet.engine.capture import Resource

    bucket = Resource("aws:s3/bucket:Bucket", "b", None, True, {"bucketPrefix": "x"}, [])
    r = report.build(diff_resources("s", [bucket], [bucket]), cost.Prices.load(OFFERS))
    text = comment.render([r])
    assert "<details" not in text  # no change, no pool, no verdict: nothing to fold away
