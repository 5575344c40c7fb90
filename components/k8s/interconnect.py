"""Interconnect plugins, chosen per pool from the catalogue's fabric: the EFA device plugin on EFA pools, the GKE
NCCL plugin installer each GPUDirect fabric needs (TCPX / TCPXO / gIB) and GKE's objects for the extra GPU NICs.
(InfiniBand's network operator lives with the NVIDIA runtime in ``components.k8s.nvidia``.)"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi

from components.catalog import Fabric
from components.fleet import Cluster, Pool
from components.k8s import charts, upstream
from components.k8s.model import Manifest, Obj, Release, Rendered, obj
from components.k8s.nvidia import RDMA_RESOURCE
from components.k8s.scheduling import FABRIC_LABEL, gpu_pools, on_pools, tolerations

EFA_RESOURCE = "vpc.amazonaws.com/efa"
GKE_NETWORKING = "networking.gke.io"


# GKE GPUDirect: each fabric's NCCL plugin installer DaemonSet, and the NRI device injector TCPXO's RxDM sidecar
# needs, rendered from the upstream manifests' digest (pin "gke-gpudirect", GoogleCloudPlatform/
# container-engine-accelerators at one commit): steps, privileges, host paths and images exactly as upstream
# ships them; only the placement (our pools' affinity and tolerations) and the labels are ours.
GPUDIRECT_PIN = "gke-gpudirect"
INSTALLERS: dict[Fabric, str] = {Fabric.TCPX: "tcpx-installer", Fabric.TCPXO: "tcpxo-installer",
                                 Fabric.RDMA: "rdma-installer"}
NRI_INJECTOR = "nri-device-injector"
NRI_FABRICS = (Fabric.TCPXO,)  # the tcpxo-daemon sidecar gets its GPU devices through the injector


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


def fabric_limits(pool: Pool) -> dict[str, str]:
    """The fabric devices a pod that uses a whole node of this pool asks for (beside its GPUs)."""
    if pool.fabric is Fabric.EFA:
        return {EFA_RESOURCE: str(pool.machine.efa_interfaces)}
    if pool.fabric is Fabric.INFINIBAND:
        return {f"rdma/{RDMA_RESOURCE}": "1"}
    return {}


def nic_annotations(cluster: Cluster, pool: Pool) -> dict[str, str]:
    """GKE multi-networking: the annotations that attach the pool's GPU NIC networks to a pod (none elsewhere)."""
    nics = gpu_nic_names(cluster, pool)
    if not nics:
        return {}
    interfaces = [{"interfaceName": "eth0", "network": "default"},
                  *({"interfaceName": f"eth{i + 1}", "network": n} for i, (n, _) in enumerate(nics))]
    return {"networking.gke.io/default-interface": "eth0", "networking.gke.io/interfaces": json.dumps(interfaces)}


def efa_device_plugin(cluster: Cluster) -> Rendered:
    """The EFA device plugin, only on EFA pools: it crash-loops on nodes without EFA devices."""
    pools = gpu_pools(cluster, Fabric.EFA)
    if not pools:
        return Rendered()
    values = {"nodeSelector": {FABRIC_LABEL: Fabric.EFA.value},
              "tolerations": tolerations(cluster.cloud, pools)}
    return Rendered(releases=[Release("efa-device-plugin", charts.EFA_DEVICE_PLUGIN, "kube-system", values)])


def container_from_facts(facts: Obj) -> Obj:
    """A container from its digested facts (derive.workload_facts keeps exactly these fields)."""
    out: Obj = {"name": facts["name"], "image": facts["image"]}
    out.update({k: facts[k] for k in ("command", "args", "resources") if facts[k]})
    security: Obj = {}
    if facts["privileged"]:
        security["privileged"] = True
    if facts["capabilities"]:
        security["capabilities"] = {"add": facts["capabilities"]}
    if security:
        out["securityContext"] = security
    if facts["env"]:
        out["env"] = [{"name": k, "value": v} for k, v in facts["env"].items()]
    if facts["mounts"]:
        out["volumeMounts"] = [{"name": k, "mountPath": v} for k, v in facts["mounts"].items()]
    return out


def upstream_workload(key: str) -> Obj:
    """The one workload (DaemonSet) of a gke-gpudirect manifest, as digested."""
    [workload] = upstream.manifest(GPUDIRECT_PIN, key)["workloads"]
    return workload


def upstream_daemonset(cluster: Cluster, key: str, pools: list[Pool]) -> Manifest:
    """Upstream's DaemonSet (steps, privileges, host paths, images), held to these pools."""
    facts = upstream_workload(key)
    labels = {"app.kubernetes.io/name": facts["name"]}
    pod: Obj = {
        "affinity": on_pools(pools), "tolerations": tolerations(cluster.cloud, pools),
        "priorityClassName": facts["priorityClassName"],
        "hostNetwork": facts["hostNetwork"], "hostPID": facts["hostPID"],
        "initContainers": [container_from_facts(c) for c in facts["initContainers"]],
        "containers": [container_from_facts(c) for c in facts["containers"]],
        "volumes": [{"name": name, **volume} for name, volume in facts["volumes"].items()],
    }
    if not pod["initContainers"]:
        del pod["initContainers"]
    return Manifest(obj("apps/v1", "DaemonSet", facts["name"], facts["namespace"], labels, spec={
        "selector": {"matchLabels": labels}, "updateStrategy": {"type": "RollingUpdate"},
        "template": {"metadata": {"labels": labels}, "spec": pod}}))


def nccl_installers(cluster: Cluster) -> Rendered:
    """One installer DaemonSet per GPUDirect fabric present, held to that fabric's pools, and the NRI device
    injector on the pools whose fabric needs it."""
    out = Rendered()
    for fabric, key in INSTALLERS.items():
        pools = gpu_pools(cluster, fabric)
        if pools:
            out.manifests.append(upstream_daemonset(cluster, key, pools))
    nri = [p for f in NRI_FABRICS for p in gpu_pools(cluster, f)]
    if nri:
        out.manifests.append(upstream_daemonset(cluster, NRI_INJECTOR, nri))
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
