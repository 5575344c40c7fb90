"""The health gate: per GPU machine type, a Job template (stored in a ConfigMap, run on demand) that runs a DCGM
diagnostic on each node and an NCCL all-reduce across two nodes, failing below the catalogue's bus bandwidth
threshold (``nccl_busbw_gbyte_per_s``). A failing run leaves a marker on its node (``MARKER``), which the node problem
detector turns into a condition the pool's NodeHealthCheck remediates (components/k8s/selfheal.py); a passing run
clears it. docs/addons.md says how to run it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from components.catalog import Fabric, MachineType
from components.fleet import Cluster, Pool
from components.k8s import images, textfile, upstream
from components.k8s.interconnect import GPUDIRECT_PIN, container_from_facts, fabric_limits, nic_annotations
from components.k8s.kueue import GPU, PRIORITIES
from components.k8s.model import Manifest, Obj, Rendered, config_map, namespace, obj, yaml_text
from components.k8s.nvidia import dcgm_image
from components.k8s.scheduling import on_pools, tolerations

NAMESPACE = "gpufleet-health"
NODES = 2  # the all-reduce spans this many nodes: the smallest run that crosses the fabric
PORT = 29500
SCRIPT = Path(__file__).parent / "data" / "allreduce.py"
# The marker directory is under /run, which FHS 3.0 section 3.15 says is cleared at boot
# (https://refspecs.linuxfoundation.org/FHS_3.0/fhs/ch03s15.html): the remediation's reboot clears the condition
# instead of quarantining the node again; the next gate run decides.
MARKER_DIR = "/run/gpufleet/health-gate"
MARKER = f"{MARKER_DIR}/failed"
# The measured bus bandwidth, for node exporter's textfile collector (components/k8s/textfile.py).
METRICS_FILE = f"{MARKER_DIR}/gpufleet_health_gate.prom"
PREFIX = "gpufleet_health_gate_"
# name -> (type, help) of the series the gate writes; the dashboards and alerts may read these (tests)
METRICS = {
    "nccl_busbw_gbytes_per_second": ("gauge", "NCCL all-reduce bus bandwidth the last gate run measured (1e9 B/s)."),
    "nccl_busbw_threshold_gbytes_per_second": ("gauge", "The machine type's bus bandwidth threshold."),
    "last_run_timestamp_seconds": ("gauge", "Unix time the last gate run on this node finished its all-reduce."),
}


def slug(machine: MachineType) -> str:
    return re.sub(r"[^a-z0-9]+", "-", machine.name.lower()).strip("-")


def image(cluster: Cluster, pool: Pool) -> str:
    """The pool's training image (components/k8s/images.py: the AWS DLC on EFA pools, NGC PyTorch elsewhere)."""
    return images.pool_image(cluster, pool)


TCPXO_WORKLOAD = "tcpxo-workload"  # upstream's TCPXO test pod (gke-gpudirect pin): what a TCPXO pod needs
TCPXO_DAEMON = "tcpxo-daemon"
NCCL_LIB_DIR = "/usr/local/nvidia/lib64"  # where the TCPXO installer puts NCCL + plugin, as pods mount it


@dataclass
class FabricParts:
    """What a pool's fabric adds to a training pod: annotations, sidecars, volumes, the NCCL container's env and
    mounts, and a shell prelude run before the training command."""

    annotations: dict[str, str] = field(default_factory=dict)
    sidecars: list[Obj] = field(default_factory=list)
    volumes: list[Obj] = field(default_factory=list)
    env: list[Obj] = field(default_factory=list)
    mounts: list[Obj] = field(default_factory=list)
    prelude: str = ""


def tcpxo_parts() -> FabricParts:
    """GPUDirect-TCPXO, from upstream's test pod: the tcpxo-daemon (RxDM) sidecar with its device annotation (the
    NRI device injector gives it the GPUs), the NCCL libraries, sysfs and aperture devices, and the NCCL settings
    (``nccl-env-profile.sh``, upstream's README "NCCL configs"). The sidecar is a native sidecar (an init
    container that restarts Always) so the Job completes when the training container does."""
    pod = upstream_workload_pod(TCPXO_WORKLOAD)
    [daemon] = [c for c in pod["containers"] if c["name"] == TCPXO_DAEMON]
    [nccl] = [c for c in pod["containers"] if c["name"] != TCPXO_DAEMON]
    mounts = {**daemon["mounts"], **{k: v for k, v in nccl["mounts"].items() if v != "/dev/shm"}}
    annotation = f"devices.gke.io/container.{TCPXO_DAEMON}"
    return FabricParts(
        annotations={annotation: pod["annotations"][annotation]},
        sidecars=[{**container_from_facts(daemon), "restartPolicy": "Always"}],
        volumes=[{"name": n, **pod["volumes"][n]} for n in mounts],
        env=[{"name": "NCCL_LIB_DIR", "value": NCCL_LIB_DIR},
             *({"name": k, "value": v} for k, v in nccl["env"].items())],
        mounts=[{"name": n, "mountPath": p} for n, p in nccl["mounts"].items() if p != "/dev/shm"],
        prelude=". ${NCCL_LIB_DIR}/nccl-env-profile.sh && ")


