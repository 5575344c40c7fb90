"""The gate on new GPU nodes (docs/addons.md "The gate on new nodes"): every node of a gated pool joins with the
startup taint ``gpufleet.io/health-gate`` (components/fleet.py; the translators put it on the pool), which Kueue's
flavors do not tolerate, so no admitted work lands there; the ``gpu-node-gate`` DaemonSet runs DCGM's diagnostic on
the node through its host engine and lifts the taint when it passes. A failure, or no result within ``BUDGET_S``,
leaves the health gate's marker: the node stays closed and is quarantined and rebooted through the self-healing
path (node-problem-detector's GpuHealthGateFailed condition, the pool's NodeHealthCheck, Self Node Remediation).

Self-healing on is what gates a pool: the diagnostic needs the standalone host engine (``dcgm.enabled``) and a
failure needs the remediation path. The two-node all-reduce (components/k8s/healthgate.py) stays a Job run on
demand: it needs a second node and spans the fabric.
"""

from __future__ import annotations

from pathlib import Path

from components.fleet import GATE_TAINT, Cluster
from components.k8s import dcgmhealth, healthgate, nvidia, probe
from components.k8s.kueue import GPU
from components.k8s.model import Manifest, Obj, Rendered, config_map, obj
from components.k8s.scheduling import on_pools, tolerations

NAME = "gpu-node-gate"
SCRIPT = Path(__file__).parent / "data" / "node_gate.py"
WORK = "/work"
# DCGM's level-2 diagnostic takes minutes on 8 GPUs; a new node first waits for its driver, toolkit and host engine
# (the GPU operator's operands). 20 minutes for all of it: past that the node fails the gate.
BUDGET_S = 1200


def gated(cluster: Cluster) -> bool:
    return any(p.gated for p in cluster.pools)


def diag_script(gpus: int) -> str:
    """The diag container: wait for the gate's request, wait for the node's host engine, run the level-2
    diagnostic expecting every GPU of the machine, write pass / fail for the gate container, then idle."""
    engine = dcgmhealth.host_engine()
    return (f'[ -s {WORK}/result ] && exec sleep infinity\n'
            f'while [ ! -f {WORK}/request ]; do sleep 5; done\n'
            f'until dcgmi discovery --host {engine} -l > /dev/null 2>&1; do sleep 10; done\n'
            f'if dcgmi diag --host {engine} -r 2 --expectedNumEntities gpu:{gpus}; then echo pass > {WORK}/result\n'
            f'else echo "fail: dcgmi diag -r 2 exited $?" > {WORK}/result; fi\n'
            'exec sleep infinity\n')


def daemonset(cluster: Cluster, machine: str) -> Obj:
    """One DaemonSet per machine type (the diagnostic expects its GPU count), on that machine's gated pools."""
    pools = [p for p in cluster.pools if p.gated and p.machine.name == machine]
    name = f"{NAME}-{healthgate.slug(pools[0].machine)}"
    labels = {"app.kubernetes.io/name": name}
    work = {"name": "work", "mountPath": WORK}
    env = {"GATE_TAINT": GATE_TAINT, "GATE_BUDGET_S": str(BUDGET_S), "GATE_WORK": WORK,
           "GATE_MARKER": healthgate.MARKER, "GPU_RESOURCE": GPU}
    gate = {"name": "gate", "image": probe.IMAGE, "command": ["python", f"/script/{SCRIPT.name}"],
            "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                    *({"name": k, "value": v} for k, v in env.items())],
            "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}},
            # root (the owner of the host directory the detector reads, where it writes the marker), no capability
            "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                "capabilities": {"drop": ["ALL"]}},
            "volumeMounts": [{"name": "script", "mountPath": "/script", "readOnly": True}, work,
                             {"name": "marker", "mountPath": healthgate.MARKER_DIR}]}
    diag = {"name": "diag", "image": nvidia.dcgm_image(),  # its dcgmi matches the host engine
            "command": ["/bin/sh", "-c", diag_script(pools[0].machine.gpus)],
            "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}},
            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
            "volumeMounts": [work]}
    return obj("apps/v1", "DaemonSet", name, nvidia.NAMESPACE, labels, spec={
        "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels}, "spec": {
            "serviceAccountName": NAME, "priorityClassName": "system-node-critical",
            "affinity": on_pools(pools), "tolerations": tolerations(cluster.cloud, pools),
            "containers": [gate, diag],
            "volumes": [{"name": "script", "configMap": {"name": NAME}}, {"name": "work", "emptyDir": {}},
                        {"name": "marker", "hostPath": {"path": healthgate.MARKER_DIR,
                                                        "type": "DirectoryOrCreate"}}]}}})


def node_gate(cluster: Cluster) -> Rendered:
    """The gate's script, its identity (get and patch nodes, list pods: cluster-wide, the least the job needs, as
    node names are not known in advance) and one DaemonSet per gated machine type."""
    if not gated(cluster):
        return Rendered()
    labels = {"app.kubernetes.io/name": NAME}
    role = obj("rbac.authorization.k8s.io/v1", "ClusterRole", NAME, labels=labels, rules=[
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}])
    binding = obj("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", NAME, labels=labels,
                  roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NAME},
                  subjects=[{"kind": "ServiceAccount", "name": NAME, "namespace": nvidia.NAMESPACE}])
    machines = sorted({p.machine.name for p in cluster.pools if p.gated})
    return Rendered(manifests=[
        config_map(NAME, nvidia.NAMESPACE, {SCRIPT.name: SCRIPT.read_text()}, labels),
        Manifest(obj("v1", "ServiceAccount", NAME, nvidia.NAMESPACE, labels)), Manifest(role), Manifest(binding),
        *(Manifest(daemonset(cluster, m), after=("gpu-operator",)) for m in machines)])
