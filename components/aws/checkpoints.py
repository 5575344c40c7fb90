"""The checkpoint tools' AWS identity: an IAM role that EKS Pod Identity hands to the tools' ServiceAccount, allowed
to list the checkpoint bucket, read / write / delete objects under the checkpoint and probe prefixes only, and use the
bucket's KMS key only through S3 in the cluster's region.

Pod Identity, as the VPC CNI already uses (``components.aws.cluster``): the role trusts ``pods.eks.amazonaws.com``
(sts:AssumeRole + sts:TagSession, https://docs.aws.amazon.com/eks/latest/userguide/pod-id-role.html) and an
association names the namespace and ServiceAccount; the pod needs no annotation. rclone's s3 remote with env_auth
loads the AWS SDK for Go v2's default chain (``awsconfig.LoadDefaultConfig``, backend/s3/s3.go at the rclone pin), whose
container credential provider serves Pod Identity credentials
(https://docs.aws.amazon.com/eks/latest/userguide/pod-id-minimum-sdk.html)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components import checkpoint_tools
from components.aws.iam import trust

OBJECT_ACTIONS = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload",
                  "s3:ListMultipartUploadParts"]
# SSE-KMS: writing needs a data key, reading needs the key to decrypt it
# (https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingKMSEncryption.html#require-sse-kms)
KEY_ACTIONS = ["kms:GenerateDataKey", "kms:Decrypt"]


def policy(bucket_arn: str, key_arn: str, prefixes: list[str], region: str) -> dict:
    """The role's only permissions: this bucket, these prefixes, this key through S3 in this region."""
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "ListCheckpointBucket", "Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": [bucket_arn]},
        {"Sid": "CheckpointObjects", "Effect": "Allow", "Action": OBJECT_ACTIONS,
         "Resource": [f"{bucket_arn}/{p}*" for p in prefixes]},
        {"Sid": "CheckpointKey", "Effect": "Allow", "Action": KEY_ACTIONS, "Resource": [key_arn],
         "Condition": {"StringEquals": {"kms:ViaService": f"s3.{region}.amazonaws.com"}}},
    ]}


@dataclass(frozen=True)
class CheckpointIdentityArgs:
    cluster_name: pulumi.Input[str]
    bucket_arn: pulumi.Input[str]
    key_arn: pulumi.Input[str]
    prefixes: list[str]
    region: str
    tags: dict[str, str]


class CheckpointIdentity(pulumi.ComponentResource):
    def __init__(self, name: str, args: CheckpointIdentityArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:aws:CheckpointIdentity", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.role = aws.iam.Role(f"{name}-role", assume_role_policy=trust("pods.eks.amazonaws.com", tag_session=True),
                                 description="gpufleet checkpoint tools (probe): the checkpoint bucket only",
                                 tags=args.tags, opts=child)
        aws.iam.RolePolicy(f"{name}-bucket", role=self.role.name, policy=pulumi.Output.all(
            args.bucket_arn, args.key_arn).apply(lambda a: json.dumps(policy(a[0], a[1], args.prefixes, args.region))),
            opts=child)
        aws.eks.PodIdentityAssociation(f"{name}-association", cluster_name=args.cluster_name,
                                       namespace=checkpoint_tools.NAMESPACE,
                                       service_account=checkpoint_tools.SERVICE_ACCOUNT, role_arn=self.role.arn,
                                       tags=args.tags, opts=child)
        self.register_outputs({"role_arn": self.role.arn})
