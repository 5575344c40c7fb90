"""Interconnect plugins, chosen per pool from the catalogue's fabric: the EFA device plugin on EFA pools, the GKE
NCCL plugin installer each GPUDirect fabric needs (TCPX / TCPXO / gIB) and GKE's objects for the extra GPU NICs.
(InfiniBand's network operator lives with the NVIDIA runtime in ``components.k8s.nvidia``.)"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.catalog import Fabric
from components.fleet import Cluster, Pool
from components.k8s import charts
from components.k8s.model import Manifest, Obj, Release, Rendered, obj
from components.k8s.scheduling import FABRIC_LABEL, gpu_pools, on_pools, tolerations

EFA_RESOURCE = "vpc.amazonaws.com/efa"
GKE_NETWORKING = "networking.gke.io"


@dataclass(frozen=True)
class NcclInstaller:
    """GKE's NCCL plugin installer for one GPUDirect fabric: image, and where it copies the plugin on the host.
    https://cloud.google.com/kubernetes-engine/docs/how-to/gpu-bandwidth-gpudirect-tcpx (TCPX, TCPXO) and
    https://cloud.google.com/ai-hypercomputer/docs/create/gke-ai-hypercompute-custom (gIB, RDMA)"""

    name: str
    image: str
    host_dir: str  # host directory that receives the NCCL plugin libraries
    staged_dir: str  # where the installer leaves them inside its container


NCCL_INSTALLERS: dict[Fabric, NcclInstaller] = {
    Fabric.TCPX: NcclInstaller("nccl-tcpx-installer",
                               "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/nccl-plugin-gpudirecttcpx-dev:v3.1.9",
                               "/home/kubernetes/bin/nvidia/lib64", "/var/lib/tcpx/lib64"),
    Fabric.TCPXO: NcclInstaller("nccl-tcpxo-installer",
                                "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.8-1",
                                "/home/kubernetes/bin/nvidia/lib64", "/var/lib/tcpxo/lib64"),
    Fabric.RDMA: NcclInstaller("nccl-rdma-installer",
                               "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.0.6",
                               "/home/kubernetes/bin/gib", "/var/lib/gib"),
}
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"


@dataclass(frozen=True)
class GpuNic:
    """One extra GPU NIC network of a GKE pool, as the GKE translator attaches it (NIC order)."""

    name: str  # the Kubernetes Network / GKENetworkParamSet name workloads reference
    vpc: pulumi.Input[str]
    subnet: pulumi.Input[str]
    device_mode: str  # NetDevice (gVNIC) or RDMA (RoCE)


def gpu_nic_names(cluster: Cluster, pool: Pool) -> list[tuple[str, str]]:
    """(Network name, device mode) of each extra NIC of a pool, in the order the GKE translator attaches them:
    TCPX(O) pools share ``<cluster>-gpunic-<i>``; RDMA pools get a second host NIC and one RoCE network per NIC
    of their zone."""
    if pool.fabric in (Fabric.TCPX, Fabric.TCPXO):
        return [(f"{cluster.name}-gpunic-{i + 1}", "NetDevice") for i in range(pool.machine.gpu_nics)]
    if pool.fabric is Fabric.RDMA:
        return [(f"{cluster.name}-gpunic-host2", "NetDevice"),
                *((f"{cluster.name}-gpunic-{pool.zone}-rdma-{j}", "RDMA") for j in range(pool.machine.gpu_nics))]
    return []


def efa_device_plugin(cluster: Cluster) -> Rendered:
    """The EFA device plugin, only on EFA pools: it crash-loops on nodes without EFA devices."""
    pools = gpu_pools(cluster, Fabric.EFA)
    if not pools:
        return Rendered()
    values = {"nodeSelector": {FABRIC_LABEL: Fabric.EFA.value},
              "tolerations": tolerations(cluster.cloud, pools)}
    return Rendered(releases=[Release("efa-device-plugin", charts.EFA_DEVICE_PLUGIN, "kube-system", values)])


def _installer(cluster: Cluster, fabric: Fabric, pools: list[Pool]) -> Manifest:
    spec = NCCL_INSTALLERS[fabric]
    labels = {"app.kubernetes.io/name": spec.name}
    copy = f"/scripts/container_entry.sh install --install-nccl && cp -r {spec.staged_dir}/. /host-lib/"
    pod: Obj = {
        "affinity": on_pools(pools), "tolerations": tolerations(cluster.cloud, pools),
        "priorityClassName": "system-node-critical",
        "initContainers": [{"name": "install", "image": spec.image, "command": ["/bin/sh", "-c", copy],
                            "securityContext": {"privileged": True},
                            "volumeMounts": [{"name": "var-lib", "mountPath": "/var/lib"},
                                             {"name": "host-lib", "mountPath": "/host-lib"}]}],
        "containers": [{"name": "pause", "image": PAUSE_IMAGE,
                        "resources": {"requests": {"cpu": "1m", "memory": "8Mi"}}}],
        "volumes": [{"name": "var-lib", "hostPath": {"path": "/var/lib"}},
                    {"name": "host-lib", "hostPath": {"path": spec.host_dir, "type": "DirectoryOrCreate"}}],
    }
    return Manifest(obj("apps/v1", "DaemonSet", spec.name, "kube-system", labels, spec={
        "selector": {"matchLabels": labels}, "updateStrategy": {"type": "RollingUpdate"},
        "template": {"metadata": {"labels": labels}, "spec": pod}}))


def nccl_installers(cluster: Cluster) -> Rendered:
    """One installer DaemonSet per GPUDirect fabric present, held to that fabric's pools."""
    out = Rendered()
    for fabric in NCCL_INSTALLERS:
        pools = gpu_pools(cluster, fabric)
        if pools:
            out.manifests.append(_installer(cluster, fabric, pools))
    return out


def gpu_networks(nics: list[GpuNic]) -> Rendered:
    """A GKENetworkParamSet and a Device Network per extra GPU NIC network (each name once)."""
    out, seen = Rendered(), set()
    for nic in nics:
        if nic.name in seen:
            continue
        seen.add(nic.name)
        out.manifests += [
            Manifest(obj(f"{GKE_NETWORKING}/v1", "GKENetworkParamSet", nic.name, spec={
                "vpc": nic.vpc, "vpcSubnet": nic.subnet, "deviceMode": nic.device_mode})),
            Manifest(obj(f"{GKE_NETWORKING}/v1", "Network", nic.name, spec={
                "type": "Device", "parametersRef": {"group": GKE_NETWORKING, "kind": "GKENetworkParamSet",
                                                    "name": nic.name}})),
        ]
    return out
