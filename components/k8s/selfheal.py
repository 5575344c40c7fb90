"""Self-healing GPU nodes (docs/addons.md "Self-healing GPU nodes"): detection -> quarantine -> drain -> reboot in
the cluster, with a per-pool limit; the cloud's own repair (components/repair.py) replaces what stays broken.

- detection: node-problem-detector on the GPU pools reads the kernel log; a fatal XID or an NVLink error sets a
  node condition (``GPU_CONDITIONS``), any other XID or an NVSwitch SXid is only an event and a metric (alerts);
  its custom plugin monitor sets ``GATE_CONDITION`` while a failed health gate's marker is on the node
  (components/k8s/healthgate.py ``MARKER``, under /run: cleared by the reboot);
- quarantine, drain, reboot: a Medik8s NodeHealthCheck per pool watches those conditions and creates a Self Node
  Remediation, which taints the node NoSchedule, evicts its pods with the out-of-service taint and reboots it,
  unless more than ``max_unhealthy_nodes`` of the pool are already unhealthy (a fleet-wide event: stop, page);
- Medik8s ships its operators as OLM bundles only, so OLM is installed from its pinned quickstart manifests and
  each operator is one Subscription pinned to its bundle (install plans approved by hand: docs/addons.md).
"""

from __future__ import annotations

import json

from components.fleet import Cluster, Pool
from components.k8s import healthgate, rules, upstream
from components.k8s.interconnect import container_from_facts
from components.k8s.model import Manifest, ManifestFile, Obj, Rendered, config_map, obj
from components.k8s.scheduling import POOL_LABEL, on_pools, tolerations
from components.repair import cloud_repair, max_unhealthy_nodes

NPD_PIN, OLM_PIN = "node-problem-detector", "olm"
NHC_PIN, SNR_PIN = "node-healthcheck-operator", "self-node-remediation"
NPD_NAMESPACE = "kube-system"  # where upstream's RBAC binds the node-problem-detector service account
NPD_CONFIG = "gpu-monitor.json"
GATE_CONFIG, GATE_CHECK = "health-gate-monitor.json", "check-health-gate.sh"
NPD_METRICS_PORT = 20257  # --prometheus-port default (cmd/options/options.go at the pinned tag)
OPERATORS_NAMESPACE = "operators"  # OLM's global OperatorGroup namespace on Kubernetes (olm.yaml)
TEMPLATE = "gpufleet-reboot"

# NVIDIA XID catalogue (https://docs.nvidia.com/deploy/xid-errors/), kernel lines "NVRM: Xid (PCI:<bus>): <xid>, ...".
# Quarantine the XIDs the GPU alerts call fatal (rules.FATAL_XIDS: ECC, row remap) and 79 (fallen off the bus): a
# GPU reset (the reboot) clears them, or shows the GPU must be replaced. 74, the NVLink XID, has its own condition.
NVLINK_XID = 74
QUARANTINE_XIDS = tuple(sorted({*rules.FATAL_XIDS, rules.FALLEN_OFF_BUS_XID} - {NVLINK_XID}))
GPU_CONDITIONS = {"GpuXidFatal": "GpuHasNoFatalXid", "GpuNVLinkError": "GpuNVLinkHealthy"}
# Only an event + problem_counter (alerts, no quarantine): any other XID (mostly application faults: 13, 31, 43,
# 45 ...), and NVSwitch SXids (fabric manager side; the NVLink XID above covers the GPU's own links).
ALERT_ONLY_REASONS = ("GpuXid", "NVSwitchSXid")
# How long a condition must hold before NHC remediates: GPU faults at once; a NotReady node only where the
# cloud does not repair it itself (otherwise both would act on the same node).
NOT_READY_AFTER = "300s"
GATE_CONDITION, GATE_REASON = "GpuHealthGateFailed", "GpuHealthGateFailed"
# The plugin's exit status: 0 OK (condition False), 1 NonOK (condition True), other Unknown
# (pkg/custompluginmonitor/types/types.go at the pinned tag); its output (the marker's text) is the message.
GATE_CHECK_SCRIPT = f"""#!/bin/sh
if [ -f {healthgate.MARKER} ]; then head -c 80 {healthgate.MARKER}; exit 1; fi
echo "no failed health gate since boot"
"""


def _xid_pattern(xids: tuple[int, ...]) -> str:
    return rf"NVRM: Xid \(PCI:[0-9a-fA-F:.]+\): ({'|'.join(map(str, xids))}),.*"


