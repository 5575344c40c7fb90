"""Checkpoint and dataset storage: a private, versioned, KMS-encrypted S3 bucket, and FSx for Lustre
PERSISTENT_2 linked to it by data repository associations that import and export changes automatically."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.checkpoint_tools import PROBE_NONCURRENT_DAYS, PROBE_PREFIX
from components.spec import BucketSpec, LustreSpec

LUSTRE_PORTS = ((988, 988), (1018, 1023))  # Lustre network ports, from the FSx for Lustre user guide
SYNC_EVENTS = ["NEW", "CHANGED", "DELETED"]
MAINTENANCE_START = "7:02:00"  # d:HH:MM UTC, 7 = Sunday: the weekly window every cloud's upgrades share


@dataclass(frozen=True)
class BucketArgs:
    spec: BucketSpec
    kms_key_arn: pulumi.Input[str]
    tags: dict[str, str]


class CheckpointBucket(pulumi.ComponentResource):
    def __init__(self, name: str, args: BucketArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:aws:CheckpointBucket", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        spec = args.spec
        self.bucket = aws.s3.Bucket(f"{name}-bucket", bucket_prefix=f"{spec.name}-", tags=args.tags, opts=child)
        aws.s3.BucketOwnershipControls(f"{name}-ownership", bucket=self.bucket.id,
                                       rule={"object_ownership": "BucketOwnerEnforced"}, opts=child)
        aws.s3.BucketPublicAccessBlock(f"{name}-public-access", bucket=self.bucket.id, block_public_acls=True,
                                       block_public_policy=True, ignore_public_acls=True,
                                       restrict_public_buckets=True, opts=child)
        aws.s3.BucketServerSideEncryptionConfiguration(f"{name}-encryption", bucket=self.bucket.id, rules=[{
            "apply_server_side_encryption_by_default": {"sse_algorithm": "aws:kms",
                                                        "kms_master_key_id": args.kms_key_arn},
            "bucket_key_enabled": True}], opts=child)
        aws.s3.BucketVersioning(f"{name}-versioning", bucket=self.bucket.id, versioning_configuration={
            "status": "Enabled" if spec.versioning else "Suspended"}, opts=child)
        aws.s3.BucketLifecycleConfiguration(f"{name}-lifecycle", bucket=self.bucket.id, rules=_lifecycle(spec),
                                            opts=child)
        aws.s3.BucketPolicy(f"{name}-tls-only", bucket=self.bucket.id,
                            policy=self.bucket.arn.apply(_deny_plain_http), opts=child)
        self.arn = self.bucket.arn
        self.bucket_name = self.bucket.bucket
        self.register_outputs({"arn": self.arn, "bucket": self.bucket_name})


def _lifecycle(spec: BucketSpec) -> list[dict]:
    rules: list[dict] = [
        {"id": "expire-noncurrent", "status": "Enabled", "filter": {},
         "noncurrent_version_expiration": {"noncurrent_days": spec.noncurrent_days}},
        {"id": "abort-incomplete-uploads", "status": "Enabled", "filter": {},
         "abort_incomplete_multipart_upload": {"days_after_initiation": 7}},
        # the checkpoint probe writes and deletes a test object per run: drop its old versions after a day
        {"id": "probe-objects", "status": "Enabled", "filter": {"prefix": PROBE_PREFIX},
         "noncurrent_version_expiration": {"noncurrent_days": PROBE_NONCURRENT_DAYS},
         "expiration": {"expired_object_delete_marker": True}},
    ]
    if spec.archive_after_days:
        rules.append({"id": "archive", "status": "Enabled", "filter": {},
                      "transitions": [{"days": spec.archive_after_days, "storage_class": "GLACIER_IR"}]})
    return rules


def _deny_plain_http(arn: str) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": [{
        "Sid": "DenyInsecureTransport", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
        "Resource": [arn, f"{arn}/*"], "Condition": {"Bool": {"aws:SecureTransport": "false"}}}]})


@dataclass(frozen=True)
class LustreArgs:
    spec: LustreSpec
    vpc_id: pulumi.Input[str]
    subnet_id: pulumi.Input[str]
    client_security_group_id: pulumi.Input[str]  # the cluster security group every node carries
    efa_security_group_id: pulumi.Input[str] | None  # set when the nodes use EFA: Lustre then speaks EFA too
    bucket_name: pulumi.Input[str]
    kms_key_arn: pulumi.Input[str]
    tags: dict[str, str]


def storage_capacity_gib(capacity_tib: float) -> int:
    """FSx counts Lustre sizes in GiB, 1.2 TiB being 1,200 GiB."""
    return round(capacity_tib * 1000)


class LustreFileSystem(pulumi.ComponentResource):
    def __init__(self, name: str, args: LustreArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:aws:LustreFileSystem", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        group = _lustre_security_group(name, args, child)
        groups = [group.id] + ([args.efa_security_group_id] if args.efa_security_group_id else [])
        self.file_system = aws.fsx.LustreFileSystem(
            f"{name}-fsx", deployment_type="PERSISTENT_2", storage_type="SSD",
            storage_capacity=storage_capacity_gib(args.spec.capacity_tib),
            per_unit_storage_throughput=args.spec.throughput_mbps_per_tib,
            subnet_ids=args.subnet_id, security_group_ids=groups, kms_key_id=args.kms_key_arn,
            data_compression_type="LZ4", metadata_configuration={"mode": "AUTOMATIC"},
            efa_enabled=args.efa_security_group_id is not None, file_system_type_version="2.15",
            log_configuration={"level": "WARN_ERROR"}, copy_tags_to_backups=True,
            weekly_maintenance_start_time=MAINTENANCE_START, tags=args.tags, opts=child)
        for label, path in (("datasets", args.spec.import_path), ("checkpoints", args.spec.export_path)):
            _link(f"{name}-{label}", self.file_system, args.bucket_name, path, child)
        self.dns_name = self.file_system.dns_name
        self.mount_name = self.file_system.mount_name
        self.register_outputs({"dns_name": self.dns_name, "mount_name": self.mount_name})


def _lustre_security_group(name: str, args: LustreArgs, opts: pulumi.ResourceOptions) -> aws.ec2.SecurityGroup:
    """Lustre ports open to the cluster's nodes and the file servers themselves, nobody else."""
    group = aws.ec2.SecurityGroup(f"{name}-sg", vpc_id=args.vpc_id, description="FSx for Lustre: cluster nodes only",
                                  tags=args.tags, opts=opts)
    for low, high in LUSTRE_PORTS:
        for source, peer in (("nodes", args.client_security_group_id), ("self", group.id)):
            aws.vpc.SecurityGroupIngressRule(f"{name}-lustre-{low}-{source}", security_group_id=group.id,
                                             ip_protocol="tcp", from_port=low, to_port=high,
                                             referenced_security_group_id=peer, opts=opts)
    aws.vpc.SecurityGroupEgressRule(f"{name}-egress-nodes", security_group_id=group.id, ip_protocol="tcp",
                                    from_port=988, to_port=1023,
                                    referenced_security_group_id=args.client_security_group_id, opts=opts)
    return group


def _link(name: str, fs: aws.fsx.LustreFileSystem, bucket: pulumi.Input[str], path: str,
          opts: pulumi.ResourceOptions) -> aws.fsx.DataRepositoryAssociation:
    prefix = path.strip("/")
    return aws.fsx.DataRepositoryAssociation(
        f"{name}-dra", file_system_id=fs.id, file_system_path=f"/{prefix}",
        data_repository_path=pulumi.Output.concat("s3://", bucket, f"/{prefix}/"),
        batch_import_meta_data_on_create=True,
        s3={"auto_import_policy": {"events": SYNC_EVENTS}, "auto_export_policy": {"events": SYNC_EVENTS}},
        opts=opts)
