"""Peers' checkpoint tools into an EKS worker's checkpoint bucket (docs/fleet-queue.md "Recovery across clusters"):
per peer, an IAM OIDC provider for the peer cluster's issuer and a role that only the peer's checkpoint-tools
ServiceAccount can assume with its projected token (issuer, subject and audience pinned in the trust policy), allowed
to list the bucket under the export prefix only (the ``s3:prefix`` condition key), to read and write objects under
it (no delete: the copy never deletes), and to use the bucket's KMS key only through S3 in its region
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/example-policies-s3.html, "Allowing each IAM user access to
a folder in a bucket"). STS credentials last an hour at most (the role's maximum session)."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_aws as aws

from components import checkpoint_tools
from components.aws.checkpoints import KEY_ACTIONS
from components.aws.multikueue import web_identity_trust
from components.fleet import Cluster
from components.k8s.replicate import STS_AUDIENCE
from components.replicas import Source, collect, prefix, when_known

OBJECT_ACTIONS = ["s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"]


def policy(bucket_arn: str, key_arn: str, under: str, region: str) -> dict:
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "ListUnderPrefix", "Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": [bucket_arn],
         "Condition": {"StringLike": {"s3:prefix": [f"{under}*"]}}},
        {"Sid": "PrefixObjects", "Effect": "Allow", "Action": OBJECT_ACTIONS, "Resource": [f"{bucket_arn}/{under}*"]},
        {"Sid": "BucketKey", "Effect": "Allow", "Action": KEY_ACTIONS, "Resource": [key_arn],
         "Condition": {"StringEquals": {"kms:ViaService": f"s3.{region}.amazonaws.com"}}}]}


def _trust(name: str, source: Source, bucket: Any, key_arn: Any, under: str, region: str, tags: dict[str, str],
           opts: pulumi.ResourceOptions) -> pulumi.Output[Any]:
    def build(issuer: str) -> pulumi.Output[Any]:
        provider = aws.iam.OpenIdConnectProvider(f"{name}-{source.name}-issuer", url=issuer,
                                                 client_id_lists=[STS_AUDIENCE], tags=tags, opts=opts)
        role = aws.iam.Role(f"{name}-{source.name}", description=f"gpufleet: {source.name}'s checkpoint tools",
                            assume_role_policy=provider.arn.apply(lambda arn: web_identity_trust(
                                arn, issuer, checkpoint_tools.subject(), STS_AUDIENCE)),
                            max_session_duration=3600, tags=tags, opts=opts)
        aws.iam.RolePolicy(f"{name}-{source.name}-prefix", role=role.name, policy=pulumi.Output.all(
            bucket.arn, key_arn).apply(lambda a: json.dumps(policy(a[0], a[1], under, region))), opts=opts)
        return role.arn.apply(lambda arn: {"role_arn": arn})
    return when_known(source, build)


def trust_peers(cluster: Cluster, built: Any, sources: list[Source]) -> pulumi.Output[Any]:
    assert cluster.spec.storage.lustre is not None
    bucket, name = built.buckets[cluster.spec.storage.lustre.bucket], f"{cluster.name}-checkpoint-peer"
    opts = pulumi.ResourceOptions(parent=built)
    identities = {s.name: _trust(name, s, bucket, built.data_key.arn, prefix(cluster), cluster.spec.region,
                                 cluster.tags, opts) for s in sources}
    return collect({"bucket": bucket.bucket_name, "region": cluster.spec.region}, identities)
