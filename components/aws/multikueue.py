"""The MultiKueue manager's identity in an EKS worker (docs/fleet-queue.md "Credentials"): an IAM OIDC provider for
the manager cluster's issuer, a role only the manager's token minter can assume with its projected ServiceAccount
token (issuer, subject and audience all pinned in the trust policy), and an EKS access entry mapping that role to the
Kubernetes group the in-cluster layer binds to the MultiKueue role. The role has no IAM policy: an EKS token is a
presigned sts:GetCallerIdentity, which needs none (https://docs.aws.amazon.com/eks/latest/userguide/access-entries.html,
"Kubernetes groups"). Nothing is long-lived: the minter's STS credentials last 15 minutes, its EKS token 14."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.k8s.fleetqueue import MANAGER_GROUP, subject
from components.k8s.replicate import STS_AUDIENCE

AUDIENCE = STS_AUDIENCE  # what EKS's own IRSA tokens carry and IAM's OIDC providers list as their client id


def web_identity_trust(provider_arn: str, issuer: str, sub: str, audience: str) -> str:
    """A role only ``sub``'s tokens from ``issuer`` (for ``audience``) can assume."""
    host = issuer.removeprefix("https://")
    return json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Federated": provider_arn}, "Action": "sts:AssumeRoleWithWebIdentity",
        "Condition": {"StringEquals": {f"{host}:sub": sub, f"{host}:aud": audience}}}]})


def trust_policy(provider_arn: str, issuer: str) -> str:
    return web_identity_trust(provider_arn, issuer, subject(), AUDIENCE)


@dataclass(frozen=True)
class ManagerAccessArgs:
    cluster_name: pulumi.Input[str]
    region: str
    endpoint: pulumi.Input[str]
    ca_data: pulumi.Input[str]
    issuer: pulumi.Input[str]  # the manager cluster's OIDC issuer URL
    tags: dict[str, str]


class ManagerAccess(pulumi.ComponentResource):
    def __init__(self, name: str, args: ManagerAccessArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:aws:MultiKueueManagerAccess", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        provider = aws.iam.OpenIdConnectProvider(f"{name}-issuer", url=args.issuer, client_id_lists=[AUDIENCE],
                                                 tags=args.tags, opts=child)
        role = aws.iam.Role(f"{name}-role", description="gpufleet: the MultiKueue manager's token minter",
                            assume_role_policy=pulumi.Output.all(provider.arn, args.issuer).apply(
                                lambda a: trust_policy(a[0], a[1])),
                            max_session_duration=3600, tags=args.tags, opts=child)
        aws.eks.AccessEntry(f"{name}-entry", cluster_name=args.cluster_name, principal_arn=role.arn,
                            kubernetes_groups=[MANAGER_GROUP], type="STANDARD", tags=args.tags, opts=child)
        self.access = pulumi.Output.all(args.endpoint, args.ca_data, args.cluster_name, role.arn).apply(
            lambda a: {"server": a[0], "ca_data": a[1], "cluster": a[2], "region": args.region, "role_arn": a[3],
                       "audience": AUDIENCE})
        self.register_outputs({"access": self.access})
