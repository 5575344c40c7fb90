"""GKE GPUDirect installers and pods match the upstream manifests they claim to be (GoogleCloudPlatform/
container-engine-accelerators at the pinned commit, digested): init steps, the privileged pre-installation,
host paths, images; the NRI device injector on TCPXO pools; the tcpxo-daemon (RxDM) sidecar and its device
annotation in the TCPXO health gate; the tcpx-daemon, plugin path, socket mount and NCCL settings in TCPX (A3 High)
gates and training pods; gIB's host directories, LD_LIBRARY_PATH and set_nccl_env.sh in the RDMA (A3 Ultra,
A4) health gate and training pods. Also: the Azure Lustre CSI driver is applied from its maintainers' manifests,
and add-on tolerations cover every effect a pool taint may have."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from components.catalog import Fabric
from components.k8s import upstream
from components.k8s.healthgate import templates
from components.k8s.training import container, wiring
from components.k8s.upstream.derive_manifests import workload_facts
from components.spec import KueueTeam
from gpufleet.jobs.examples import Target, jobset, rayjob
from tests.components.k8s.upstream_cases import EFFECTS, TAINTS, rendered

RENDERED = rendered()
PIN = "gke-gpudirect"
INSTALLER = {"tcpx": "tcpx-installer", "tcpxo": "tcpxo-installer", "rdma": "rdma-installer"}
OURS = ("accelerators", "nodeIn", "nodeSelector", "nodeSelectorTerms", "tolerations")  # placement is ours (our
# pools' affinity and taints, checked by tests/scheduling); everything else is upstream's


def daemonsets(case: str) -> dict[str, dict[str, Any]]:
    _, out = RENDERED[case]
    return {m.name: m.obj for m in out.manifests if m.kind == "DaemonSet"}


def gke_cases() -> list[str]:
    return sorted(c for c, (cluster, _) in RENDERED.items() if cluster.cloud.value == "gcp")


def upstream_ds(key: str) -> dict[str, Any]:
    [facts] = upstream.manifest(PIN, key)["workloads"]
    return facts


def strip(facts: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in facts.items() if k not in OURS}


@pytest.mark.parametrize("case", gke_cases())
def test_installers_match_upstream(case: str) -> None:
    cluster, _ = RENDERED[case]
    fabrics = {p.fabric.value for p in cluster.pools} & set(INSTALLER)
    found = daemonsets(case)
    for fabric in fabrics:
        facts = upstream_ds(INSTALLER[fabric])
        ours = found[facts["name"]]
        assert strip(workload_facts(ours)) == strip(facts), fabric
        for pool in (p for p in cluster.pools if p.fabric.value == fabric):  # upstream targets this accelerator
            assert pool.machine.accelerator_type in facts["accelerators"], (fabric, pool.machine.name)
    assert {n for n in found if n.startswith("nccl-")} == {upstream_ds(INSTALLER[f])["name"] for f in fabrics}


def test_tcpxo_installer_runs_upstreams_privileged_pre_installation() -> None:
    ours = workload_facts(daemonsets("gcp-a3-mega/train")["nccl-tcpxo-installer"])
    first = ours["initContainers"][0]
    assert first["name"] == "pre-installation" and first["privileged"]
    assert first["command"][:4] == ["nsenter", "-at", "1", "--"]  # runs in the host's namespaces
    assert ours["hostPID"] and ours["hostNetwork"]


def test_rdma_installer_places_nccl_in_the_driver_library_path() -> None:
    ours = workload_facts(daemonsets("gcp-a4/train")["nccl-rdma-installer"])
    # upstream gpudirect-rdma/nccl-rdma-installer.yaml: host /home/kubernetes/bin/nvidia/lib64 receives the
    # libraries; the image's own /var/lib/gib staging is not shadowed by a host mount
    assert ours["hostPaths"]["library-dir-host"]["path"] == "/home/kubernetes/bin/nvidia/lib64"
    [installer] = ours["initContainers"]
    assert "/var/lib" not in installer["mounts"].values()
    assert "cp -r /var/lib/gib/lib64/. /usr/local/home/kubernetes/bin/nvidia/lib64" in installer["args"][0]


@pytest.mark.parametrize("case", gke_cases())
def test_nri_device_injector_on_tcpxo_pools(case: str) -> None:
    cluster, _ = RENDERED[case]
    facts = upstream_ds("nri-device-injector")
    tcpxo = [p for p in cluster.pools if p.fabric is Fabric.TCPXO]
    found = daemonsets(case).get(facts["name"])
    assert (found is not None) == bool(tcpxo)
    if found:
        assert strip(workload_facts(found)) == strip(facts)
        values = found["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"]
        assert values == sorted(p.name for p in tcpxo)
        assert {p.machine.accelerator_type for p in tcpxo} <= set(facts["accelerators"])


def test_tcpxo_health_gate_carries_the_rxdm_sidecar_and_annotations() -> None:
    _, out = RENDERED["gcp-a3-mega/train"]
    [job] = [d for d in templates(out.manifests) if d["kind"] == "Job"]
    template = job["spec"]["template"]
    pod = template["spec"]
    upstream_pod = next(w for w in upstream.manifest(PIN, "tcpxo-workload")["workloads"] if w["kind"] == "Pod")
    [daemon] = [c for c in upstream_pod["containers"] if c["name"] == "tcpxo-daemon"]
    [sidecar] = [c for c in pod["initContainers"] if c["name"] == "tcpxo-daemon"]
    assert sidecar["restartPolicy"] == "Always"  # native sidecar: the Job completes when the gate does
    assert sidecar["image"] == daemon["image"] and sidecar["args"] == daemon["args"]
    assert sorted(sidecar["securityContext"]["capabilities"]["add"]) == daemon["capabilities"]
    key = "devices.gke.io/container.tcpxo-daemon"
    assert template["metadata"]["annotations"][key] == upstream_pod["annotations"][key]
    assert "/dev/nvidia7" in template["metadata"]["annotations"][key]
    [main] = pod["containers"]
    env = {e["name"]: e["value"] for e in main["env"]}
    assert env["NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY"] == "/dev/aperture_devices"
    assert env["LD_LIBRARY_PATH"] == env["NCCL_LIB_DIR"] == "/usr/local/nvidia/lib64"
    assert "nccl-env-profile.sh" in main["command"][-1]
    mounts = {v["name"]: v for v in pod["volumes"]}
    for m in main["volumeMounts"] + sidecar["volumeMounts"]:
        assert m["name"] in mounts, m
    assert mounts["aperture-devices"]["hostPath"]["path"] == "/dev/aperture_devices"
    assert template["metadata"]["annotations"]["networking.gke.io/interfaces"].startswith('[{"interfaceName"')


def _tcpx_pod_parts(template: dict[str, Any]) -> None:
    """A pod on an A3 High pool carries upstream's TCPX parts (gpudirect-tcpx/nccl-test-latest.yaml and
    nccl-config.yaml at the pinned commit): the tcpx-daemon as a native sidecar with its device annotation and mounts,
    and in the NCCL container the host library directory on LD_LIBRARY_PATH (NCCL and the TCPX plugin, from the
    installer), the daemon's socket directory where upstream mounts it (/tmp) and the NCCL settings its script sets."""
    pod = template["spec"]
    upstream_pod = next(w for w in upstream.manifest(PIN, "tcpx-workload")["workloads"] if w["kind"] == "Pod")
    [daemon] = [c for c in upstream_pod["containers"] if c["name"] == "tcpx-daemon"]
    [sidecar] = [c for c in pod["initContainers"] if c["name"] == "tcpx-daemon"]
    assert sidecar["restartPolicy"] == "Always"
    assert sidecar["image"] == daemon["image"] and sidecar["command"] == daemon["command"]
    assert "--uds_path" in sidecar["command"] and "/run/tcpx" in sidecar["command"]
    key = "devices.gke.io/container.tcpx-daemon"
    assert template["metadata"]["annotations"][key] == upstream_pod["annotations"][key]
    main = next(c for c in pod["containers"] if "nvidia.com/gpu" in c.get("resources", {}).get("limits", {}))
    env = {e["name"]: e["value"] for e in main["env"]}
    assert env["LD_LIBRARY_PATH"] == "/usr/local/nvidia/lib64"
    assert env["NCCL_GPUDIRECTTCPX_SOCKET_IFNAME"] == "eth1,eth2,eth3,eth4"  # the 4 GPU NICs of a3-highgpu-8g
    assert env["NCCL_GPUDIRECTTCPX_CTRL_DEV"] == "eth0"
    mounts = {m["mountPath"]: m["name"] for m in main["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes[mounts["/tmp"]]["hostPath"]["path"] == "/run/tcpx"  # where the daemon's socket is
    assert volumes[mounts["/usr/local/nvidia/lib64"]]["hostPath"]["path"] == "/home/kubernetes/bin/nvidia/lib64"
    for m in main["volumeMounts"] + sidecar["volumeMounts"]:
        assert m["name"] in volumes, m
    interfaces = json.loads(template["metadata"]["annotations"]["networking.gke.io/interfaces"])
    assert len(interfaces) == 1 + 4


def test_tcpx_health_gate_carries_the_tcpx_parts() -> None:
    _, out = RENDERED["gcp-a3-high/train"]
    [job] = [d for d in templates(out.manifests) if d["kind"] == "Job"]
    _tcpx_pod_parts(job["spec"]["template"])


def test_tcpx_training_jobs_carry_the_tcpx_parts() -> None:
    cluster, _ = RENDERED["gcp-a3-high/train"]
    [pool] = cluster.pools
    target = Target(cluster, pool, KueueTeam(name="research", gpus={pool.machine.gpu: 16}), nodes=2)
    _tcpx_pod_parts(jobset(target)["spec"]["replicatedJobs"][0]["template"]["spec"]["template"])
    workers = rayjob(target)["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]
    _tcpx_pod_parts(workers)


# Upstream's gIB test pod (gpudirect-rdma/nccl-test.yaml at the pinned commit) runs `source <this>` before NCCL, and
# mounts the installer's gib directory (nccl-rdma-installer.yaml copies /var/lib/gib there) at /usr/local/gib.
GIB_SCRIPT = "/usr/local/gib/scripts/set_nccl_env.sh"
GIB_MOUNT = "/usr/local/gib"


def gib_pod() -> dict[str, Any]:
    return next(w for w in upstream.manifest(PIN, "rdma-workload")["workloads"] if w["kind"] == "Pod")


def assert_gib_wiring(pod: dict[str, Any], main: dict[str, Any], where: str) -> None:
    """The pod mounts each host directory upstream's gIB test pod mounts, where it mounts it, and the NCCL container
    has its env; the gib directory is the one the installer fills."""
    upstream_pod = gib_pod()
    [test] = upstream_pod["containers"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounted = {m["mountPath"]: volumes[m["name"]] for m in main["volumeMounts"]}
    host_mounts = {path: name for name, path in test["mounts"].items() if name in upstream_pod["hostPaths"]}
    assert GIB_MOUNT in host_mounts, "the digest lost upstream's gib mount"
    for path, name in host_mounts.items():
        assert mounted.get(path, {}).get("hostPath") == upstream_pod["volumes"][name]["hostPath"], (where, path)
    installer_gib = upstream_ds("rdma-installer")["hostPaths"]["gib"]["path"]
    assert mounted[GIB_MOUNT]["hostPath"]["path"] == installer_gib, where
    env = {e["name"]: e["value"] for e in main["env"]}
    assert test["env"] and all(env.get(k) == v for k, v in test["env"].items()), (where, env)


def sources_gib_env_first(command: str) -> bool:
    return f". {GIB_SCRIPT} && " in command and command.index(GIB_SCRIPT) < command.index("torchrun")


def test_upstream_gib_pod_sources_set_nccl_env() -> None:
    [test] = gib_pod()["containers"]
    assert f"source {GIB_SCRIPT}" in test["args"][0].splitlines()


@pytest.mark.parametrize("case", ["gcp-a4/train", "gcp-train/train"])
def test_rdma_health_gate_carries_gibs_mounts_env_and_script(case: str) -> None:
    cluster, out = RENDERED[case]
    rdma = {p.machine.name for p in cluster.pools if p.fabric is Fabric.RDMA}
    jobs = [d for d in templates(out.manifests) if d["kind"] == "Job"]
    assert rdma and len(jobs) == len({p.machine.name for p in cluster.pools})
    for job in jobs:
        pod = job["spec"]["template"]["spec"]
        [main] = pod["containers"]
        if job["metadata"]["name"] in {f"health-gate-{m}" for m in rdma}:  # GKE machine names are already slugs
            assert_gib_wiring(pod, main, job["metadata"]["name"])
            assert sources_gib_env_first(main["command"][-1])
        else:  # gIB's env is for gIB pools only (TCPXO has its own profile)
            assert GIB_SCRIPT not in main["command"][-1]
            assert GIB_MOUNT not in {m["mountPath"] for m in main["volumeMounts"]}


def test_rdma_training_pods_carry_gibs_mounts_env_and_script() -> None:
    cluster, out = RENDERED["gcp-train/train"]
    [pool] = [p for p in cluster.pools if p.fabric is Fabric.RDMA]
    runtimes = {m.name: m.obj for m in out.manifests if m.kind == "ClusterTrainingRuntime"}
    for framework in ("torch", "mpi"):
        for replicated in runtimes[f"{framework}-{pool.name}"]["spec"]["template"]["spec"]["replicatedJobs"]:
            pod = replicated["template"]["spec"]["template"]["spec"]
            for main in pod["containers"]:
                assert_gib_wiring(pod, main, f"{framework}-{pool.name}/{replicated['name']}")
    w = wiring(cluster, pool, "train-h200")  # what JobSet / RayJob / TrainJob examples run on this pool
    assert sources_gib_env_first(container(w, "node", "torchrun train.py")["command"][-1])
    [tcpxo] = [p for p in cluster.pools if p.fabric is Fabric.TCPXO]
    assert GIB_SCRIPT not in wiring(cluster, tcpxo).prelude


def test_azure_lustre_driver_from_the_maintainers_manifests() -> None:
    row = upstream.pin("azurelustre-csi-driver")
    applies = upstream.manifest("azurelustre-csi-driver", "script")["applies"]
    for case, (cluster, out) in RENDERED.items():
        if cluster.cloud.value != "azure" or not cluster.spec.storage.lustre:
            continue
        assert not [r for r in out.releases if r.name == "lustre-csi"], case  # no Helm chart: unsupported upstream
        files = [f for f in out.files if f.name.startswith("azurelustre-")]
        assert [f.url for f in files] == [f"{row['raw']}deploy/{name}" for name in applies]
        assert f"/{row['git']['ref']}/" in files[0].url  # pinned to the tag, not a branch
        assert all(f.after == (prev.name,) for prev, f in itertools.pairwise(files))


def tolerates(tolerations: list[dict[str, Any]], taint: dict[str, str]) -> bool:
    """Kubernetes' rule (core/v1 Toleration): same key (or empty key with Exists), Exists or equal value, and the
    same effect or an empty one."""
    for t in tolerations:
        key_ok = t.get("key", "") == taint["key"] or (not t.get("key") and t.get("operator") == "Exists")
        value_ok = t.get("operator") == "Exists" or t.get("value", "") == taint.get("value", "")
        effect_ok = not t.get("effect") or t["effect"] == taint["effect"]
        if key_ok and value_ok and effect_ok:
            return True
    return False


def pod_tolerations(out: Any) -> list[list[dict[str, Any]]]:
    """Every toleration list the add-on layer renders for pods on GPU pools (DaemonSets, Kueue flavors,
    NicClusterPolicy, Helm values)."""
    found = []
    for m in out.manifests:
        spec = m.obj.get("spec", {})
        found.append(spec.get("template", {}).get("spec", {}).get("tolerations") or spec.get("tolerations"))
    for r in out.releases:
        values = r.values
        found += [values.get("tolerations"), values.get("daemonsets", {}).get("tolerations"),
                  values.get("node-feature-discovery", {}).get("worker", {}).get("tolerations")]
    return [t for t in found if t]


def every_pool_has_every_effect(case: str) -> bool:
    """Cases whose every pool carries TAINTS (one taint of each effect): every toleration list must cover all."""
    cluster, _ = RENDERED[case]
    return bool(cluster.pools) and all({t.effect for t in p.spec.taints} == set(EFFECTS) for p in cluster.pools)


@pytest.mark.parametrize("case", sorted(c for c in RENDERED if every_pool_has_every_effect(c)))
def test_tolerations_cover_every_taint_effect(case: str) -> None:
    cluster, out = RENDERED[case]
    assert {t.effect for p in cluster.pools for t in p.spec.taints} == set(EFFECTS)
    lists = pod_tolerations(out)
    assert lists
    for tolerations in lists:
        for taint in TAINTS:
            assert tolerates(tolerations, taint), (case, taint, tolerations)


def test_the_toleration_rule_refuses_a_narrower_effect() -> None:
    narrow = [{"key": "example.com/noexecute", "operator": "Exists", "effect": "NoSchedule"}]
    assert not tolerates(narrow, TAINTS[2])
    assert tolerates([{"key": "example.com/noexecute", "operator": "Exists"}], TAINTS[2])


# AKS node image -> the kubernetes.azure.com/os-sku-effective values its nodes may carry (AKS: Ubuntu is 22.04 up to
# Kubernetes 1.34, 24.04 from 1.35; Azure Linux 3: https://learn.microsoft.com/azure/aks/supported-kubernetes-versions)
OS_SKU_EFFECTIVE = {"Ubuntu": {"Ubuntu2204", "Ubuntu2404"}, "AzureLinux": {"AzureLinux", "AzureLinux3"}}


def lustre_node_os(case: str) -> tuple[Any, set[str]]:
    cluster, _ = RENDERED[case]
    workloads = [w for key, m in upstream.digest("azurelustre-csi-driver")["manifests"].items()
                 if key.startswith("node-") for w in m["workloads"]]
    return cluster, {v for w in workloads for v in w["nodeIn"].get("kubernetes.azure.com/os-sku-effective", [])}


def azure_lustre_cases() -> list[str]:
    return sorted(c for c, (cl, _) in RENDERED.items() if cl.cloud.value == "azure" and cl.spec.storage.lustre)


def _pools_without_lustre(case: str) -> list[str]:
    from components.azure.agentpool import os_sku

    cluster, supported = lustre_node_os(case)
    assert supported >= {"Ubuntu2204", "Ubuntu2404"}
    return [p.name for p in cluster.pools
            if not OS_SKU_EFFECTIVE[os_sku(p, cluster.spec.addons.gpu_driver)] & supported]


@pytest.mark.parametrize("case", azure_lustre_cases())
def test_azure_lustre_node_plugin_runs_on_every_gpu_pool(case: str) -> None:
    assert _pools_without_lustre(case) == []


def test_azure_lustre_reaches_a_plain_gpu_pool() -> None:
    """NC H100 v5 pools run Ubuntu (components/azure/agentpool.py: Azure Linux only for V100/T4), so the Lustre
    CSI node plugin, which runs only on Ubuntu nodes, reaches them."""
    assert _pools_without_lustre("azure-nc-h100/train") == []
