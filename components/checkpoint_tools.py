"""The checkpoint tools' identity, in neutral form (docs/addons.md "Training observability", "Checkpoint sync").

One Kubernetes ServiceAccount per cluster runs the tools that touch the checkpoint bucket (the bucket the Lustre file
system is linked to): the checkpoint probe and, on GCP and Azure, the scheduled sync. Each cloud binds it to an
identity that can only read and write objects in that one bucket: EKS Pod Identity (``components.aws.checkpoints``),
GKE Workload Identity (``components.gcp.checkpoints``), AKS workload identity (``components.azure.checkpoints``).

The probe's test objects live under PROBE_PREFIX, apart from the checkpoints; every cloud's lifecycle expires their
old versions after PROBE_NONCURRENT_DAYS so a versioned bucket does not keep a probe object per run."""

from __future__ import annotations

from components.spec import BucketSpec, ClusterSpec

NAMESPACE = "gpufleet-probe"
SERVICE_ACCOUNT = "checkpoint-tools"
PROBE_PREFIX = ".gpufleet-probe/"
PROBE_NONCURRENT_DAYS = 1


def subject() -> str:
    """The ServiceAccount as Kubernetes names it in its tokens (the federated credential's subject)."""
    return f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}"


def checkpoint_bucket(spec: ClusterSpec) -> BucketSpec | None:
    """The bucket the Lustre file system exports checkpoints to (None without Lustre: no checkpoint tools)."""
    lustre = spec.storage.lustre
    if lustre is None:
        return None
    return next(b for b in spec.storage.buckets if b.name == lustre.bucket)


def prefixes(spec: ClusterSpec) -> list[str]:
    """The object prefixes the tools write: the export (checkpoints) path and the probe's."""
    lustre = spec.storage.lustre
    return [lustre.export_path.strip("/") + "/", PROBE_PREFIX] if lustre else []
