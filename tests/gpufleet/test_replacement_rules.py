"""The replacement rules behind the PR comment's risk section: which rule wins when several match (pinned on a test
table whose rows compete, so it holds before the shipped table grows such rows), and a launch template's replacement
overriding a node group's own, lesser change when a pull request carries both.

Precedence, as gpufleet/review/replacements.py documents it: a specific property before ``*``; then the exact type
before a cloud-wide type (``aws:*``); then the longest property.
"""

from __future__ import annotations

import pytest

from gpufleet.engine.capture import Resource
from gpufleet.review.diff import diff_resources
from gpufleet.review.replacements import Rule, find_rule, rules
from gpufleet.review.risk import risks

NG = "aws:eks/nodeGroup:NodeGroup"
LT = "aws:ec2/launchTemplate:LaunchTemplate"
SUBNET = Resource("aws:ec2/subnet:Subnet", "sub-a", None, True, {"availabilityZone": "us-east-1a"}, [])

# A test table, not the shipped one: each pair of rows competes for the same change. The effect names the winner.
ROWS = """type,property,effect,source,note
aws:*,labels,in_place,https://example.test/cloud-wide,cloud-wide labels
aws:eks/nodeGroup:NodeGroup,labels,roll,https://example.test/typed,typed labels
aws:eks/nodeGroup:NodeGroup,taints,roll,https://example.test/typed,typed taints
aws:*,taints,in_place,https://example.test/cloud-wide,cloud-wide taints listed after the typed row
aws:*,scalingConfig.maxSize,replace,https://example.test/cloud-wide,cloud-wide and longer
aws:eks/nodeGroup:NodeGroup,scalingConfig,in_place,https://example.test/typed,typed and shorter
aws:eks/nodeGroup:NodeGroup,updateConfig,in_place,https://example.test/typed,typed and shorter
aws:eks/nodeGroup:NodeGroup,updateConfig.maxUnavailable,roll,https://example.test/typed,typed and longer
aws:eks/nodeGroup:NodeGroup,*,replace,https://example.test/typed,typed wildcard
aws:*,tags,in_place,https://example.test/cloud-wide,cloud-wide tags
aws:*,*,roll,https://example.test/cloud-wide,cloud-wide wildcard
aws:eks/nodeGroup:NodeGroup,amiType,replace,https://example.test/typed,typed
"""


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> tuple[Rule, ...]:
    path = tmp_path_factory.mktemp("rules") / "replacements.csv"
    path.write_text(ROWS)
    return rules(path)


@pytest.mark.parametrize(("type_", "path", "effect", "note"), [
    # the same property: the exact type wins, whichever row comes first in the table
    (NG, "labels.team", "roll", "typed labels"),
    (NG, "taints[0].key", "roll", "typed taints"),
    ("aws:eks/cluster:Cluster", "labels.team", "in_place", "cloud-wide labels"),  # no typed row for a cluster
    # the exact type wins even over a longer cloud-wide property
    (NG, "scalingConfig.maxSize", "in_place", "typed and shorter"),
    # within a type the longest property wins
    (NG, "updateConfig.maxUnavailable", "roll", "typed and longer"),
    (NG, "updateConfig.maxUnavailablePercentage", "in_place", "typed and shorter"),  # not below maxUnavailable
    # a specific property (even cloud-wide) wins over a wildcard; the typed wildcard over the cloud-wide one
    (NG, 'tags["owner"]', "in_place", "cloud-wide tags"),
    (NG, "releaseVersion", "replace", "typed wildcard"),
    ("aws:eks/cluster:Cluster", "version", "roll", "cloud-wide wildcard"),
])
def test_the_most_specific_rule_wins(table: tuple[Rule, ...], type_: str, path: str, effect: str, note: str) -> None:
    rule = find_rule(type_, path, table)
    assert rule is not None and (rule.effect, rule.note) == (effect, note)


def test_no_rule_of_another_cloud_or_type_applies(table: tuple[Rule, ...]) -> None:
    assert find_rule("gcp:container/nodePool:NodePool", "labels.team", table) is None
    assert find_rule(NG, "amiTypeX", [r for r in table if r.property != "*"]) is None  # a prefix is not a parent


def ng(name: str, depends: list[str], **extra: object) -> Resource:
    inputs = {"instanceTypes": ["p5.48xlarge"], "scalingConfig": {"maxSize": 16}, "capacityType": "ON_DEMAND",
              **extra}
    return Resource(NG, name, None, True, inputs, [SUBNET.key, *depends])


def template(**inputs: object) -> Resource:
    return Resource(LT, "lt", None, True, {"name": "lt-a", "userData": "a", **inputs}, [])


def one_risk(base: list[Resource], head: list[Resource]) -> tuple[str, str, int]:
    (risk,) = [r for r in risks(diff_resources("s", base, head)) if r.kind == "gpu_pool"]
    return risk.action, risk.cause, risk.gpus


def test_a_replaced_launch_template_replaces_a_node_group_that_also_rolls_itself() -> None:
    """The node group's own change (releaseVersion) rolls it; its launch template's new name replaces the template
    and so the node group (shipped table: launchTemplate name is ForceNew). Both in one PR: replace wins."""
    lt_old, lt_new = template(), template(name="lt-b")
    base = [SUBNET, lt_old, ng("train", [lt_old.key], releaseVersion="1.31.0-a")]
    head = [SUBNET, lt_new, ng("train", [lt_new.key], releaseVersion="1.31.0-b")]
    assert one_risk(base, head) == ("replace", "launch template lt: name", 128)


def test_a_node_group_replaced_by_its_own_change_stays_replaced_when_its_template_only_rolls() -> None:
    lt_old, lt_new = template(), template(userData="b")
    base = [SUBNET, lt_old, ng("train", [lt_old.key])]
    head = [SUBNET, lt_new, Resource(NG, "train", None, True, {**ng("train", []).inputs, "amiType": "AL2023_x86_64"},
                                     [SUBNET.key, lt_new.key])]
    assert one_risk(base, head) == ("replace", "amiType", 128)


def test_a_rolling_template_overrides_a_node_group_that_only_drains() -> None:
    """16 -> 8 nodes alone drains 8 x 8 = 64 GPUs; with the template's new user data every node rolls: 128 GPUs."""
    lt_old, lt_new = template(), template(userData="b")
    base = [SUBNET, lt_old, ng("train", [lt_old.key])]
    head = [SUBNET, lt_new, ng("train", [lt_new.key], scalingConfig={"maxSize": 8})]
    assert one_risk(base, head) == ("roll", "launch template lt: userData", 128)
    assert one_risk(base, [SUBNET, lt_old, ng("train", [lt_old.key], scalingConfig={"maxSize": 8})]) == (
        "drain", "max nodes 16 -> 8", 64)


def test_a_node_group_that_does_not_use_the_template_is_not_touched_by_it() -> None:
    lt_old, lt_new = template(), template(name="lt-b")
    base = [SUBNET, lt_old, ng("train", [], releaseVersion="1.31.0-a")]
    head = [SUBNET, lt_new, ng("train", [], releaseVersion="1.31.0-b")]
    assert one_risk(base, head) == ("roll", "releaseVersion", 128)