TCPX_WORKLOAD, TCPX_CONFIG = "tcpx-workload", "tcpx-nccl-config"  # upstream's A3 High test pod and its NCCL script
TCPX_DAEMON = "tcpx-daemon"


def tcpx_parts() -> FabricParts:
    """GPUDirect-TCPX (A3 High), from upstream's test pod: the tcpx-daemon (RxDM) as a native sidecar with its
    device annotation, the host's NVIDIA library directory (the installer puts NCCL and the TCPX plugin there) on
    LD_LIBRARY_PATH, the RxDM's socket directory where the NCCL container mounts it, and the NCCL settings upstream's
    test script passes every rank (``mpirun -x``: socket interfaces, CPU bindings, flow steering, chunk sizes)."""
    pod = upstream_workload_pod(TCPX_WORKLOAD)
    [daemon] = [c for c in pod["containers"] if c["name"] == TCPX_DAEMON]
    [nccl] = [c for c in pod["containers"] if c["name"] != TCPX_DAEMON]
    mounts = {n: p for n, p in nccl["mounts"].items() if n in pod["hostPaths"]}  # not the test's script ConfigMap
    annotation = f"devices.gke.io/container.{TCPX_DAEMON}"
    env = {**nccl["env"], **upstream.manifest(GPUDIRECT_PIN, TCPX_CONFIG)["mpirun_env"]}
    return FabricParts(
        annotations={annotation: pod["annotations"][annotation]},
        sidecars=[{**container_from_facts(daemon), "restartPolicy": "Always"}],
        volumes=[{"name": n, **pod["volumes"][n]} for n in {**daemon["mounts"], **mounts}],
        env=[{"name": k, "value": v} for k, v in env.items()],
        mounts=[{"name": n, "mountPath": p} for n, p in mounts.items()])


RDMA_WORKLOAD = "rdma-workload"  # upstream's gIB test pod for A3 Ultra (gke-gpudirect pin)


def rdma_parts() -> FabricParts:
    """GPUDirect-RDMA with Google's gIB NCCL plugin (A3 Ultra / A4), from upstream's test pod: the installer's
    host directories (gIB's NCCL plugin and scripts, the driver library directory it copies NCCL into) mounted where
    the pod mounts them, its LD_LIBRARY_PATH, and the scripts it sources (``set_nccl_env.sh``, the NCCL settings)."""
    pod = upstream_workload_pod(RDMA_WORKLOAD)
    [nccl] = pod["containers"]
    mounts = {n: p for n, p in nccl["mounts"].items() if n in pod["hostPaths"]}
    sourced = re.findall(r"^source (\S+)$", "\n".join(nccl["args"]), re.MULTILINE)
    return FabricParts(
        volumes=[{"name": n, **pod["volumes"][n]} for n in mounts],
        env=[{"name": k, "value": v} for k, v in nccl["env"].items()],
        mounts=[{"name": n, "mountPath": p} for n, p in mounts.items()],
        prelude="".join(f". {script} && " for script in sourced))


def upstream_workload_pod(key: str) -> Obj:
    """The first Pod of an upstream test manifest (they repeat one pod per host)."""
    return next(w for w in upstream.manifest(GPUDIRECT_PIN, key)["workloads"] if w["kind"] == "Pod")


def fabric_parts(pool: Pool) -> FabricParts:
    if pool.fabric is Fabric.TCPX:
        return tcpx_parts()
    if pool.fabric is Fabric.TCPXO:
        return tcpxo_parts()
    return rdma_parts() if pool.fabric is Fabric.RDMA else FabricParts()


def _marking(command: str, step: str, clear: bool) -> str:
    """``command`` that leaves the failure marker on this node when it fails (and clears it when ``clear`` and it
    passes): a failed all-reduce marks both nodes of the pair, the gate cannot tell which one is slow."""
    on_pass = f" && rm -f {MARKER}" if clear else ""
    return (f"{{ {command}; }}{on_pass} || {{ echo \"health gate {step} failed ($(date -u +%FT%TZ))\" > {MARKER}; "
            "exit 1; }")


def metric_names() -> list[str]:
    return [PREFIX + name for name in METRICS]


def _publishing(command: str, machine: MachineType) -> str:
    """``command`` (the all-reduce), then the node's metrics file: the bus bandwidth its output reports (allreduce.py's
    line; left out when the run printed none), the threshold and the time; exits with the command's status."""
    label = f'{{machine_type=\\"{machine.name}\\"}}'  # escaped: the printf format is double-quoted

    def series(name: str, value: str) -> str:
        return textfile.printf_series(PREFIX + name, *METRICS[name], value, label)

    busbw = series("nccl_busbw_gbytes_per_second", "$bw")
    rest = (series("nccl_busbw_threshold_gbytes_per_second", "$GATE_BUSBW_GBYTE_PER_S")
            + series("last_run_timestamp_seconds", "$(date +%s)"))
    write = textfile.replace_file(f'if [ -n "$bw" ]; then printf "{busbw}"; fi; printf "{rest}"', METRICS_FILE)
    return (f"{command} > /tmp/gate.out 2>&1; rc=$?; cat /tmp/gate.out; "
            "bw=$(sed -n 's/.*: \\([0-9][0-9.]*\\) GB\\/s bus bandwidth.*/\\1/p' /tmp/gate.out | tail -n 1); "
            f"{write}; [ $rc -eq 0 ]")


