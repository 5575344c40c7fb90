"""The NVIDIA runtime: the GPU operator (driver only where nobody else installs it, DCGM exporter with our metric
set, the standalone DCGM host engine with self-healing, MIG off), and on InfiniBand clusters the NVIDIA network
operator with its NicClusterPolicy."""

from __future__ import annotations

import json
from pathlib import Path

from components.catalog import Cloud, Fabric
from components.fleet import Cluster
from components.k8s import charts, upstream
from components.k8s.model import Manifest, Obj, Release, Rendered, config_map, namespace, obj
from components.k8s.scheduling import gpu_pools, on_pools, tolerations

NAMESPACE = "gpu-operator"
NETWORK_NAMESPACE = "nvidia-network-operator"
DCGM_METRICS = Path(__file__).parent / "data" / "dcgm-metrics.csv"
DCGM_CONFIG = "gpufleet-dcgm-metrics"
# The shared RDMA resource as the network operator's own full example (digest `values`) configures it: pods ask
# for rdma/rdma_shared_device_a, and up to 63 pods may share a node's InfiniBand devices at once.
RDMA_RESOURCE = "rdma_shared_device_a"
RDMA_HCA_MAX = 63
# GKE runs its own NVIDIA device plugin on every GPU node; a second one would double-advertise the GPUs.
CLOUD_DEVICE_PLUGIN = frozenset({Cloud.GCP})
GKE_DRIVER_DIR = "/home/kubernetes/bin/nvidia"  # where GKE's installer puts the driver on COS
RELEASE = "hack/release.yaml"  # the component versions a network operator release is tested with
# The release file names NVIDIA's staging registry for the driver (a GA tag rewrites only the operator's own
# images: .github/workflows/ci.yaml); the public images are in the NGC catalog
# (https://catalog.ngc.nvidia.com/orgs/nvidia/teams/mellanox/containers/doca-driver/tags), which every release's
# NicClusterPolicy example in the docs uses.
PUBLIC_DRIVER_REPOSITORY = "nvcr.io/nvidia/mellanox"
# Azure's accelerated-networking NIC is a Mellanox (15b3) Ethernet VF: only InfiniBand links are shared. The plugin
# compares this with netlink's link encapsulation name, "infiniband" for ARPHRD_INFINIBAND (vishvananda/netlink
# v1.3.0 nl/nl_linux.go encapTypeToString, commit 6f57139, the version the plugin's go.mod requires).
IB_LINK_TYPE = "infiniband"


def dcgm_image() -> str:
    """The DCGM image the pinned operator runs its standalone host engine from (the chart's ``dcgm.*`` defaults):
    ``dcgmi`` and ``nv-hostengine`` at the DCGM version the rest of the cluster talks to."""
    d = upstream.digest("gpu-operator")["chart"]["defaults"]
    return f"{d['dcgm.repository']}/{d['dcgm.image']}:{d['dcgm.version']}"


def operator_installs_driver(cluster: Cluster) -> bool:
    """The one driver owner rule: the operator installs it only when asked; the translators then leave it out
    of the node image (and validation refuses 'operator' where a cloud's image always carries it)."""
    return cluster.spec.addons.gpu_driver == "operator"


def infiniband(cluster: Cluster) -> bool:
    return bool(gpu_pools(cluster, Fabric.INFINIBAND))


