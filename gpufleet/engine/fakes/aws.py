"""FAKE AWS answers for the offline preview (see gpufleet/engine/fakes/__init__.py)."""

from __future__ import annotations

from typing import Any

from pulumi.runtime import MockResourceArgs

from gpufleet.engine.fakes.base import Invoke, Outputs, hex_id

ACCOUNT = "123456789012"
DEFAULT_REGION = "us-east-1"


def _region(inputs: dict[str, Any]) -> str:
    return str(inputs.get("region") or DEFAULT_REGION)


def _arn(service: str, resource: str, inputs: dict[str, Any], *, regional: bool = True) -> str:
    region = _region(inputs) if regional else ""
    return f"arn:aws:{service}:{region}:{ACCOUNT}:{resource}"


def _eks_cluster(a: MockResourceArgs, rid: str) -> dict[str, Any]:
    region, token = _region(a.inputs), hex_id(a.name, 32).upper()
    return {
        "arn": _arn("eks", f"cluster/{a.inputs.get('name', a.name)}", a.inputs),
        "endpoint": f"https://{token}.gr7.{region}.eks.amazonaws.com",
        "certificateAuthority": {"data": "RkFLRS1DQS1GT1ItT0ZGTElORS1QUkVWSUVX"},  # base64("FAKE-CA-...")
        "identities": [{"oidcs": [{"issuer": f"https://oidc.eks.{region}.amazonaws.com/id/{token}"}]}],
        "vpcConfig": {**a.inputs.get("vpcConfig", {}), "clusterSecurityGroupId": f"sg-{hex_id(a.name + 'csg')}"},
        "status": "ACTIVE",
    }


OUTPUTS: dict[str, Outputs] = {
    "aws:eks/cluster:Cluster": _eks_cluster,
    "aws:iam/role:Role": lambda a, rid: {"arn": f"arn:aws:iam::{ACCOUNT}:role/{rid}", "name": rid},
    "aws:iam/openIdConnectProvider:OpenIdConnectProvider": lambda a, rid: {  # IAM names it by the issuer's host+path
        "arn": f"arn:aws:iam::{ACCOUNT}:oidc-provider/{str(a.inputs.get('url', rid)).removeprefix('https://')}"},
    "aws:kms/key:Key": lambda a, rid: {"arn": _arn("kms", f"key/{rid}", a.inputs), "keyId": rid},
    "aws:s3/bucket:Bucket": lambda a, rid: {"bucket": rid, "arn": f"arn:aws:s3:::{rid}"},
    "aws:ec2/launchTemplate:LaunchTemplate": lambda a, rid: {
        "latestVersion": 1, "arn": _arn("ec2", f"launch-template/{rid}", a.inputs)},
    "aws:ec2/placementGroup:PlacementGroup": lambda a, rid: {"name": rid, "placementGroupId": f"pg-{hex_id(a.name)}"},
    "aws:fsx/lustreFileSystem:LustreFileSystem": lambda a, rid: {
        "dnsName": f"{rid}.fsx.{_region(a.inputs)}.amazonaws.com", "mountName": hex_id(a.name, 8),
        "arn": _arn("fsx", f"file-system/{rid}", a.inputs)},
    "aws:eks/nodeGroup:NodeGroup": lambda a, rid: {
        "arn": _arn("eks", f"nodegroup/{rid}", a.inputs), "status": "ACTIVE"},
}

ID_PREFIX = {
    "aws:ec2/vpc:Vpc": "vpc-", "aws:ec2/subnet:Subnet": "subnet-", "aws:ec2/securityGroup:SecurityGroup": "sg-",
    "aws:ec2/launchTemplate:LaunchTemplate": "lt-", "aws:ec2/natGateway:NatGateway": "nat-",
    "aws:ec2/eip:Eip": "eipalloc-", "aws:ec2/internetGateway:InternetGateway": "igw-",
    "aws:ec2/routeTable:RouteTable": "rtb-", "aws:fsx/lustreFileSystem:LustreFileSystem": "fs-",
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": "dra-",
}


def bucket_name(prefix: str, resource_name: str) -> str:
    """The FAKE name of an S3 bucket: its prefix and a stable id of its resource's name (a peer stack's fake export
    names it too: gpufleet/engine/fakes/stackrefs.py)."""
    return f"{prefix}{hex_id(resource_name, 8)}"


def physical_id(a: MockResourceArgs) -> str | None:
    if a.typ == "aws:s3/bucket:Bucket":
        return bucket_name(a.inputs.get("bucketPrefix", a.name + "-"), a.name)
    prefix = ID_PREFIX.get(a.typ)
    return prefix + hex_id(a.typ + a.name) if prefix else None


# --- invokes --------------------------------------------------------------------------------------------

_ADDON_VERSIONS = {"vpc-cni": "v1.20.4-eksbuild.1", "coredns": "v1.12.2-eksbuild.4",
                   "eks-pod-identity-agent": "v1.3.8-eksbuild.2"}


def _addon_version(args: dict[str, Any]) -> dict[str, Any]:
    name, k8s = args["addonName"], args["kubernetesVersion"]
    version = _ADDON_VERSIONS.get(name, f"v{k8s}.3-eksbuild.2")
    return {"id": name, "addonName": name, "kubernetesVersion": k8s, "version": version, "mostRecent": True}


def _subnets(args: dict[str, Any]) -> dict[str, Any]:
    seed = "".join(v for f in args.get("filters", []) for v in f.get("values", []))
    return {"id": DEFAULT_REGION, "ids": [f"subnet-{hex_id(seed)}"], "filters": args.get("filters", [])}


INVOKES: dict[str, Invoke] = {
    "aws:index/getPartition:getPartition": lambda a: {"id": "aws", "partition": "aws", "dnsSuffix": "amazonaws.com",
                                                      "reverseDnsPrefix": "com.amazonaws"},
    "aws:index/getCallerIdentity:getCallerIdentity": lambda a: {
        "id": ACCOUNT, "accountId": ACCOUNT, "arn": f"arn:aws:iam::{ACCOUNT}:user/gpufleet-preview",
        "userId": "AIDAFAKEPREVIEWUSER"},
    "aws:eks/getAddonVersion:getAddonVersion": _addon_version,
    "aws:ec2/getSubnets:getSubnets": _subnets,
}