def _pod(cluster: Cluster, pools: list[Pool], name: str) -> Obj:
    pool, machine = pools[0], pools[0].machine
    gpus = {GPU: str(machine.gpus)}
    parts = fabric_parts(pool)
    command = (f"{parts.prelude}torchrun --nnodes={NODES} --nproc-per-node={machine.gpus} "
               f"--node-rank=$JOB_COMPLETION_INDEX --master-addr={name}-0.{name} --master-port={PORT} "
               "/gate/allreduce.py")
    marker = {"name": "gate-marker", "mountPath": MARKER_DIR}
    main = {"name": "nccl-allreduce", "image": image(cluster, pool),
            "command": ["/bin/sh", "-c", _marking(_publishing(command, machine), "NCCL all-reduce", clear=True)],
            "env": [{"name": "GATE_BUSBW_GBYTE_PER_S", "value": str(machine.nccl_busbw_gbyte_per_s)},
                    {"name": "NCCL_DEBUG", "value": "WARN"}, *parts.env],
            "ports": [{"containerPort": PORT}],
            "resources": {"limits": {**gpus, **fabric_limits(pool)}},
            "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
            "volumeMounts": [{"name": "gate", "mountPath": "/gate"}, {"name": "dshm", "mountPath": "/dev/shm"},
                             marker, *parts.mounts]}
    diag = {"name": "dcgm-diag", "image": dcgm_image(),
            "command": ["/bin/sh", "-c", _marking("nv-hostengine && dcgmi diag -r 2", "DCGM diagnostic", clear=False)],
            "resources": {"limits": gpus}, "volumeMounts": [marker]}
    return {
        "subdomain": name, "restartPolicy": "Never", "priorityClassName": PRIORITIES[0].name,
        "affinity": {**on_pools(pools), "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app.kubernetes.io/name": name}},
             "topologyKey": "kubernetes.io/hostname"}]}},
        "tolerations": tolerations(cluster.cloud, pools),
        "initContainers": [diag, *parts.sidecars], "containers": [main],
        "volumes": [{"name": "gate", "configMap": {"name": "health-gate-script"}},
                    {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}},
                    {"name": "gate-marker", "hostPath": {"path": MARKER_DIR, "type": "DirectoryOrCreate"}},
                    *parts.volumes],
    }


def job_template(cluster: Cluster, pools: list[Pool]) -> list[Obj]:
    """The headless Service (pod DNS for the rendezvous) and the Indexed Job for one machine type's pools."""
    name = f"health-gate-{slug(pools[0].machine)}"
    labels = {"app.kubernetes.io/name": name}
    service = obj("v1", "Service", name, NAMESPACE, labels, spec={
        "clusterIP": "None", "selector": labels, "ports": [{"name": "rendezvous", "port": PORT}]})
    annotations = {**fabric_parts(pools[0]).annotations, **nic_annotations(cluster, pools[0])}
    job = obj("batch/v1", "Job", name, NAMESPACE, labels, spec={
        "completionMode": "Indexed", "completions": NODES, "parallelism": NODES, "backoffLimit": 0,
        "ttlSecondsAfterFinished": 86400,
        "template": {"metadata": {"labels": labels, "annotations": annotations},
                     "spec": _pod(cluster, pools, name)}})
    return [service, job]


def by_machine(cluster: Cluster) -> dict[str, list[Pool]]:
    out: dict[str, list[Pool]] = {}
    for pool in cluster.pools:
        out.setdefault(pool.machine.name, []).append(pool)
    return out


def health_gate(cluster: Cluster) -> Rendered:
    if not cluster.pools:
        return Rendered()
    out = Rendered(manifests=[namespace(NAMESPACE, {"pod-security.kubernetes.io/enforce": "privileged"}),
                              config_map("health-gate-script", NAMESPACE, {"allreduce.py": SCRIPT.read_text()})])
    for pools in by_machine(cluster).values():
        docs = job_template(cluster, pools)
        out.manifests.append(config_map(f"health-gate-{slug(pools[0].machine)}", NAMESPACE,
                                        {"job.yaml": yaml_text(docs)},
                                        {"gpufleet.io/machine-type": pools[0].machine.name}))
    return out


def templates(manifests: list[Manifest]) -> list[Obj]:
    """The Job templates inside rendered health-gate ConfigMaps, parsed (for tests and the CLI)."""
    return [doc for m in manifests if m.kind == "ConfigMap" and "job.yaml" in m.obj.get("data", {})
            for doc in yaml.safe_load_all(m.obj["data"]["job.yaml"])]
