"""Self-healing GPU nodes (docs/addons.md "Self-healing GPU nodes"): detection -> quarantine -> drain -> reboot in
the cluster, with a per-pool limit; the cloud's own repair (components/repair.py) replaces what stays broken.

- detection: node-problem-detector on the GPU pools reads the kernel log; a fatal XID or an NVLink error sets a
  node condition (``GPU_CONDITIONS``), any other XID or an NVSwitch SXid is only an event and a metric (alerts);
  its custom plugin monitor holds a condition per ``MARKER_CHECKS`` while a failed health gate
  (components/k8s/healthgate.py) or a DCGM health Failure (components/k8s/dcgmhealth.py) left its marker on the
  node (under /run: cleared by the reboot);
- quarantine, drain, reboot: a Medik8s NodeHealthCheck per pool watches those conditions and creates a Self Node
  Remediation, which taints the node NoSchedule, evicts its pods with the out-of-service taint and reboots it,
  unless more than ``max_unhealthy_nodes`` of the pool are already unhealthy (a fleet-wide event: stop, page);
- Medik8s ships its operators as OLM bundles only, so OLM is installed from its pinned release's manifests (the
  release assets, not the repository's stale quickstart files) and each operator is one Subscription pinned to its
  bundle, with Manual approval, in a namespace of their own whose Pod Security level admits SNR's privileged agent;
  a Job approves exactly the pinned bundles' install plans during `pulumi up` (components/k8s/installplans.py);
- SNR's agent must run on every GPU node (SNR remediates no node without it): its SelfNodeRemediationConfig adds a
  toleration for every taint of the GPU pools to the agent DaemonSet the operator renders.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from components.fleet import Cluster, Pool
from components.k8s import dcgmhealth, healthgate, installplans, rules, upstream
from components.k8s.interconnect import container_from_facts
from components.k8s.model import Manifest, ManifestFile, Obj, Rendered, config_map, namespace, obj
from components.k8s.scheduling import POOL_LABEL, on_pools, tolerations
from components.repair import cloud_repair, max_unhealthy_nodes

NPD_PIN, OLM_PIN = "node-problem-detector", "olm"
NHC_PIN, SNR_PIN = "node-healthcheck-operator", "self-node-remediation"
NPD_NAMESPACE = "kube-system"  # where upstream's RBAC binds the node-problem-detector service account
NPD_CONFIG = "gpu-monitor.json"
NPD_METRICS_PORT = 20257  # --prometheus-port default (cmd/options/options.go at the pinned tag)
# Medik8s' own namespace: OLM's `operators` namespace enforces Pod Security `baseline` (the release values'
# operator_namespace_psa), which refuses SNR's agent (privileged, hostPID, a hostPort); SNR's Kubernetes bundle says to
# label its namespace privileged (Makefile bundle-community-k8s at v0.13.0). Both CSVs support only the AllNamespaces
# install mode (bundle/manifests/*.clusterserviceversion.yaml), so the OperatorGroup names no target namespace.
OPERATORS_NAMESPACE = "gpufleet-remediation"
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


@dataclass(frozen=True)
class MarkerCheck:
    """A node condition that follows a marker file another workload leaves on the node under /run/gpufleet (cleared at
    boot: the remediation's reboot lifts it). node-problem-detector's custom plugin monitor runs ``script()`` every
    minute: exit 1 (NonOK: condition True) with the marker's first 80 characters as the message while it is there,
    else 0 (OK: False) (pkg/custompluginmonitor/types/types.go at the pinned tag)."""

    name: str  # the monitor's source and file names: <name>-monitor.json, check-<name>.sh
    marker: str
    condition: str
    reason: str  # the condition's reason while True (problem_gauge's reason label)
    ok_reason: str
    ok_message: str

    @property
    def marker_dir(self) -> str:
        return self.marker.rsplit("/", 1)[0]

    @property
    def config(self) -> str:
        return f"{self.name}-monitor.json"

    @property
    def check(self) -> str:
        return f"check-{self.name}.sh"

    def script(self) -> str:
        return (f"#!/bin/sh\nif [ -f {self.marker} ]; then head -c 80 {self.marker}; exit 1; fi\n"
                f'echo "{self.ok_message}"\n')

    def monitor(self) -> Obj:
        """The custom plugin monitor config (keys as upstream's custom-plugin-monitor.json)."""
        return {
            "plugin": "custom", "source": f"{self.name}-monitor", "metricsReporting": True,
            "pluginConfig": {"invoke_interval": "60s", "timeout": "10s", "max_output_length": 80, "concurrency": 1,
                             "enable_message_change_based_condition_update": False},
            "conditions": [{"type": self.condition, "reason": self.ok_reason, "message": self.ok_message}],
            "rules": [{"type": "permanent", "condition": self.condition, "reason": self.reason,
                       "path": f"/config/{self.check}", "timeout": "5s"}],
        }


GATE = MarkerCheck("health-gate", healthgate.MARKER, "GpuHealthGateFailed", "GpuHealthGateFailed",
                   "GpuHealthGatePassed", "no failed health gate since boot")
DCGM_HEALTH = MarkerCheck("dcgm-health", dcgmhealth.MARKER, "GpuDcgmHealthFailed", "GpuDcgmHealthFailure",
                          "GpuDcgmHealthNoFailure", "no DCGM health Failure since boot")
MARKER_CHECKS = (GATE, DCGM_HEALTH)


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


def npd_image() -> str:
    """The release's image: the repository upstream's manifest pulls from (where releases are promoted to), at the
    released version (version.txt; the manifest's own tag is an old example's). pins.yaml says why."""
    [facts] = upstream.manifest(NPD_PIN, "daemonset")["workloads"]
    [repository] = {c["image"].rsplit(":", 1)[0] for c in facts["containers"]}
    return f"{repository}:{upstream.digest(NPD_PIN)['texts']['version.txt']}"


def npd_daemonset(cluster: Cluster) -> Obj:
    """Upstream's DaemonSet (image, mounts, host paths from the pinned manifest), on the GPU pools only, reading our
    GPU monitor and the health gate's marker (the gate's host directory, read-only), serving metrics to Prometheus."""
    [facts] = upstream.manifest(NPD_PIN, "daemonset")["workloads"]
    [container] = [container_from_facts(c) for c in facts["containers"]]
    container["image"] = npd_image()
    container["command"] = [container["command"][0], "--logtostderr",
                            f"--config.system-log-monitor=/config/{NPD_CONFIG}",  # comma separated lists
                            "--config.custom-plugin-monitor=" + ",".join(f"/config/{c.config}" for c in MARKER_CHECKS),
                            "--prometheus-address=0.0.0.0", f"--prometheus-port={NPD_METRICS_PORT}"]
    container["env"] = [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]
    container["ports"] = [{"name": "metrics", "containerPort": NPD_METRICS_PORT}]
    container["volumeMounts"] += [{"name": f"{c.name}-marker", "mountPath": c.marker_dir, "readOnly": True}
                                  for c in MARKER_CHECKS]
    volumes = [{"name": n, **v} for n, v in facts["volumes"].items() if n != "config"]
    volumes += [{"name": "config", "configMap": {"name": "gpu-problem-detector-config", "defaultMode": 0o755}},
                *({"name": f"{c.name}-marker", "hostPath": {"path": c.marker_dir, "type": "DirectoryOrCreate"}}
                  for c in MARKER_CHECKS)]
    labels = {"app": "gpu-problem-detector"}
    return obj("apps/v1", "DaemonSet", "gpu-problem-detector", NPD_NAMESPACE, labels, spec={
        "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels}, "spec": {
            "serviceAccountName": next(o["name"] for o in upstream.manifest(NPD_PIN, "rbac")["objects"]
                                       if o["kind"] == "ServiceAccount"),
            "priorityClassName": "system-node-critical",
            "affinity": on_pools(list(cluster.pools)), "tolerations": tolerations(cluster.cloud, cluster.pools),
            "containers": [container], "volumes": volumes}}})


