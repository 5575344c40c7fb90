"""Unit tests of the diff, the replacement table, risk ordering, cost arithmetic, the comment and the digest path."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from gpufleet.engine.capture import Resource
from gpufleet.review import comment, cost, report
from gpufleet.review.diff import Op, changed_paths, diff_resources
from gpufleet.review.digest import diff_digest
from gpufleet.review.replacements import TABLE, Effect, classify, find_rule, normalise
from gpufleet.review.risk import risks

DATA = Path(__file__).parent / "data"
NG = "aws:eks/nodeGroup:NodeGroup"
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
S3 = "aws:s3/bucket:Bucket"
SUBNET = Resource("aws:ec2/subnet:Subnet", "sub-a", None, True, {"availabilityZone": "us-east-1a"}, [])


def ng(name: str, machine: str = "p5.48xlarge", nodes: int = 16, **extra: object) -> Resource:
    inputs = {"instanceTypes": [machine], "scalingConfig": {"maxSize": nodes}, "capacityType": "ON_DEMAND", **extra}
    return Resource(NG, name, None, True, inputs, [SUBNET.key])


def res(type_: str, name: str, **inputs: object) -> Resource:
    return Resource(type_, name, None, True, dict(inputs), [])


@pytest.fixture(scope="module")
def prices() -> cost.Prices:
    return cost.Prices.load(DATA / "offers.csv")


def test_changed_paths_recurse_into_maps_and_equal_length_lists() -> None:
    old = {"a": {"b": 1, "c": [1, 2]}, "tags": {"x": "1"}, "l": [1]}
    new = {"a": {"b": 2, "c": [1, 3]}, "tags": {"x": "1", "y": "2"}, "l": [1, 2]}
    assert changed_paths(old, new) == ["a.b", "a.c[1]", "l", "tags.y"]


def test_create_update_replace_delete() -> None:
    base = [SUBNET, ng("keep"), ng("swap"), res(S3, "gone", bucketPrefix="x"), res("aws:foo/bar:Bar", "odd", x=1)]
    head = [SUBNET, ng("keep", labels={"a": "b"}), ng("swap", "p5en.48xlarge"), res(S3, "new", bucketPrefix="y"),
            res("aws:foo/bar:Bar", "odd", x=2)]
    diff = diff_resources("s", base, head)
    ops = {c.name: (c.op, c.label) for c in diff.changes}
    assert ops == {"swap": (Op.REPLACE, "replace"), "gone": (Op.DELETE, "delete"), "keep": (Op.UPDATE, "update"),
                   "odd": (Op.UPDATE, "update (replacement unknown)"), "new": (Op.CREATE, "create")}
    assert [c.op for c in diff.changes] == [Op.REPLACE, Op.DELETE, Op.UPDATE, Op.UPDATE, Op.CREATE]
    assert diff.counts() == {"create": 1, "delete": 1, "update": 2, "replace": 1}


def test_table_rows_are_sourced_and_valid() -> None:
    with TABLE.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) > 100
    for row in rows:
        assert row["effect"] in {"replace", "roll", "in_place", "replace_if", "replace_if_updated",
                                 "replace_if_cluster"}, row
        assert row["source"].startswith("https://"), row
        assert row["note"], row
    keys = [(r["type"], r["property"]) for r in rows]
    assert len(keys) == len(set(keys)), "duplicate rules"


@pytest.mark.parametrize(("type_", "path", "effect"), [
    (NG, "instanceTypes[0]", Effect.REPLACE),
    (NG, "launchTemplate.version", Effect.ROLL),
    (NG, "launchTemplate.id", Effect.REPLACE),
    (NG, "scalingConfig.maxSize", Effect.IN_PLACE),
    (NG, "tags.owner", Effect.IN_PLACE),  # the aws:* wildcard
    ("aws:ec2/launchTemplate:LaunchTemplate", "tagSpecifications[0].tags.owner", Effect.ROLL),
    ("aws:ec2/launchTemplate:LaunchTemplate", "tags.owner", Effect.IN_PLACE),
    ("gcp:container/nodePool:NodePool", "nodeConfig.guestAccelerators[0].type", Effect.REPLACE),
    ("gcp:container/nodePool:NodePool", "nodeConfig.machineType", Effect.ROLL),
    ("azure-native:containerservice:AgentPool", "vmSize", Effect.REPLACE),
    ("azure-native:containerservice:AgentPool", "tags.owner", Effect.IN_PLACE),
    (FSX, "deploymentType", Effect.REPLACE),
    (S3, "bucketPrefix", Effect.REPLACE),
    ("aws:ec2/vpc:Vpc", "cidrBlock", Effect.UNKNOWN),
])
def test_replacement_table(type_: str, path: str, effect: Effect) -> None:
    assert classify(type_, path).effect is effect


def test_conditional_rules_compare_old_and_new() -> None:
    assert classify(FSX, "storageCapacity", 4800, 2400).effect is Effect.REPLACE
    assert classify(FSX, "storageCapacity", 2400, 4800).effect is Effect.IN_PLACE
    assert classify(FSX, "fileSystemTypeVersion", "2.15", "2.12").effect is Effect.REPLACE
    assert classify(FSX, "storageCapacity", "[unknown]", 4800).effect is Effect.UNKNOWN
    assert normalise('tags["team"]') == "tags.team"
    assert find_rule("gcp:storage/bucket:Bucket", "labels.team").property == "labels"


def test_risk_ordering_replace_before_roll_gpu_before_lustre_before_bucket() -> None:
    lt = res("aws:ec2/launchTemplate:LaunchTemplate", "lt", userData="a")
    rolled = Resource(NG, "rolled", None, True, ng("rolled", "p4d.24xlarge", 4).inputs, [lt.key])
    base = [SUBNET, ng("big", nodes=16), ng("small", nodes=2), rolled, lt, res(FSX, "fs", deploymentType="A"),
            res(S3, "ckpt", bucketPrefix="a"), ng("shrink", nodes=8)]
    head = [SUBNET, ng("big", "p5en.48xlarge", 16), rolled, res("aws:ec2/launchTemplate:LaunchTemplate", "lt",
            userData="b"), res(FSX, "fs", deploymentType="B"), res(S3, "ckpt", bucketPrefix="b"), ng("shrink", nodes=4)]
    found = risks(diff_resources("s", base, head))
    assert [(k.action, k.kind, k.resource.split("::")[1], k.gpus) for k in found] == [
        ("replace", "gpu_pool", "big", 128), ("delete", "gpu_pool", "small", 16), ("replace", "lustre", "fs", 0),
        ("replace", "bucket", "ckpt", 0), ("roll", "gpu_pool", "rolled", 32), ("drain", "gpu_pool", "shrink", 32)]
    assert "launch template lt: userData" in found[4].cause


def test_cost_arithmetic_uses_730_hours(prices: cost.Prices) -> None:
    costs = cost.pool_costs([SUBNET, ng("h", nodes=16), ng("cpu", "m7i.2xlarge", 4)], prices)
    h100 = next(c for c in costs if c.key.endswith("::h"))
    assert (h100.region, h100.usd_per_node_hour) == ("us-east-1", pytest.approx(6.88 * 8))
    assert h100.monthly_usd == pytest.approx(16 * 55.04 * 730)  # 642,867.20
    # CPU system pools: offers.csv prices GPUs only; the budget policy's list-price table prices them, here too
    cpu = next(c for c in costs if c.key.endswith("::cpu"))
    assert cpu.usd_per_node_hour == pytest.approx(0.4032)  # capacity/data/on_demand_prices.csv, m7i.2xlarge
    assert "list price" in cpu.source
    spot = cost.pool_costs([SUBNET, ng("s", "p4d.24xlarge", 2, capacityType="SPOT")], prices)[0]
    assert (spot.option, spot.monthly_usd) == ("spot", pytest.approx(2 * 1.2 * 8 * 730))
    assert cost.HOURS_PER_MONTH == 730


def test_comment_marker_headline_and_truncation(prices: cost.Prices) -> None:
    base = [SUBNET] + [ng(f"pool-{i:04d}", nodes=1) for i in range(600)]
    head = [SUBNET] + [ng(f"pool-{i:04d}", "p5en.48xlarge", 1) for i in range(600)]
    text = comment.render([report.build(diff_resources("big", base, head), prices)])
    assert text.startswith(comment.MARKER + "\n## Monthly cost will increase by $")
    assert len(text) <= comment.LIMIT
    assert "**Truncated**" in text and text.count("<details") == text.count("</details>")
    small = comment.render([report.build(diff_resources("s", [SUBNET], [SUBNET]), prices)])
    assert "Monthly cost will not change" in small and "Truncated" not in small


def test_pulumi_preview_digest_path(prices: cost.Prices) -> None:
    diff = diff_digest(json.loads((DATA / "pulumi-preview.json").read_text()))
    assert diff.stack == "aws-train" and diff.source == "pulumi-preview"
    assert [(c.name, c.label) for c in diff.changes] == [
        ("train-h100-ng", "replace"), ("train-lustre-fsx", "delete"), ("train-net-vpc", "update"),
        ("train-extra", "create")]
    assert diff.changes[0].paths[0].effect is Effect.REPLACE
    r = report.build(diff, prices)
    assert [k.headline for k in r.risks][:2] == ["aws-train: replaces 128 H100 GPUs (train-h100-ng)",
                                                 "aws-train: deletes Lustre file system train-lustre-fsx"]
    assert r.delta_usd == pytest.approx(16 * (63.296 - 55.04) * 730)
    doc = report.document([r])
    assert doc["schema"] == "gpufleet.diff/v1" and doc["stacks"][0]["cost"]["hours_per_month"] == 730
    with pytest.raises(ValueError):
        diff_digest({"steps": "nope"})


@pytest.mark.parametrize(("type_", "path", "effect"), [
    # pulumi-kubernetes provider/pkg/provider/diff.go (commit 00302beb): forceNewProperties
    ("kubernetes:core/v1:ConfigMap", "data.kueue.yaml", Effect.REPLACE),
    ("kubernetes:core/v1:PersistentVolumeClaim", "spec.resources.requests.storage", Effect.REPLACE),
    ("kubernetes:core/v1:PersistentVolume", "spec.csi.volumeHandle", Effect.REPLACE),
    ("kubernetes:core/v1:PersistentVolume", "spec.capacity.storage", Effect.IN_PLACE),
    ("kubernetes:storage.k8s.io/v1:StorageClass", "parameters.fileSystemId", Effect.REPLACE),
    ("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue", "spec.resourceGroups[0].flavors", Effect.IN_PLACE),
    ("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue", "metadata.name", Effect.REPLACE),
    ("kubernetes:core/v1:Namespace", "metadata.labels.team", Effect.IN_PLACE),
    ("kubernetes:apps/v1:DaemonSet", "spec.selector.matchLabels.app", Effect.REPLACE),
    ("gcp:container/nodePool:NodePool", "nodeConfig.imageType", Effect.ROLL),
])
def test_every_kubernetes_kind_has_a_sourced_rule(type_: str, path: str, effect: Effect) -> None:
    found = classify(type_, path)
    assert found.effect is effect and found.source.startswith("https://")
