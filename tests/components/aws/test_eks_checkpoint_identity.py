"""The checkpoint tools' AWS identity under the mock runtime: a Pod Identity role for exactly the tools'
ServiceAccount, whose policy names only the Lustre-linked bucket (its checkpoint and probe prefixes) and that bucket's
KMS key through S3; the probe prefix's old versions expire."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.aws.checkpoints import policy
from gpufleet.engine.capture import Graph
from tests.conftest import Capture, example_fleet, of_type, one

# https://docs.aws.amazon.com/eks/latest/userguide/pod-id-role.html: the trust policy's principal and actions
POD_IDENTITY_PRINCIPAL = {"Service": "pods.eks.amazonaws.com"}
POD_IDENTITY_ACTIONS = {"sts:AssumeRole", "sts:TagSession"}


def _two_buckets() -> dict[str, Any]:
    """aws-train with a second bucket the tools must not reach."""
    fleet = example_fleet("aws-train")
    fleet["clusters"][0]["storage"]["buckets"].append({"name": "scratch"})
    return fleet


@pytest.fixture(scope="module")
def graph() -> Graph:
    from gpufleet.engine.capture import run_program
    from stacks.config import CONFIG_KEY

    return run_program("test", {CONFIG_KEY: _two_buckets()})


def _arn(graph: Graph, bucket: str) -> str:
    """The bucket's ARN, from the bucket id its versioning resource names."""
    return f"arn:aws:s3:::{one(graph, 'BucketVersioning', f'train-{bucket}-versioning').inputs['bucket']}"


def _key_arn(graph: Graph, bucket: str) -> str:
    """The KMS key that encrypts the bucket (its default encryption names it)."""
    [rule] = one(graph, "BucketServerSideEncryptionConfiguration", f"train-{bucket}-encryption").inputs["rules"]
    return str(rule["applyServerSideEncryptionByDefault"]["kmsMasterKeyId"])


def test_the_role_trusts_pod_identity_only(graph: Graph) -> None:
    role = one(graph, "iam/role:Role", "train-checkpoint-tools-role").inputs
    [statement] = json.loads(role["assumeRolePolicy"])["Statement"]
    assert statement["Principal"] == POD_IDENTITY_PRINCIPAL and set(statement["Action"]) == POD_IDENTITY_ACTIONS


def test_the_association_binds_the_tools_service_account_in_its_namespace(graph: Graph) -> None:
    association = one(graph, "PodIdentityAssociation", "train-checkpoint-tools-association").inputs
    assert (association["namespace"], association["serviceAccount"]) == ("gpufleet-probe", "checkpoint-tools")
    assert association["clusterName"] == "train"
    assert association["roleArn"].startswith("arn:aws:iam::") and "role/train-checkpoint-tools-role" in \
        association["roleArn"]
    sa = [r for r in of_type(graph, "core/v1:ServiceAccount") if r.inputs["metadata"]["name"] == "checkpoint-tools"]
    assert [s.inputs["metadata"]["namespace"] for s in sa] == ["gpufleet-probe"]


def test_the_policy_names_only_the_linked_bucket_its_prefixes_and_its_key(graph: Graph) -> None:
    doc = json.loads(one(graph, "iam/rolePolicy:RolePolicy", "train-checkpoint-tools-bucket").inputs["policy"])
    ckpt, scratch = _arn(graph, "checkpoints"), _arn(graph, "scratch")
    key = _key_arn(graph, "checkpoints")
    resources = [r for s in doc["Statement"] for r in s["Resource"]]
    assert set(resources) == {ckpt, f"{ckpt}/checkpoints/*", f"{ckpt}/.gpufleet-probe/*", key}
    assert not any(scratch in r for r in resources)
    actions = [a for s in doc["Statement"] for a in s["Action"]]
    assert all("*" not in a for a in actions) and all(s["Effect"] == "Allow" for s in doc["Statement"])
    [kms] = [s for s in doc["Statement"] if s["Resource"] == [key]]
    assert kms["Condition"] == {"StringEquals": {"kms:ViaService": "s3.us-east-1.amazonaws.com"}}


@pytest.mark.parametrize("bad", ["*", "arn:aws:s3:::*", "arn:aws:s3:::other-bucket/*"])
def test_a_policy_granting_any_other_resource_is_caught(bad: str) -> None:
    """The check above fails on a wildcard or another bucket (the policy function itself never yields one)."""
    doc = policy("arn:aws:s3:::ckpt", "arn:aws:kms:us-east-1:1:key/k", ["checkpoints/", ".gpufleet-probe/"],
                 "us-east-1")
    doc["Statement"][1]["Resource"].append(bad)
    allowed = {"arn:aws:s3:::ckpt", "arn:aws:s3:::ckpt/checkpoints/*", "arn:aws:s3:::ckpt/.gpufleet-probe/*",
               "arn:aws:kms:us-east-1:1:key/k"}
    assert {r for s in doc["Statement"] for r in s["Resource"]} - allowed == {bad}


def test_probe_objects_expire_their_old_versions_after_a_day(graph: Graph) -> None:
    rules = one(graph, "BucketLifecycleConfiguration", "train-checkpoints-lifecycle").inputs["rules"]
    [probe] = [r for r in rules if r["id"] == "probe-objects"]
    assert probe["filter"] == {"prefix": ".gpufleet-probe/"}
    assert probe["noncurrentVersionExpiration"] == {"noncurrentDays": 1}
    assert probe["expiration"] == {"expiredObjectDeleteMarker": True}


def test_no_lustre_no_checkpoint_identity(capture: Capture) -> None:
    fleet = example_fleet("aws-train")
    fleet["clusters"][0]["storage"].pop("lustre")
    graph = capture(fleet)
    assert not of_type(graph, "PodIdentityAssociation") or all(
        "checkpoint" not in r.name for r in of_type(graph, "PodIdentityAssociation"))
    assert not [r for r in of_type(graph, "iam/role:Role") if "checkpoint-tools" in r.name]
