"""Storage in the cluster: the Lustre CSI driver where the cloud does not manage one, and in every team namespace a
ReadWriteMany volume bound to the stack's Lustre file system (datasets in, checkpoints out)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi

from components.catalog import Cloud
from components.fleet import Cluster
from components.k8s import charts, upstream
from components.k8s.model import Chart, Manifest, ManifestFile, Release, Rendered, obj

STORAGE_CLASS = "lustre"
CLAIM = "lustre"
AZURE_LUSTRE_PIN = "azurelustre-csi-driver"
# Lustre CSI drivers: (driver name, chart to install; None when the cloud manages the driver or, on Azure, when
# its maintainers ship manifests instead of a chart: see azure_lustre_files)
CSI: dict[Cloud, tuple[str, Chart | None]] = {
    Cloud.AWS: ("fsx.csi.aws.com", charts.FSX_CSI),
    Cloud.GCP: ("lustre.csi.storage.gke.io", None),  # GKE add-on, enabled by components/gcp/cluster.py
    Cloud.AZURE: ("azurelustre.csi.azure.com", None),
}


def azure_lustre_files() -> list[ManifestFile]:
    """The Azure Lustre CSI driver as its maintainers install it: deploy/install-driver.sh applies these files in
    this order (the pin's digest records that order; its charts/README.md says Helm is unsupported)."""
    row = upstream.pin(AZURE_LUSTRE_PIN)
    names = {path: key for key, path in row["manifests"].items()}
    applies = upstream.manifest(AZURE_LUSTRE_PIN, "script")["applies"]
    out: list[ManifestFile] = []
    for file in applies:
        key = names[f"deploy/{file}"]
        out.append(ManifestFile(f"azurelustre-{key}", row["raw"] + f"deploy/{file}",
                                tuple(f.name for f in out[-1:])))
    return out


@dataclass(frozen=True)
class LustreVolume:
    """The stack's Lustre file system as its CSI driver addresses it (built by ``components.k8s.inputs``)."""

    volume_handle: pulumi.Input[str]
    attributes: dict[str, pulumi.Input[str]]
    capacity_gib: int
    mount_options: list[str] = field(default_factory=list)


def csi_driver(cloud: Cloud) -> str:
    return CSI[cloud][0]


def lustre(cluster: Cluster, volume: LustreVolume | None, namespaces: list[str]) -> Rendered:
    """The CSI driver release (if the cloud needs one) and a static StorageClass, then one PV + PVC per namespace."""
    if volume is None:
        return Rendered()
    driver, chart = CSI[cluster.cloud]
    out = Rendered()
    if chart is not None:
        out.releases.append(Release("lustre-csi", chart, "kube-system", {"node": {"tolerateAllTaints": True}}))
    if cluster.cloud is Cloud.AZURE:
        out.files += azure_lustre_files()
    out.manifests.append(Manifest(obj("storage.k8s.io/v1", "StorageClass", STORAGE_CLASS,
                                      provisioner="kubernetes.io/no-provisioner", reclaimPolicy="Retain",
                                      volumeBindingMode="Immediate")))
    size = f"{volume.capacity_gib}Gi"
    for ns in namespaces:
        pv = f"{cluster.name}-lustre-{ns}"
        out.manifests += [
            Manifest(obj("v1", "PersistentVolume", pv, spec={
                "capacity": {"storage": size}, "accessModes": ["ReadWriteMany"],
                "persistentVolumeReclaimPolicy": "Retain", "storageClassName": STORAGE_CLASS,
                "mountOptions": volume.mount_options,
                "claimRef": {"namespace": ns, "name": CLAIM},
                "csi": {"driver": driver, "volumeHandle": volume.volume_handle,
                        "volumeAttributes": volume.attributes}}),
                     after=tuple(r.name for r in out.releases) + tuple(f.name for f in out.files)),
            Manifest(obj("v1", "PersistentVolumeClaim", CLAIM, ns, spec={
                "accessModes": ["ReadWriteMany"], "storageClassName": STORAGE_CLASS, "volumeName": pv,
                "resources": {"requests": {"storage": size}}})),
        ]
    return out
