"""Observability: kube-prometheus-stack sized from the cluster, the GPU health PrometheusRule, and the Grafana
dashboards kept in components/k8s/dashboards/ as ConfigMaps Grafana's sidecar loads."""

from __future__ import annotations

import math
from pathlib import Path

from components.fleet import Cluster
from components.k8s import charts, dcgmhealth, healthgate, paging, rules
from components.k8s.model import Manifest, Obj, Release, Rendered, config_map, namespace
from components.k8s.scheduling import FABRIC_LABEL, POOL_LABEL
from components.k8s.storage import csi_driver

NAMESPACE = "monitoring"
RELEASE = "kube-prometheus-stack"
DASHBOARDS = Path(__file__).parent / "dashboards"
RETENTION_DAYS = 30
NODE_LABELS = (POOL_LABEL, "gpufleet.io/gpu", FABRIC_LABEL)
# Prometheus storage: series per node (node exporter ~1,000, kubelet/cAdvisor ~1,000, DCGM ~60 per GPU), one sample
# per 30 s, ~2 bytes per compressed sample (https://prometheus.io/docs/prometheus/latest/storage/), 50% headroom.
SERIES_PER_NODE, SERIES_PER_GPU, SCRAPES_PER_DAY, BYTES_PER_SAMPLE = 2000, 60, 2880, 2
MIN_STORAGE_GIB = 50
# host directories whose .prom files node exporter's textfile collector reads (the health gate's bus bandwidth, the
# DCGM health watcher's result) -> where node exporter sees them; the flag is repeatable (collector/textfile.go
# v1.9.1: kingpin `.Strings()`, help "(repeatable)")
TEXTFILE_DIRS = {"health-gate": (healthgate.MARKER_DIR, "/gpufleet/health-gate"),
                 "dcgm-health": (dcgmhealth.MARKER_DIR, "/gpufleet/dcgm-health")}


def max_nodes(cluster: Cluster) -> int:
    return cluster.spec.system_pool.nodes.max + sum(p.spec.nodes.max for p in cluster.pools)


def prometheus_storage_gib(cluster: Cluster) -> int:
    series = max_nodes(cluster) * SERIES_PER_NODE + sum(p.max_gpus for p in cluster.pools) * SERIES_PER_GPU
    raw = series * SCRAPES_PER_DAY * RETENTION_DAYS * BYTES_PER_SAMPLE * 1.5 / 2**30
    return max(MIN_STORAGE_GIB, math.ceil(raw / 10) * 10)


def kps_values(cluster: Cluster) -> Obj:
    storage = prometheus_storage_gib(cluster)
    return {
        "prometheus": {"prometheusSpec": {
            "retention": f"{RETENTION_DAYS}d",
            "retentionSize": f"{int(storage * 0.85)}GB",  # prune before the volume fills
            "storageSpec": {"volumeClaimTemplate": {"spec": {
                "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": f"{storage}Gi"}}}}},
            # pick up every ServiceMonitor / PrometheusRule (DCGM exporter, Kueue, ours), not only this release's
            "serviceMonitorSelectorNilUsesHelmValues": False,
            "podMonitorSelectorNilUsesHelmValues": False,
            "ruleSelectorNilUsesHelmValues": False,
            "externalLabels": {"cluster": cluster.name},  # every alert says which cluster pages
        }},
        "alertmanager": paging.alertmanager_values(cluster),
        "grafana": {"sidecar": {"dashboards": {"enabled": True, "label": "grafana_dashboard",
                                               "searchNamespace": NAMESPACE}},
                    **paging.grafana_values()},
        # dashboards group GPUs by pool: kube_node_labels carries the gpufleet labels
        "kube-state-metrics": {"metricLabelsAllowlist": [f"nodes=[{','.join(NODE_LABELS)}]"]},
        # node exporter must run on GPU nodes too, and publish the textfile series (TEXTFILE_DIRS; the subchart's
        # daemonset template mounts extraHostVolumeMounts' name / hostPath / type / mountPath / readOnly,
        # prometheus-node-exporter 4.47.3 templates/daemonset.yaml)
        "prometheus-node-exporter": {
            "tolerations": [{"operator": "Exists"}],
            "extraArgs": [f"--collector.textfile.directory={seen}" for _, seen in TEXTFILE_DIRS.values()],
            "extraHostVolumeMounts": [{"name": name, "hostPath": host, "type": "DirectoryOrCreate",
                                       "mountPath": seen, "readOnly": True}
                                      for name, (host, seen) in TEXTFILE_DIRS.items()]},
    }


def dashboard_files() -> list[Path]:
    return sorted(DASHBOARDS.glob("*.json"))


def dashboards() -> list[Manifest]:
    return [config_map(f"dashboard-{path.stem}", NAMESPACE, {path.name: path.read_text()},
                       {"grafana_dashboard": "1"}) for path in dashboard_files()]


def alert_groups(cluster: Cluster, lustre: bool) -> dict[str, list[rules.Alert]]:
    healing = bool(cluster.pools) and cluster.spec.addons.self_healing.enabled
    return {"gpu-health": rules.gpu_alerts(),
            "self-healing": rules.self_healing_alerts() if healing else [],
            "dcgm-health": dcgmhealth.alerts() if healing else [],
            "health-gate": rules.health_gate_alerts(healthgate.NAMESPACE) if cluster.pools else [],
            "kueue": rules.kueue_alerts() if cluster.spec.addons.kueue_teams else [],
            "lustre": rules.lustre_alerts(csi_driver(cluster.cloud)) if lustre else []}


def monitoring(cluster: Cluster, lustre: bool) -> Rendered:
    if not cluster.spec.addons.monitoring:
        return Rendered()
    return Rendered(
        releases=[Release(RELEASE, charts.KUBE_PROMETHEUS_STACK, NAMESPACE, kps_values(cluster),
                          after=(f"secret/{NAMESPACE}/{paging.GRAFANA_SECRET}",))],
        manifests=[namespace(NAMESPACE, {"pod-security.kubernetes.io/enforce": "privileged"}),
                   rules.prometheus_rule(NAMESPACE, alert_groups(cluster, lustre), after=(RELEASE,)),
                   *dashboards()])
