"""`pulumi preview --json` documents shaped as the CLI really prints them, not only as the Go structs read.

Every shape fact here was checked against outputs Pulumi CLI v3.263.0 (and v3.229.0) printed, published in
robbeverhelst/sluiceway under test/fixtures/pulumi/<version>/ (recorded with `pulumi preview --json
--non-interactive --color never`; each scenario's recording.json names the CLI version and argv):
* deploy/preview.stdout @c440f2b9: states carry `provider`, `propertyDependencies`, `sourcePosition`, `stackTrace`;
  each custom resource's step carries `provider` ("urn:...::pulumi:providers:<pkg>::<name>::<id>"); a secret input
  and a secret config value are the string "[secret]"; `duration` is nanoseconds.
* resource-error/preview.stdout @90b76526: a diagnostic is {urn, message, severity} (no `prefix`); the message
  starts with "error: " and ends with a newline.
* program-exception/preview.stdout @90b76526: a failed program's diagnostic has no `urn`, and its message holds
  ANSI colour escapes although --color never was passed.
* nested-paths/preview.stdout @beb1e0c9: without --show-replacement-steps a replacement is ONE `replace` step with
  `oldState` (`"delete": true`, `id`, `outputs`) and `newState`, `replaceReasons` with quoted keys
  (data["app.properties"]) and `detailedDiff` kind "update-replace"; made without --show-sames, it lists the root
  stack's `same` step only, while changeSummary counts 2 `same` (the explicit provider is unchanged too): pulumi/pulumi
  pkg/backend/display/json.go ShowPreviewDigest lists a step when `shouldShow(m, opts) || isRootStack(m)`, and
  shouldShow lists a `same` step only with ShowSameResources.
The documents below are built for this repository's stacks (our names and inputs), with those shapes; no upstream
file is copied.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpufleet.review import cost, report
from gpufleet.review.diff import Op
from gpufleet.review.digest import diff_digest
from gpufleet.review.replacements import Effect

OFFERS = Path(__file__).parent / "data" / "offers.csv"
PROJECT = "urn:pulumi:aws-train::gpufleet"
STACK = f"{PROJECT}::pulumi:pulumi:Stack::gpufleet-aws-train"
PROVIDER = f"{PROJECT}::pulumi:providers:aws::train-aws::1066824d-3b4c-4246-9b4f-3b64367cd7cf"
NG = "aws:eks/nodeGroup:NodeGroup"
NG_URN = f"{PROJECT}::gpufleet:aws:GpuCluster$gpufleet:aws:GpuNodeGroup${NG}::train-h100-ng"
TRACE = [{"sourcePosition": "project:///__main__.py#12"}, {}]


def state(inputs: dict[str, Any], old: bool = False, **extra: Any) -> dict[str, Any]:
    out = {"urn": NG_URN, "custom": True, "type": NG, "inputs": inputs, "parent": STACK, "provider": PROVIDER,
           "propertyDependencies": {k: [] for k in inputs}, "sourcePosition": "project:///__main__.py#12",
           "stackTrace": TRACE, **extra}
    if old:
        out.update(id="train-h100-ng", outputs=inputs, created="2026-09-21T21:32:52.279041163Z",
                   modified="2026-09-21T21:32:52.279041163Z")
    return out


def pool(machine: str = "p5.48xlarge", size: Any = 16) -> dict[str, Any]:
    return {"instanceTypes": [machine], "capacityType": "ON_DEMAND",
            "scalingConfig": size if isinstance(size, str) else {"maxSize": size, "minSize": size,
                                                                 "desiredSize": size}}


def root() -> dict[str, Any]:
    stack = {"urn": STACK, "custom": False, "type": "pulumi:pulumi:Stack", "sourcePosition": "project:///x#1",
             "stackTrace": TRACE}
    return {"op": "same", "urn": STACK, "oldState": stack, "newState": stack, "detailedDiff": None}


def digest(steps: list[dict[str, Any]], summary: dict[str, int], **extra: Any) -> dict[str, Any]:
    return {"config": {"gpufleet:token": "[secret]", "aws:region": "us-east-1"}, "steps": [root(), *steps],
            "duration": 97691420, "changeSummary": summary, **extra}


@pytest.fixture(scope="module")
def prices() -> cost.Prices:
    return cost.Prices.load(OFFERS)


def test_a_replacement_is_one_replace_step_by_default(prices: cost.Prices) -> None:
    step = {"op": "replace", "urn": NG_URN, "provider": PROVIDER,
            "oldState": state(pool(), old=True, delete=True), "newState": state(pool("p5en.48xlarge")),
            "replaceReasons": ["instanceTypes"],
            "detailedDiff": {"instanceTypes[0]": {"kind": "update-replace", "inputDiff": False}}}
    d = diff_digest(digest([step], {"replace": 1, "same": 1}))
    assert not d.partial  # every unchanged resource (the root stack) is listed
    [change] = d.changes
    assert (change.name, change.op) == ("train-h100-ng", Op.REPLACE)
    assert [(p.path, p.effect) for p in change.paths] == [("instanceTypes[0]", Effect.REPLACE)]
    assert change.new is not None and change.new.provider == "pulumi:providers:aws::train-aws"
    r = report.build(d, prices)
    assert [(k.action, k.gpus) for k in r.risks] == [("replace", 128)]  # 16 nodes x 8 H100


def test_a_resource_error_reads_once_as_an_error() -> None:
    failed = digest([], {"create": 1}, diagnostics=[
        {"urn": NG_URN, "message": "error: aws:eks/nodeGroup:NodeGroup resource 'train-h100-ng' has a problem: "
                                   "Invalid Attribute Value. Examine values at 'train-h100-ng.scalingConfig'.\n",
         "severity": "error"}])
    d = diff_digest(failed)
    assert d.failed and d.changes == []
    assert d.problems == ["error: train-h100-ng: aws:eks/nodeGroup:NodeGroup resource 'train-h100-ng' has a "
                          "problem: Invalid Attribute Value. Examine values at 'train-h100-ng.scalingConfig'."]


def test_a_failed_program_without_urn_and_with_colours() -> None:
    failed = digest([], {"create": 5}, diagnostics=[
        {"message": "error: Running program '/src/gpufleet/__main__.py' failed with an unhandled exception:\n"
                    "Error: boom\n    at \u001b[90m(/src/\u001b[39mindex.ts:26:7\u001b[90m)\u001b[39m\n",
         "severity": "error"}])
    assert diff_digest(failed).problems == [
        "error: Running program '/src/gpufleet/__main__.py' failed with an unhandled exception: Error: boom at "
        "(/src/index.ts:26:7)"]


def test_a_secret_input_is_the_string_secret_and_never_a_value(prices: cost.Prices) -> None:
    step = {"op": "update", "urn": NG_URN, "provider": PROVIDER, "oldState": state(pool(), old=True),
            "newState": state(pool(size="[secret]")), "diffReasons": ["scalingConfig"],
            "detailedDiff": {"scalingConfig": {"kind": "update", "inputDiff": True}}}
    r = report.build(diff_digest(digest([step], {"same": 1, "update": 1})), prices)
    assert [c.hidden for c in r.after] == ["[secret]"]
    assert report.headline([r]).startswith("Monthly cost change unknown")


def test_without_show_sames_only_the_root_stack_is_listed_and_the_graph_is_partial() -> None:
    # nested-paths (v3.263.0, no --show-sames): steps same(stack), replace, update; changeSummary same 2
    update = {"op": "update", "urn": NG_URN, "provider": PROVIDER, "oldState": state(pool(), old=True),
              "newState": state(pool(size=8)), "diffReasons": ["scalingConfig"],
              "detailedDiff": {"scalingConfig.maxSize": {"kind": "update", "inputDiff": False}}}
    assert diff_digest(digest([update], {"same": 2, "update": 1})).partial
    assert not diff_digest(digest([update], {"same": 1, "update": 1})).partial
