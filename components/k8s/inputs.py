"""What the add-on layer needs from a cluster component, in neutral form: the kubeconfig, the Lustre volume as
its CSI driver addresses it, and (GKE) the GPU NIC networks.

``addon_inputs`` reads them off the translator's component. Translators expose ``kubeconfig`` today; ``lustre``
and ``gpu_networks`` are read where present (AWS / GCP / Azure storage components), without importing any cloud
SDK. The clean interface (proposed): each translator's component exposes ``addon_inputs: AddonInputs`` itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pulumi

from components.catalog import Cloud
from components.fleet import Cluster
from components.k8s.checkpoints import CheckpointBucket
from components.k8s.fleetqueue import ManagerSubject, WorkerLink
from components.k8s.interconnect import GpuNic, gpu_nic_names
from components.k8s.replicate import PeerLink
from components.k8s.storage import LustreVolume

AZURE_LUSTRE_FS = "lustrefs"  # every Azure Managed Lustre file system is named lustrefs


@dataclass(frozen=True)
class AddonInputs:
    kubeconfig: pulumi.Input[str]
    lustre: LustreVolume | None = None
    gpu_nics: tuple[GpuNic, ...] = ()
    checkpoints: CheckpointBucket | None = None  # the bucket Lustre exports to, with the tools' identity bound
    workers: tuple[WorkerLink, ...] = ()  # a MultiKueue manager: its workers, as their stacks exported them
    manager: ManagerSubject | None = None  # a MultiKueue worker: the manager's identity here
    peers: tuple[PeerLink, ...] = ()  # a MultiKueue worker: its fleet queue's other workers, where checkpoints go


def _capacity_gib(cluster: Cluster) -> int:
    lustre = cluster.spec.storage.lustre
    return math.ceil(lustre.capacity_tib * 1024) if lustre else 0


def _aws_lustre(cluster: Cluster, fs: Any) -> LustreVolume:
    return LustreVolume(volume_handle=fs.file_system.id,
                        attributes={"dnsname": fs.dns_name, "mountname": fs.mount_name},
                        capacity_gib=_capacity_gib(cluster), mount_options=["flock"])


def _gcp_lustre(cluster: Cluster, fs: Any) -> LustreVolume:
    # mount_point is "<ip>@tcp:/<filesystem>"; the handle is <project>/<zone>/<instance>, from the instance's id
    # projects/<project>/locations/<zone>/instances/<instance>
    return LustreVolume(
        volume_handle=fs.instance.id.apply(lambda i: "/".join(i.split("/")[1::2])),
        attributes={"ip": fs.mount_point.apply(lambda m: m.split("@")[0]),
                    "filesystem": fs.mount_point.apply(lambda m: m.rsplit("/", 1)[-1])},
        capacity_gib=_capacity_gib(cluster))


def _azure_lustre(cluster: Cluster, fs: Any) -> LustreVolume:
    return LustreVolume(volume_handle=f"{cluster.name}-lustre",
                        attributes={"mgs-ip-address": fs.mgs_address, "fs-name": AZURE_LUSTRE_FS},
                        capacity_gib=_capacity_gib(cluster), mount_options=["noatime", "flock"])


_LUSTRE = {Cloud.AWS: _aws_lustre, Cloud.GCP: _gcp_lustre, Cloud.AZURE: _azure_lustre}


def _gpu_nics(cluster: Cluster, networks: Any) -> tuple[GpuNic, ...]:
    """Pair each pool's NIC names with the networks the GKE translator attached, in NIC order."""
    if networks is None:
        return ()
    return tuple(GpuNic(name, attach["network"], attach["subnetwork"], mode)
                 for pool in cluster.pools
                 for (name, mode), attach in zip(gpu_nic_names(cluster, pool), networks.attachments(pool),
                                                 strict=False))


def _checkpoints(cluster: Cluster, built: Any) -> CheckpointBucket | None:
    """The Lustre-linked bucket, once the translator bound the checkpoint tools' identity to it (AWS / Azure:
    ``checkpoint_identity``, GCP: ``checkpoint_access``)."""
    lustre = cluster.spec.storage.lustre
    identity = getattr(built, "checkpoint_identity", None) or getattr(built, "checkpoint_access", None)
    if lustre is None or identity is None:
        return None
    bucket = built.buckets[lustre.bucket]
    if cluster.cloud is Cloud.AZURE:
        return CheckpointBucket(Cloud.AZURE, bucket.container.name, cluster.spec.region, account=bucket.account.name,
                                client_id=identity.client_id)
    return CheckpointBucket(cluster.cloud, bucket.bucket_name, cluster.spec.region)


def addon_inputs(cluster: Cluster, built: pulumi.ComponentResource, workers: tuple[WorkerLink, ...] = (),
                 peers: tuple[PeerLink, ...] = ()) -> AddonInputs:
    """The add-on inputs of a cluster built by its cloud's translator (``workers``: a MultiKueue manager's, read
    from their stacks by ``components.fleetlinks``)."""
    fs = getattr(built, "lustre", None)
    return AddonInputs(kubeconfig=built.kubeconfig,  # type: ignore[attr-defined]
                       lustre=_LUSTRE[cluster.cloud](cluster, fs) if fs is not None else None,
                       gpu_nics=_gpu_nics(cluster, getattr(built, "gpu_networks", None)),
                       checkpoints=_checkpoints(cluster, built),
                       workers=workers, peers=peers,
                       manager=getattr(built, "multikueue_manager", None))
