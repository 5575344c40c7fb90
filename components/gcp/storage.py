"""Checkpoint and dataset storage: a private, versioned GCS bucket, and a Managed Lustre instance on the cluster's
VPC (through Private Service Access) that imports from and exports to that bucket.

Managed Lustre has no standing link to a bucket: an import or export is a one-off, incremental operation
(`gcloud lustre instances import-data` / `export-data`, API `instances.importData` / `exportData`) that copies
only what is new or changed. Pulumi has no resource for an operation, so the component grants the Lustre
service agent access to the bucket and exposes the exact commands; `gpufleet` exports them as stack outputs
(`<cluster>-lustre-import`, `<cluster>-lustre-export`) to run after `pulumi up`, and again whenever the bucket
changes. See docs/clouds.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from components.checkpoint_tools import PROBE_NONCURRENT_DAYS, PROBE_PREFIX
from components.spec import BucketSpec, LustreSpec

PSA_ADDRESS, PSA_PREFIX = "10.96.0.0", 20  # Private Service Access range Managed Lustre's servers live in
LUSTRE_PORT, LEGACY_LUSTRE_PORT = 988, 6988
COLD_CLASS = "COLDLINE"  # millisecond reads, like S3 Glacier Instant Retrieval
AGENT_ROLE = "roles/storage.objectUser"  # read for imports, write for exports; on this bucket only
KEY_ROLE = "roles/cloudkms.cryptoKeyEncrypterDecrypter"
MAINTENANCE = {"weekly_maintenance_windows": {"day_of_week": "SUNDAY", "start_time": {"hours": 3}}}


@dataclass(frozen=True)
class BucketArgs:
    spec: BucketSpec
    region: str
    labels: dict[str, str]
    kms_key: pulumi.Input[str]
    key_ready: list[pulumi.Resource]  # the key's grant to the Cloud Storage service agent


class CheckpointBucket(pulumi.ComponentResource):
    def __init__(self, name: str, args: BucketArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:gcp:CheckpointBucket", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.bucket = gcp.storage.Bucket(
            f"{name}-bucket", location=args.region.upper(), storage_class="STANDARD",
            uniform_bucket_level_access=True, public_access_prevention="enforced",
            versioning={"enabled": args.spec.versioning}, lifecycle_rules=lifecycle(args.spec),
            encryption={"default_kms_key_name": args.kms_key}, labels=args.labels, force_destroy=False,
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=args.key_ready)))
        self.bucket_name = self.bucket.name
        self.register_outputs({"bucket": self.bucket_name, "url": self.bucket.url})


def lifecycle(spec: BucketSpec) -> list[dict[str, dict[str, object]]]:
    rules: list[dict[str, dict[str, object]]] = [
        {"action": {"type": "Delete"},
         "condition": {"days_since_noncurrent_time": spec.noncurrent_days, "with_state": "ARCHIVED"}},
        {"action": {"type": "AbortIncompleteMultipartUpload"}, "condition": {"age": 7}},
        # the checkpoint probe writes and deletes a test object per run: drop its old versions after a day
        {"action": {"type": "Delete"}, "condition": {"days_since_noncurrent_time": PROBE_NONCURRENT_DAYS,
                                                      "with_state": "ARCHIVED", "matches_prefixes": [PROBE_PREFIX]}},
    ]
    if spec.archive_after_days:
        rules.append({"action": {"type": "SetStorageClass", "storage_class": COLD_CLASS},
                      "condition": {"age": spec.archive_after_days, "matches_storage_classes": ["STANDARD"]}})
    return rules


@dataclass(frozen=True)
class LustreArgs:
    spec: LustreSpec
    cluster_name: str
    zone: str
    project: pulumi.Input[str]
    network_id: pulumi.Input[str]  # projects/<p>/global/networks/<name>
    node_service_account: pulumi.Input[str]  # the only clients the firewall lets Lustre reach
    bucket_name: pulumi.Input[str]
    legacy_port: bool  # GKE nodes older than 1.33.2 need the instance's GKE-support (port 6988) mode
    labels: dict[str, str]
    kms_key: pulumi.Input[str]  # the cluster's data key (same region as the instance)


def capacity_gib(capacity_tib: float) -> str:
    """Managed Lustre counts 1 TiB as 1,000 GiB (9 TiB is its 9,000 GiB minimum); the API takes a string."""
    return str(round(capacity_tib * 1000))


def filesystem_name(cluster_name: str) -> str:
    """The Lustre fsname: at most eight letters and digits."""
    return re.sub(r"[^a-z0-9]", "", cluster_name)[:8] or "lustre"


def _folder(path: str) -> str:
    return path.strip("/")


class ManagedLustre(pulumi.ComponentResource):
    def __init__(self, name: str, args: LustreArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:gcp:ManagedLustre", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        peering = _private_service_access(name, args, child)
        agent = gcp.projects.ServiceIdentity(f"{name}-agent", service="lustre.googleapis.com", project=args.project,
                                             opts=child)
        key_access = gcp.kms.CryptoKeyIAMMember(f"{name}-agent-key", crypto_key_id=args.kms_key, role=KEY_ROLE,
                                                member=agent.member, opts=child)
        self.instance_id = f"{args.cluster_name}-lustre"
        self.instance = gcp.lustre.Instance(
            f"{name}-instance", instance_id=self.instance_id, location=args.zone, network=args.network_id,
            capacity_gib=capacity_gib(args.spec.capacity_tib),
            per_unit_storage_throughput=str(args.spec.throughput_mbps_per_tib),
            filesystem=filesystem_name(args.cluster_name), gke_support_enabled=args.legacy_port or None,
            kms_key=args.kms_key, maintenance_policy=MAINTENANCE,
            description=f"Training data cache of {args.cluster_name}", labels=args.labels,
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[peering, key_access])))
        self.bucket_access = gcp.storage.BucketIAMMember(f"{name}-agent-bucket", bucket=args.bucket_name,
                                                         role=AGENT_ROLE, member=agent.member, opts=child)
        self.import_command = self._transfer("import-data", args, args.spec.import_path)
        self.export_command = self._transfer("export-data", args, args.spec.export_path)
        self.mount_point = self.instance.mount_point
        self.register_outputs({"instance": self.instance.name, "mount_point": self.mount_point,
                               "import_command": self.import_command, "export_command": self.export_command})

    def _transfer(self, verb: str, args: LustreArgs, path: str) -> pulumi.Output[str]:
        """The gcloud command for one transfer. It waits for the operation (add --async to return at once) and
        resolves only once the instance and the agent's access to the bucket exist."""
        folder = _folder(path)
        return pulumi.Output.all(self.instance.instance_id, args.project, args.bucket_name,
                                 self.bucket_access.id).apply(
            lambda a: f"gcloud lustre instances {verb} {a[0]} --project={a[1]} --location={args.zone} "
                      f"--gcs-path-uri=gs://{a[2]}/{folder}/ --lustre-path=/{folder}")


def _private_service_access(name: str, args: LustreArgs,
                            opts: pulumi.ResourceOptions) -> gcp.servicenetworking.Connection:
    """A peered range for the Lustre servers, and ingress from it to the cluster's nodes on the Lustre port."""
    cidr = f"{PSA_ADDRESS}/{PSA_PREFIX}"
    address = gcp.compute.GlobalAddress(f"{name}-psa-range", purpose="VPC_PEERING", address_type="INTERNAL",
                                        address=PSA_ADDRESS, prefix_length=PSA_PREFIX, network=args.network_id,
                                        opts=opts)
    ports = [str(LUSTRE_PORT)] + ([str(LEGACY_LUSTRE_PORT)] if args.legacy_port else [])
    gcp.compute.Firewall(f"{name}-clients", network=args.network_id, direction="INGRESS", source_ranges=[cidr],
                         allows=[{"protocol": "tcp", "ports": ports}],
                         target_service_accounts=[args.node_service_account],
                         description="Managed Lustre servers to the cluster's nodes", opts=opts)
    return gcp.servicenetworking.Connection(f"{name}-psa", network=args.network_id,
                                            service="servicenetworking.googleapis.com",
                                            reserved_peering_ranges=[address.name], opts=opts)
