"""Real `pulumi preview --json` documents (PreviewDigest). Shapes follow pulumi/pulumi sdk/go/pkg/display/json.go
(``PreviewDigest``: config, steps, diagnostics, changeSummary, duration; ``PreviewStep``: op, urn, provider, oldState,
newState, diffReasons, replaceReasons, detailedDiff; ``PreviewDiagnostic``) at commit
68316a5bd6ddd0d4f4c8fb92a0546482c121e0a2, and the step ops of apitype.OpType, checked against outputs the CLI
printed (v3.229.0 and v3.263.0, robbeverhelst/sluiceway test/fixtures/pulumi/; see test_digest_cli_shapes.py): a
diagnostic is {urn, message, severity} with the severity already at the head of the message; secrets are the
string "[secret]". Unknowns are the engine's unknown sentinel string (plugin.UnknownStringValue, the same UUID the
CLI prints as a previewed provider's id)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.review import comment, cost, report
from gpufleet.review.diff import Op
from gpufleet.review.digest import diff_digest
from gpufleet.review.risk import risks
from gpufleet.review.verdicts import Judges
from tests.conftest import example_fleet

DATA = Path(__file__).parent / "data"
OFFERS = DATA / "offers.csv"
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # sdk/go/common/resource/plugin rpc.go UnknownStringValue
SECRET = "[secret]"  # as the CLI prints a secret input in --json (observed v3.229.0, v3.263.0)
NG = "aws:eks/nodeGroup:NodeGroup"
NP = "gcp:container/nodePool:NodePool"
STACK_URN = "urn:pulumi:aws-train::gpufleet::pulumi:pulumi:Stack::gpufleet-aws-train"


def urn(type_: str, name: str, stack: str = "aws-train") -> str:
    return f"urn:pulumi:{stack}::gpufleet::gpufleet:aws:GpuCluster${type_}::{name}"


def state(type_: str, name: str, inputs: dict[str, Any], stack: str = "aws-train") -> dict[str, Any]:
    return {"urn": urn(type_, name, stack), "custom": True, "type": type_, "inputs": inputs,
            "outputs": inputs, "parent": f"urn:pulumi:{stack}::gpufleet::gpufleet:aws:GpuCluster::train"}


def step(op: str, type_: str, name: str, old: dict | None = None, new: dict | None = None,
         stack: str = "aws-train", **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"op": op, "urn": urn(type_, name, stack), "detailedDiff": None, **extra}
    if old is not None:
        out["oldState"] = state(type_, name, old, stack)
    if new is not None:
        out["newState"] = state(type_, name, new, stack)
    return out


def pool(machine: Any = "p5.48xlarge", size: Any = 16) -> dict[str, Any]:
    return {"instanceTypes": [machine], "capacityType": "ON_DEMAND",
            "scalingConfig": size if size in (UNKNOWN, SECRET) else {"maxSize": size, "minSize": size,
                                                                     "desiredSize": size}}


def digest(steps: list[dict[str, Any]], diagnostics: list[dict[str, Any]] | None = None,
           summary: dict[str, int] | None = None) -> dict[str, Any]:
    stack = {"op": "same", "urn": STACK_URN, "detailedDiff": None,
             "oldState": {"urn": STACK_URN, "custom": False, "type": "pulumi:pulumi:Stack"},
             "newState": {"urn": STACK_URN, "custom": False, "type": "pulumi:pulumi:Stack"}}
    out: dict[str, Any] = {"config": {"gpufleet:fleet": json.dumps(example_fleet("aws-train"))},
                           "steps": [stack, *steps], "duration": 5120000000}
    if diagnostics is not None:
        out["diagnostics"] = diagnostics
    out["changeSummary"] = summary or {"same": 1 + sum(s["op"] == "same" for s in steps)}
    return out


@pytest.fixture(scope="module")
def prices() -> cost.Prices:
    return cost.Prices.load(OFFERS)


def test_a_failed_preview_leads_the_comment_and_fails(tmp_path: Path) -> None:
    failed = digest([step("same", NG, "train-h100-ng", pool(), pool())], diagnostics=[
        {"urn": urn(NG, "train-h100-ng"), "severity": "error",
         "message": "error: \x1b[31maws:eks/nodeGroup:NodeGroup resource 'train-h100-ng' has a problem: instance "
                    "type not offered\x1b[0m\n"},
        {"urn": STACK_URN, "severity": "warning", "message": "warning: provider is deprecated\n"},
        {"urn": STACK_URN, "severity": "info", "message": "chatter\n"}])
    d = diff_digest(failed)
    assert d.failed and d.changes == []
    assert d.problems == ["error: train-h100-ng: aws:eks/nodeGroup:NodeGroup resource 'train-h100-ng' has a problem: "
                          "instance type not offered"]
    assert d.warnings == ["warning: gpufleet-aws-train: provider is deprecated"]
    path = tmp_path / "p.json"
    path.write_text(json.dumps(failed))
    out = CliRunner().invoke(app, ["diff", "--pulumi-preview", str(path), "--format", "markdown", "--offers",
                                   str(OFFERS)])
    assert out.exit_code == 1
    assert out.stdout.splitlines()[1] == "## Preview failed for 1 stack (aws-train): no resource diff for it"
    assert "Monthly cost will not change" not in out.stdout


@pytest.mark.parametrize("hidden", [UNKNOWN, SECRET])
def test_unknown_or_secret_pool_size_never_crashes_or_prices(hidden: Any, prices: cost.Prices) -> None:
    d = diff_digest(digest([step("update", NG, "train-h100-ng", pool(), pool(size=hidden),
                                 diffReasons=["scalingConfig"],
                                 detailedDiff={"scalingConfig": {"kind": "update", "inputDiff": True}})]))
    r = report.build(d, prices)
    mask = "[unknown]" if hidden == UNKNOWN else "[secret]"
    assert [c.hidden for c in r.after] == [mask] and r.after[0].nodes == 0
    assert cost.hidden(r.after) == ["train-h100-ng"]
    assert report.headline([r]).startswith("Monthly cost change unknown: train-h100-ng has a machine type or size")
    assert [(k.action, k.gpus) for k in r.risks] == [("unknown", 128)]  # 16 x 8 H100 before; the new size unknown
    text = comment.render([r])
    assert mask in text and "decrease" not in text and "$0" not in text


def test_unknown_machine_type_is_not_priced_at_zero(prices: cost.Prices) -> None:
    d = diff_digest(digest([step("replace", NG, "train-h100-ng", pool(), pool(machine=UNKNOWN),
                                 replaceReasons=["instanceTypes"],
                                 detailedDiff={"instanceTypes[0]": {"kind": "update-replace", "inputDiff": True}})]))
    r = report.build(d, prices)
    assert "decrease" not in report.headline([r]) and "unknown" in report.headline([r])
    assert [(k.action, k.gpus, k.gpu) for k in r.risks] == [("replace", 128, "H100")]


def test_import_read_discard_refresh_get_rows_and_move_no_cost(prices: cost.Prices) -> None:
    drifted = {**pool(), "labels": {"tier": "x"}}
    d = diff_digest(digest([
        step("import", NG, "imported-ng", None, pool(size=2)),
        step("read", NG, "external-ng", None, pool()),
        step("discard", NG, "old-external-ng", pool(), None),
        step("refresh", NG, "train-h100-ng", pool(), drifted),
        step("update", NG, "train-h100-ng", drifted, pool(), diffReasons=["labels"],
             detailedDiff={"labels": {"kind": "delete", "inputDiff": True}}),
    ]))
    ops = {(c.name, c.op, c.label) for c in d.changes}
    assert ops == {("imported-ng", Op.IMPORT, "import"), ("external-ng", Op.READ, "read"),
                   ("old-external-ng", Op.DISCARD, "discard"), ("train-h100-ng", Op.REFRESH, "refresh (cloud drift)"),
                   ("train-h100-ng", Op.UPDATE, "update (reverts drift found by --refresh)")}
    r = report.build(d, prices)
    # imported: it existed (and cost money) before; read / discarded: not the stack's; refresh: the same pool
    assert r.delta_usd == 0
    assert sorted(c.key.split("::")[-1] for c in r.after) == ["imported-ng", "train-h100-ng"]
    assert d.counts()["import"] == 1 and d.counts()["refresh"] == 1


def test_a_preview_without_same_steps_is_partial_and_skips_policies(prices: cost.Prices) -> None:
    doc = digest([step("update", NG, "train-h100-ng", pool(), pool(size=8), diffReasons=["scalingConfig"])],
                 summary={"same": 67, "update": 1})
    doc["steps"] = doc["steps"][1:]  # without --show-sames the engine lists no `same` step
    d = diff_digest(doc)
    assert d.partial
    with Judges() as judges:
        head, _, note = judges.verdicts([d])["aws-train"]
    assert head is None and "--show-sames" in note
    assert "--show-sames" in comment.render([report.build(d, prices, None, None, note)])


def test_gke_image_type_rolls_nodes_on_both_paths() -> None:
    from gpufleet.engine.capture import Resource
    from gpufleet.review.diff import diff_resources

    inputs = {"nodeConfig": {"machineType": "a3-megagpu-8g", "imageType": "COS_CONTAINERD"},
              "autoscaling": {"totalMaxNodeCount": 8}, "nodeLocations": ["us-central1-a"]}
    new = {**inputs, "nodeConfig": {**inputs["nodeConfig"], "imageType": "UBUNTU_CONTAINERD"}}
    offline = risks(diff_resources("s", [Resource(NP, "np", None, True, inputs, [])],
                                   [Resource(NP, "np", None, True, new, [])]))
    real = risks(diff_digest(digest([step("update", NP, "np", inputs, new, stack="s",
                                           diffReasons=["nodeConfig"],
                                           detailedDiff={"nodeConfig.imageType": {"kind": "update",
                                                                                  "inputDiff": True}})])))
    assert [(k.action, k.gpus, k.cause) for k in offline] == [("roll", 64, "nodeConfig.imageType")]
    assert [(k.action, k.gpus, k.cause) for k in real] == [("roll", 64, "nodeConfig.imageType")]


def test_an_unknown_path_on_a_gpu_pool_is_a_risk_on_the_real_path() -> None:
    # forceUpdateVersion: a real NodeGroup input (pulumi_aws.eks.NodeGroupArgs) that the table has no row for
    d = diff_digest(digest([step("update", NG, "train-h100-ng", pool(), {**pool(), "forceUpdateVersion": True},
                                 diffReasons=["forceUpdateVersion"])]))
    assert [c.label for c in d.changes] == ["update (effect on nodes unknown)"]
    assert [(k.action, k.gpus) for k in risks(d)] == [("unknown", 128)]


@pytest.mark.parametrize("doc", [{"outputs": {"kubeconfig": "[secret]"}}, {"deployment": {}}, [], {"steps": "x"}])
def test_json_that_is_not_a_preview_digest_is_refused(doc: Any, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a `pulumi preview --json` document"):
        diff_digest(doc)
    path = tmp_path / "x.json"
    path.write_text(json.dumps(doc))
    out = CliRunner().invoke(app, ["diff", "--pulumi-preview", str(path)])
    assert out.exit_code == 2 and "not a `pulumi preview --json` document" in out.stderr