def gpu_operator_values(cluster: Cluster, monitoring: bool) -> Obj:
    driver = operator_installs_driver(cluster)
    values: Obj = {
        "driver": {"enabled": driver, "rdma": {"enabled": driver and infiniband(cluster), "useHostMofed": False}},
        "toolkit": {"enabled": driver},
        "devicePlugin": {"enabled": cluster.cloud not in CLOUD_DEVICE_PLUGIN},
        "mig": {"strategy": "none"},
        "migManager": {"enabled": False},
        # the standalone DCGM host engine (nvidia-dcgm, port 5555 behind a node-local Service; the exporter is then
        # pointed at it instead of running its own): the DCGM health watcher needs an engine it can reach
        # (components/k8s/dcgmhealth.py), so it runs wherever self-healing does
        "dcgm": {"enabled": cluster.spec.addons.self_healing.enabled},
        "dcgmExporter": {
            "enabled": True,
            "config": {"name": DCGM_CONFIG},
            "env": [{"name": "DCGM_EXPORTER_COLLECTORS", "value": "/etc/dcgm-exporter/dcgm-metrics.csv"}],
            "serviceMonitor": {"enabled": monitoring, "interval": "15s", "honorLabels": True},
        },
        # Operator daemonsets (driver, toolkit, device plugin, DCGM) go only where NFD finds an NVIDIA GPU; these
        # tolerations let them past the GPU pools' taints, and NFD's worker is held to the GPU pools.
        "daemonsets": {"tolerations": tolerations(cluster.cloud, cluster.pools),
                       "priorityClassName": "system-node-critical"},
        "node-feature-discovery": {"worker": {"tolerations": tolerations(cluster.cloud, cluster.pools),
                                              "affinity": on_pools(list(cluster.pools))}},
    }
    if cluster.cloud is Cloud.GCP and not driver:
        values["hostPaths"] = {"driverInstallDir": GKE_DRIVER_DIR}
        values["toolkit"] = {"enabled": True, "installDir": GKE_DRIVER_DIR}
        values["cdi"] = {"enabled": True, "default": True}
    return values


def gpu_operator(cluster: Cluster, monitoring: bool, after: tuple[str, ...]) -> Rendered:
    """The operator release, its namespace and the DCGM metric set (a ConfigMap the exporter reads)."""
    if not cluster.pools:
        return Rendered()
    return Rendered(
        releases=[Release("gpu-operator", charts.GPU_OPERATOR, NAMESPACE, gpu_operator_values(cluster, monitoring),
                          after=after)],
        manifests=[namespace(NAMESPACE, {"pod-security.kubernetes.io/enforce": "privileged"}),
                   config_map(DCGM_CONFIG, NAMESPACE, {"dcgm-metrics.csv": DCGM_METRICS.read_text()})])


def dcgm_metric_names() -> list[str]:
    """The metrics the DCGM exporter publishes with our metric set (field name == metric name)."""
    return [line.split(",")[0].strip() for line in DCGM_METRICS.read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def release_image(component: str) -> dict[str, str]:
    """{image, repository, version} of a component as the pinned network operator release names it."""
    image = dict(upstream.digest("network-operator")["values"][RELEASE][component])
    return {**image, "repository": PUBLIC_DRIVER_REPOSITORY} if component == "Mofed" else image


def rdma_config() -> str:
    """One shared RDMA resource over every Mellanox (vendor 15b3) InfiniBand device of the node."""
    return json.dumps({"configList": [{"resourceName": RDMA_RESOURCE, "rdmaHcaMax": RDMA_HCA_MAX,
                                       "selectors": {"vendors": ["15b3"], "linkTypes": [IB_LINK_TYPE]}}]})


def network_operator(cluster: Cluster) -> Rendered:
    """InfiniBand clusters only: the network operator (using the GPU operator's NFD) and a NicClusterPolicy that
    loads the DOCA/MOFED driver and shares each HCA as ``rdma/rdma_shared_device_a``, on the IB pools only."""
    pools = gpu_pools(cluster, Fabric.INFINIBAND)
    if not pools:
        return Rendered()
    policy = obj("mellanox.com/v1alpha1", "NicClusterPolicy", "nic-cluster-policy", spec={
        "ofedDriver": {**release_image("Mofed"), "upgradePolicy": {
            "autoUpgrade": True, "maxParallelUpgrades": 1,
            "drain": {"enable": True, "force": True, "timeoutSeconds": 300, "deleteEmptyDir": True}}},
        "rdmaSharedDevicePlugin": {**release_image("RdmaSharedDevicePlugin"), "config": rdma_config()},
        "nodeAffinity": on_pools(pools)["nodeAffinity"],
        "tolerations": tolerations(cluster.cloud, pools),
    })
    # the chart no longer deploys a NicClusterPolicy (upstream 8fc96f20 "Remove Helm deployment of
    # NICClusterPolicy"): this module applies its own, so only NFD is switched off
    values = {"nfd": {"enabled": False}}
    return Rendered(
        releases=[Release("network-operator", charts.NETWORK_OPERATOR, NETWORK_NAMESPACE, values,
                          after=("gpu-operator",))],
        manifests=[namespace(NETWORK_NAMESPACE, {"pod-security.kubernetes.io/enforce": "privileged"}),
                   Manifest(policy, after=("network-operator",))])
