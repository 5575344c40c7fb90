"""What the parent imports before forking the previews: the component packages the named stacks share, and every SDK
name their source spells. Expected clouds come from the example stack files (`cloud:` in stacks/Pulumi.*.yaml)."""

from __future__ import annotations

from pathlib import Path

from gpufleet.engine.preimport import component_packages, sdk_chains
from stacks.config import STACKS_DIR

SOURCE = '''
import pulumi
import pulumi_aws as aws
import pulumi_kubernetes
import json

def build() -> None:
    sg = aws.ec2.SecurityGroup("sg")
    aws.vpc.SecurityGroupIngressRule("in", security_group_id=sg.id)
    pulumi_kubernetes.helm.v3.Release("r")
    pulumi.export("x", json.dumps({}))
    vpc_id = aws.ec2.Vpc("v").id
'''


def test_sdk_chains_follow_the_import_alias_and_ignore_other_modules() -> None:
    assert sdk_chains(SOURCE) == {
        ("pulumi_aws", "ec2", "SecurityGroup"), ("pulumi_aws", "vpc", "SecurityGroupIngressRule"),
        ("pulumi_kubernetes", "helm", "v3", "Release"), ("pulumi_aws", "ec2", "Vpc"),
    }


def test_only_packages_enough_stacks_share_are_preimported(tmp_path: Path) -> None:
    # aws-train and dev are aws (with clusters), gcp-train is gcp: all three need the Kubernetes add-ons
    names = ["aws-train", "dev", "gcp-train"]
    assert component_packages(names, STACKS_DIR, shared_by=2) == ["components.aws", "components.k8s"]
    assert component_packages(names, STACKS_DIR, shared_by=1) == ["components.aws", "components.gcp", "components.k8s"]
    assert component_packages(names, STACKS_DIR, shared_by=4) == []


def test_a_stack_that_does_not_load_is_left_to_its_own_preview(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.broken.yaml").write_text("config:\n  gpufleet:fleet: {cloud: nowhere}\n")
    assert component_packages(["broken", "missing"], tmp_path, shared_by=1) == []
