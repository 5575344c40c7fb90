"""Least-privilege IAM roles: AWS-managed policies scoped to one job each, never wildcards of our own."""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws

# The node role gets only what kubelet and image pulls need; the VPC CNI and CSI drivers get their
# permissions through EKS Pod Identity instead of the node role.
NODE_POLICIES = ("AmazonEKSWorkerNodeMinimalPolicy", "AmazonEC2ContainerRegistryPullOnly")
CLUSTER_POLICIES = ("AmazonEKSClusterPolicy",)


def trust(service: str, *, tag_session: bool = False) -> str:
    actions = ["sts:AssumeRole", "sts:TagSession"] if tag_session else ["sts:AssumeRole"]
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"Service": service}, "Action": actions}]})


def role(name: str, service: str, policies: tuple[str, ...], tags: dict[str, str],
         opts: pulumi.ResourceOptions, partition: pulumi.Input[str] = "aws", *,
         tag_session: bool = False) -> aws.iam.Role:
    """A role assumable by one service, with the named AWS-managed policies attached."""
    r = aws.iam.Role(name, assume_role_policy=trust(service, tag_session=tag_session), tags=tags, opts=opts)
    for policy in policies:
        arn = pulumi.Output.concat("arn:", partition, ":iam::aws:policy/", policy)
        aws.iam.RolePolicyAttachment(f"{name}-{policy}", role=r.name, policy_arn=arn, opts=opts)
    return r