def crd_files(pin: str) -> list[ManifestFile]:
    """The operator's CRDs at its pinned tag, applied by Pulumi: the CRs that use them are created on the first
    `pulumi up`, before the operator's install plan is approved. OLM later validates and updates an existing
    CRD rather than failing on it (OLM v0.46.0 pkg/controller/operators/catalog/step.go)."""
    row = upstream.pin(pin)
    return [ManifestFile(f"{pin}-crd" if i == 0 else f"{pin}-crd-{i}", row["raw"] + path)
            for i, path in enumerate(row["crds"])]


def crd_of(pin: str, kind: str) -> str:
    """The name of the CRD file (of ``crd_files``) that defines ``kind``."""
    paths = upstream.pin(pin)["crds"]
    [path] = [f["path"] for f in upstream.digest(pin)["crds"].values() if f["kind"] == kind]
    return crd_files(pin)[paths.index(path)].name


def olm_files() -> list[ManifestFile]:
    """OLM as its release publishes it: the release's assets, in the order its install script applies them."""
    release = upstream.digest(OLM_PIN)["release"]
    out: list[ManifestFile] = []
    for asset in release["assets"]:
        out.append(ManifestFile(f"olm-{asset.removesuffix('.yaml')}", release["url"] + asset,
                                tuple(f.name for f in out[-1:])))
    return out


def olm_object(kind: str) -> Obj:
    [found] = [o for o in upstream.digest(OLM_PIN)["release"]["objects"] if o["kind"] == kind]
    return dict(found)


def pinned_csv(pin: str) -> tuple[str, str]:
    """(package, CSV name) of a Medik8s pin: the package from the bundle's annotations, the CSV name OLM gives the
    bundle (<package>.<tag>)."""
    package = upstream.manifest(pin, "bundle")["annotations"]["operators.operatorframework.io.bundle.package.v1"]
    return package, f"{package}.{upstream.pin(pin)['git']['ref']}"