def gpu_monitor() -> Obj:
    """node-problem-detector's system log monitor config (the kmsg plugin, keys as upstream's kernel-monitor.json)."""
    return {
        "plugin": "kmsg", "logPath": "/dev/kmsg", "lookback": "5m", "bufferSize": 10, "source": "gpu-monitor",
        "metricsReporting": True,
        "conditions": [{"type": t, "reason": r, "message": f"no {t} since the node problem detector started"}
                       for t, r in GPU_CONDITIONS.items()],
        "rules": [
            {"type": "permanent", "condition": "GpuXidFatal", "reason": "GpuFatalXid",
             "pattern": _xid_pattern(QUARANTINE_XIDS)},
            {"type": "permanent", "condition": "GpuNVLinkError", "reason": "GpuNVLinkXid",
             "pattern": _xid_pattern((NVLINK_XID,))},
            {"type": "temporary", "reason": "GpuXid", "pattern": r"NVRM: Xid \(PCI:[0-9a-fA-F:.]+\): \d+,.*"},
            {"type": "temporary", "reason": "NVSwitchSXid", "pattern": r"nvidia-nvswitch\d+: SXid \(PCI:[^)]+\): .*"},
        ],
    }


def gate_monitor() -> Obj:
    """node-problem-detector's custom plugin monitor config (keys as upstream's custom-plugin-monitor.json): runs
    ``GATE_CHECK`` every minute and holds ``GATE_CONDITION`` while the health gate's marker is there."""
    return {
        "plugin": "custom", "source": "health-gate-monitor", "metricsReporting": True,
        "pluginConfig": {"invoke_interval": "60s", "timeout": "10s", "max_output_length": 80, "concurrency": 1,
                         "enable_message_change_based_condition_update": False},
        "conditions": [{"type": GATE_CONDITION, "reason": "GpuHealthGatePassed",
                        "message": "no failed health gate since boot"}],
        "rules": [{"type": "permanent", "condition": GATE_CONDITION, "reason": GATE_REASON,
                   "path": f"/config/{GATE_CHECK}", "timeout": "5s"}],
    }


def npd_daemonset(cluster: Cluster) -> Obj:
    """Upstream's DaemonSet (image, mounts, host paths from the pinned manifest), on the GPU pools only, reading our
    GPU monitor and the health gate's marker (the gate's host directory, read-only), serving metrics to Prometheus."""
    [facts] = upstream.manifest(NPD_PIN, "daemonset")["workloads"]
    [container] = [container_from_facts(c) for c in facts["containers"]]
    container["command"] = [container["command"][0], "--logtostderr",
                            f"--config.system-log-monitor=/config/{NPD_CONFIG}",
                            f"--config.custom-plugin-monitor=/config/{GATE_CONFIG}",
                            "--prometheus-address=0.0.0.0", f"--prometheus-port={NPD_METRICS_PORT}"]
    container["env"] = [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]
    container["ports"] = [{"name": "metrics", "containerPort": NPD_METRICS_PORT}]
    container["volumeMounts"].append({"name": "gate-marker", "mountPath": healthgate.MARKER_DIR, "readOnly": True})
    volumes = [{"name": n, **v} for n, v in facts["volumes"].items() if n != "config"]
    volumes += [{"name": "config", "configMap": {"name": "gpu-problem-detector-config", "defaultMode": 0o755}},
                {"name": "gate-marker", "hostPath": {"path": healthgate.MARKER_DIR, "type": "DirectoryOrCreate"}}]
    labels = {"app": "gpu-problem-detector"}
    return obj("apps/v1", "DaemonSet", "gpu-problem-detector", NPD_NAMESPACE, labels, spec={
        "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels}, "spec": {
            "serviceAccountName": next(o["name"] for o in upstream.manifest(NPD_PIN, "rbac")["objects"]
                                       if o["kind"] == "ServiceAccount"),
            "priorityClassName": "system-node-critical",
            "affinity": on_pools(list(cluster.pools)), "tolerations": tolerations(cluster.cloud, cluster.pools),
            "containers": [container], "volumes": volumes}}})


def crd_file(pin: str) -> ManifestFile:
    """The operator's CRD at its pinned tag, applied by Pulumi: the CRs that use it are created on the first
    `pulumi up`, before anyone approves the operator's install plan. OLM later validates and updates an existing
    CRD rather than failing on it (OLM v0.46.0 pkg/controller/operators/catalog/step.go)."""
    row = upstream.pin(pin)
    [path] = row["crds"]
    return ManifestFile(f"{pin}-crd", row["raw"] + path)


