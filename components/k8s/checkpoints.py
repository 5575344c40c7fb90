"""The checkpoint tools in the cluster (docs/addons.md "Training observability", "Checkpoint sync"): their
ServiceAccount, bound by the stack to the cluster's checkpoint identity (``components.checkpoint_tools``), and rclone,
pinned (the ``rclone`` row of upstream/pins.yaml), configured for the checkpoint bucket through
``RCLONE_CONFIG_<REMOTE>_<OPTION>`` variables with ``env_auth``: no key or secret anywhere, the cloud's workload
identity signs every request. Every option name is held to the backend's options in the rclone digest."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components import checkpoint_tools
from components.catalog import Cloud
from components.fleet import Cluster
from components.k8s import upstream
from components.k8s.model import Manifest, Obj, Rendered, as_nobody, namespace, obj
from components.k8s.scheduling import tolerations

PIN = "rclone"
WORKLOAD_IDENTITY_PIN = "azure-workload-identity"
REMOTE = "checkpoints"  # the env-defined remote's name
TOOLS_MOUNT = "/tools"  # an emptyDir the init container copies the rclone binary into
RCLONE = f"{TOOLS_MOUNT}/rclone"
# backend source file -> the backend, per cloud; the options are each backend's names (backend/*/ at the pin)
BACKEND = {Cloud.AWS: "backend/s3/s3.go", Cloud.GCP: "backend/googlecloudstorage/googlecloudstorage.go",
           Cloud.AZURE: "backend/azureblob/azureblob.go"}


@dataclass(frozen=True)
class CheckpointBucket:
    """The cluster's checkpoint bucket as the tools address it (built by ``components.k8s.inputs``)."""

    cloud: Cloud
    bucket: pulumi.Input[str]  # the S3 / GCS bucket, or the Azure container
    region: str
    account: pulumi.Input[str] | None = None  # Azure: the storage account
    client_id: pulumi.Input[str] | None = None  # Azure: the workload identity's client id


def tool() -> dict:
    return dict(upstream.digest(PIN)["tool"])


def image() -> str:
    facts = tool()
    return f"{facts['image']}:{facts['tag']}"


def _provider_option() -> str:
    return str(upstream.digest(PIN)["constants"]["fs/config.go"]["ConfigProvider"])


def options(bucket: CheckpointBucket) -> dict[str, pulumi.Input[str]]:
    """The remote's rclone options: its type (the backend's registered name) and env_auth, per cloud what the
    bucket needs (S3: the AWS provider and region; GCS: uniform bucket-level access, so no object ACLs; Azure: the
    account), and no bucket check or creation (the stack made the bucket; the identity may not create one)."""
    backend = tool()["backends"][BACKEND[bucket.cloud]]
    out: dict[str, pulumi.Input[str]] = {"type": backend["registers"], "env_auth": "true"}
    if bucket.cloud is Cloud.AWS:
        out.update({_provider_option(): "AWS", "region": bucket.region, "no_check_bucket": "true"})
    elif bucket.cloud is Cloud.GCP:
        out.update({"bucket_policy_only": "true", "no_check_bucket": "true"})
    else:
        out.update({"account": bucket.account or "", "no_check_container": "true"})
    return out


def env(bucket: CheckpointBucket, remote: str = REMOTE) -> list[Obj]:
    return [{"name": f"RCLONE_CONFIG_{remote.upper()}_{key.upper()}", "value": value}
            for key, value in options(bucket).items()]


def remote_path(bucket: CheckpointBucket, prefix: str, remote: str = REMOTE) -> pulumi.Input[str]:
    """``checkpoints:<bucket or container>/<prefix>`` (prefix without its trailing slash)."""
    parts = (f"{remote}:", bucket.bucket, "/" + prefix.strip("/"))
    if all(isinstance(p, str) for p in parts):
        return "".join(parts)  # type: ignore[arg-type]
    return pulumi.Output.concat(*parts)


def webhook_constant(name: str) -> str:
    return str(upstream.digest(WORKLOAD_IDENTITY_PIN)["constants"]["pkg/webhook/consts.go"][name])


def pod_labels(bucket: CheckpointBucket) -> dict[str, str]:
    """AKS workload identity injects its token and env only into pods that carry its label."""
    return {webhook_constant("UseWorkloadIdentityLabel"): "true"} if bucket.cloud is Cloud.AZURE else {}


def service_account(bucket: CheckpointBucket) -> Manifest:
    """The tools' ServiceAccount (the name the cloud identity trusts); on AKS annotated with the client id."""
    body: Obj = obj("v1", "ServiceAccount", checkpoint_tools.SERVICE_ACCOUNT, checkpoint_tools.NAMESPACE)
    if bucket.cloud is Cloud.AZURE:
        body["metadata"]["annotations"] = {webhook_constant("ClientIDAnnotation"): bucket.client_id}
    return Manifest(body)


def copy_resources() -> Obj:
    """A container copying checkpoints (the sync, the replication to peers, the restore): few large files, 8 at a
    time. A new dict each: a YAML dump writes a dict shared by two containers as an anchor."""
    return {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"memory": "2Gi"}}


def install_rclone() -> Obj:
    """An init container that copies the pinned image's rclone binary into the tools volume, so a stdlib Python
    script (or a shell) in another image can run it."""
    return {"name": "rclone", "image": image(), "command": ["cp", tool()["binary"], RCLONE],
            "securityContext": as_nobody(),
            "volumeMounts": [{"name": "tools", "mountPath": TOOLS_MOUNT}]}


AZURE_LUSTRE_PIN = "azurelustre-csi-driver"
OS_SKU_LABEL = "kubernetes.azure.com/os-sku-effective"


def lustre_placement(cluster: Cluster) -> Obj:
    """Where a tools pod can mount Lustre. AKS: the Lustre CSI node plugin runs only on the Ubuntu images its
    DaemonSets select (the azurelustre digest's node affinity), and the system pool is Azure Linux, so the pod goes
    to an Ubuntu node, tolerating the GPU pools' taints; elsewhere the system pool mounts it (no placement)."""
    if cluster.cloud is not Cloud.AZURE:
        return {}
    skus = sorted({sku for w in upstream.digest(AZURE_LUSTRE_PIN)["manifests"].values() for d in w.get("workloads", [])
                   for sku in d.get("nodeIn", {}).get(OS_SKU_LABEL, [])})
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": OS_SKU_LABEL, "operator": "In", "values": skus}]}]}}},
        "tolerations": tolerations(cluster.cloud, cluster.pools)}


def tools_namespace(bucket: CheckpointBucket | None) -> Rendered:
    """The tools' namespace and, with a bound bucket, their ServiceAccount (render.py adds the Lustre claim)."""
    space = namespace(checkpoint_tools.NAMESPACE, {"pod-security.kubernetes.io/enforce": "baseline"})
    return Rendered(manifests=[space, *([service_account(bucket)] if bucket is not None else [])])