def subscription(pin: str) -> Manifest:
    """An OLM Subscription to one Medik8s operator at its pinned bundle: package and channel from the bundle's
    annotations, operatorhub.io's catalog from olm.yaml. Manual approval: OLM would otherwise follow the channel."""
    notes = upstream.manifest(pin, "bundle")["annotations"]
    package, csv = pinned_csv(pin)
    catalog = olm_object("CatalogSource")
    return Manifest(obj("operators.coreos.com/v1alpha1", "Subscription", package, OPERATORS_NAMESPACE, spec={
        "name": package, "channel": notes["operators.operatorframework.io.bundle.channel.default.v1"],
        "source": catalog["name"], "sourceNamespace": catalog["namespace"],
        "startingCSV": csv, "installPlanApproval": "Manual"}),
        after=("olm-olm", f"operatorgroup/{OPERATORS_NAMESPACE}/{OPERATORS_NAMESPACE}"))


def operator_group() -> Manifest:
    """OLM installs a Subscription's operator only in a namespace with one OperatorGroup; none selects every
    namespace (AllNamespaces), the one install mode both Medik8s operators support."""
    return Manifest(obj("operators.coreos.com/v1", "OperatorGroup", OPERATORS_NAMESPACE, OPERATORS_NAMESPACE,
                        spec={}), after=("olm-olm",))


def snr_config(cluster: Cluster) -> Manifest:
    """SNR's one config (the name its controller reads): the agent DaemonSet the operator renders tolerates only
    SNR's own and control-plane taints, and SNR refuses to remediate a node without an agent pod
    (isNodeRebootCapable), so every taint of the GPU pools is added as ``customDsTolerations`` (appended to the
    DaemonSet's own by the config controller's updateDsTolerations at v0.13.0). Other fields keep the CRD's defaults.
    Created before the operator runs, it is the config the operator finds (its initializer creates one only if
    none exists); server-side apply makes a later `pulumi up` update it in place either way."""
    name = upstream.digest(SNR_PIN)["constants"]["api/v1alpha1/selfnoderemediationconfig_types.go"]["ConfigCRName"]
    return Manifest(obj("self-node-remediation.medik8s.io/v1alpha1", "SelfNodeRemediationConfig", name,
                        OPERATORS_NAMESPACE, spec={"customDsTolerations": tolerations(cluster.cloud, cluster.pools)}),
                    after=(crd_of(SNR_PIN, "SelfNodeRemediationConfig"),))


def unhealthy_conditions(cluster: Cluster, pool: Pool) -> list[Obj]:
    out = [{"type": t, "status": "True", "duration": "0s"}
           for t in (*GPU_CONDITIONS, *(c.condition for c in MARKER_CHECKS))]
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
                                "namespace": OPERATORS_NAMESPACE}}),
        after=("olm-olm", crd_of(NHC_PIN, "NodeHealthCheck")))


def self_healing(cluster: Cluster, monitoring: bool) -> Rendered:
    if not (cluster.pools and cluster.spec.addons.self_healing.enabled):
        return Rendered()
    npd = upstream.pin(NPD_PIN)
    subscriptions = [subscription(NHC_PIN), subscription(SNR_PIN)]
    out = Rendered(
        files=[ManifestFile("npd-rbac", npd["raw"] + npd["manifests"]["rbac"]), *olm_files(),
               *(f for pin in (NHC_PIN, SNR_PIN) for f in crd_files(pin))],
        manifests=[
            namespace(OPERATORS_NAMESPACE, {"pod-security.kubernetes.io/enforce": "privileged"}),
            operator_group(),
            snr_config(cluster),
            config_map("gpu-problem-detector-config", NPD_NAMESPACE, {
                NPD_CONFIG: json.dumps(gpu_monitor(), indent=1),
                **{c.config: json.dumps(c.monitor(), indent=1) for c in MARKER_CHECKS},
                **{c.check: c.script() for c in MARKER_CHECKS}}),
            Manifest(npd_daemonset(cluster), after=("npd-rbac",)),
            *subscriptions,
            *installplans.approver(OLM_PIN, OPERATORS_NAMESPACE, dict(pinned_csv(p) for p in (NHC_PIN, SNR_PIN)),
                                   tuple(m.key for m in subscriptions), after=("olm-olm",)),
            Manifest(obj("self-node-remediation.medik8s.io/v1alpha1", "SelfNodeRemediationTemplate", TEMPLATE,
                         OPERATORS_NAMESPACE, spec={"template": {"spec": {"remediationStrategy": "Automatic"}}}),
                     after=("olm-olm", crd_of(SNR_PIN, "SelfNodeRemediationTemplate"))),
            *(node_health_check(cluster, pool) for pool in cluster.pools)]).extend(dcgmhealth.watcher(cluster))
    if monitoring:
        out.manifests.append(Manifest(obj("monitoring.coreos.com/v1", "PodMonitor", "gpu-problem-detector",
                                          NPD_NAMESPACE, spec={
                                              "selector": {"matchLabels": {"app": "gpu-problem-detector"}},
                                              "podMetricsEndpoints": [{"port": "metrics"}]}),
                                      after=("kube-prometheus-stack",)))
    return out