def subscription(pin: str) -> Manifest:
    """An OLM Subscription to one Medik8s operator at its pinned bundle: package and channel from the bundle's
    annotations, the CSV name OLM gives a bundle (<package>.<tag>), operatorhub.io's catalog from olm.yaml."""
    notes = upstream.manifest(pin, "bundle")["annotations"]
    package = notes["operators.operatorframework.io.bundle.package.v1"]
    [catalog] = [o for o in upstream.manifest(OLM_PIN, "olm")["objects"] if o["kind"] == "CatalogSource"]
    return Manifest(obj("operators.coreos.com/v1alpha1", "Subscription", package, OPERATORS_NAMESPACE, spec={
        "name": package, "channel": notes["operators.operatorframework.io.bundle.channel.default.v1"],
        "source": catalog["name"], "sourceNamespace": catalog["namespace"],
        "startingCSV": f"{package}.{upstream.pin(pin)['git']['ref']}", "installPlanApproval": "Manual"}),
        after=("olm-olm",))


def unhealthy_conditions(cluster: Cluster, pool: Pool) -> list[Obj]:
    out = [{"type": t, "status": "True", "duration": "0s"} for t in (*GPU_CONDITIONS, GATE_CONDITION)]
    if not cloud_repair(cluster.cloud, pool.capacity).enabled:
        out += [{"type": "Ready", "status": s, "duration": NOT_READY_AFTER} for s in ("False", "Unknown")]
    return out


def node_health_check(cluster: Cluster, pool: Pool) -> Manifest:
    healing = cluster.spec.addons.self_healing
    return Manifest(obj("remediation.medik8s.io/v1alpha1", "NodeHealthCheck", f"gpu-{pool.name}", spec={
        "selector": {"matchLabels": {POOL_LABEL: pool.name}},
        "unhealthyConditions": unhealthy_conditions(cluster, pool),
        "maxUnhealthy": max_unhealthy_nodes(pool, healing),
        "remediationTemplate": {"apiVersion": "self-node-remediation.medik8s.io/v1alpha1",
                                "kind": "SelfNodeRemediationTemplate", "name": TEMPLATE,
                                "namespace": OPERATORS_NAMESPACE}}), after=("olm-olm", crd_file(NHC_PIN).name))


def self_healing(cluster: Cluster, monitoring: bool) -> Rendered:
    if not (cluster.pools and cluster.spec.addons.self_healing.enabled):
        return Rendered()
    olm = upstream.pin(OLM_PIN)
    npd = upstream.pin(NPD_PIN)
    out = Rendered(
        files=[ManifestFile("npd-rbac", npd["raw"] + npd["manifests"]["rbac"]),
               ManifestFile("olm-crds", olm["raw"] + olm["manifests"]["crds"]),
               ManifestFile("olm-olm", olm["raw"] + olm["manifests"]["olm"], after=("olm-crds",)),
               *(crd_file(pin) for pin in (NHC_PIN, SNR_PIN))],
        manifests=[
            config_map("gpu-problem-detector-config", NPD_NAMESPACE, {
                NPD_CONFIG: json.dumps(gpu_monitor(), indent=1), GATE_CONFIG: json.dumps(gate_monitor(), indent=1),
                GATE_CHECK: GATE_CHECK_SCRIPT}),
            Manifest(npd_daemonset(cluster), after=("npd-rbac",)),
            subscription(NHC_PIN), subscription(SNR_PIN),
            Manifest(obj("self-node-remediation.medik8s.io/v1alpha1", "SelfNodeRemediationTemplate", TEMPLATE,
                         OPERATORS_NAMESPACE, spec={"template": {"spec": {"remediationStrategy": "Automatic"}}}),
                     after=("olm-olm", crd_file(SNR_PIN).name)),
            *(node_health_check(cluster, pool) for pool in cluster.pools)])
    if monitoring:
        out.manifests.append(Manifest(obj("monitoring.coreos.com/v1", "PodMonitor", "gpu-problem-detector",
                                          NPD_NAMESPACE, spec={
                                              "selector": {"matchLabels": {"app": "gpu-problem-detector"}},
                                              "podMetricsEndpoints": [{"port": "metrics"}]}),
                                      after=("kube-prometheus-stack",)))
    return out
