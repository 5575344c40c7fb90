"""GPU health alerts as data: each rule's PromQL names only metrics the exporters publish (tests check both the
syntax and the names against the DCGM metric set and tests/components/k8s/data/exporter_metrics.yaml)."""

from __future__ import annotations

from dataclasses import dataclass

from components.k8s.model import Manifest, obj

DCGM_JOB = "nvidia-dcgm-exporter"  # the GPU operator's DCGM exporter service / ServiceMonitor job
# XIDs that need the node cordoned: 48 double-bit ECC, 63/64 row remap, 74 NVLink, 92 high SBE rate, 94/95 ECC
# contained/uncontained (https://docs.nvidia.com/deploy/xid-errors/). 79 (fallen off the bus) has its own alert.
FATAL_XIDS = (48, 63, 64, 74, 92, 94, 95)
FALLEN_OFF_BUS_XID = 79


@dataclass(frozen=True)
class Alert:
    name: str
    expr: str
    for_: str
    severity: str  # critical: cordon and drain (docs/addons.md); warning: look today
    summary: str

    def rule(self) -> dict[str, object]:
        return {"alert": self.name, "expr": self.expr, "for": self.for_,
                "labels": {"severity": self.severity, "team": "ml-platform"},
                "annotations": {"summary": self.summary, "runbook_url": "docs/addons.md#health-gate-and-cordoning"}}


def gpu_alerts() -> list[Alert]:
    return [
        Alert("GpuXidError", "changes(DCGM_FI_DEV_XID_ERRORS[10m]) > 0 and DCGM_FI_DEV_XID_ERRORS > 0", "0m",
              "warning", "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} reported XID {{ $value }}."),
        Alert("GpuFatalXid", " or ".join(f"DCGM_FI_DEV_XID_ERRORS == {x}" for x in FATAL_XIDS), "0m", "critical",
              "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} hit fatal XID {{ $value }}: cordon the node."),
        Alert("GpuFallenOffBus", f"DCGM_FI_DEV_XID_ERRORS == {FALLEN_OFF_BUS_XID}", "0m", "critical",
              "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} has fallen off the bus (XID 79)."),
        Alert("GpuUnhealthy", 'kube_node_status_capacity{resource="nvidia_com_gpu"} '
              '- kube_node_status_allocatable{resource="nvidia_com_gpu"} > 0', "10m", "critical",
              "{{ $labels.node }} advertises fewer GPUs than it has: the device plugin marked some unhealthy."),
        Alert("GpuEccDoubleBitErrors", "increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[10m]) > 0", "0m", "critical",
              "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} had uncorrectable (double-bit) ECC errors."),
        Alert("GpuRowRemapFailure", "DCGM_FI_DEV_ROW_REMAP_FAILURE > 0", "0m", "critical",
              "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} failed to remap memory rows: replace the GPU."),
        Alert("GpuUncorrectableRowsRemapped", "increase(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS[1h]) > 0", "0m",
              "warning", "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} remapped rows after uncorrectable errors; "
              "reset the GPU when idle."),
        Alert("GpuThermalThrottling", "rate(DCGM_FI_DEV_THERMAL_VIOLATION[5m]) > 100000", "15m", "warning",
              "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} is thermally throttled over 10% of the time."),
        Alert("GpuPowerThrottling", "rate(DCGM_FI_DEV_POWER_VIOLATION[5m]) > 100000", "15m", "warning",
              "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} is power throttled over 10% of the time."),
        Alert("GpuTemperatureHigh", "DCGM_FI_DEV_GPU_TEMP > 87", "10m", "warning",
              "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} runs at {{ $value }} C."),
        Alert("DcgmExporterDown", f'up{{job="{DCGM_JOB}"}} == 0 or '
              f'kube_daemonset_status_number_unavailable{{daemonset="{DCGM_JOB}"}} > 0', "10m", "warning",
              "The DCGM exporter is down on some GPU nodes: GPU health is unobserved there."),
        Alert("NodeNotReady", 'kube_node_status_condition{condition="Ready",status="true"} == 0', "5m", "critical",
              "Node {{ $labels.node }} is NotReady."),
    ]


def self_healing_alerts() -> list[Alert]:
    """node-problem-detector's metrics (problem_gauge: a condition set; problem_counter: events), reasons from
    components/k8s/selfheal.py: a quarantine pages, an alert-only fault is looked at today."""
    return [
        Alert("GpuNodeQuarantined", 'max by (instance, reason) '
              '(problem_gauge{reason=~"GpuFatalXid|GpuNVLinkXid|GpuHealthGateFailed|GpuDcgmHealthFailure"}) > 0',
              "0m", "critical", "{{ $labels.instance }} reported {{ $labels.reason }}: NodeHealthCheck quarantines "
              "and reboots it (docs/addons.md#self-healing-gpu-nodes)."),
        Alert("GpuXidEvents", 'sum by (instance, reason) (increase(problem_counter{reason=~"GpuXid|NVSwitchSXid"}'
              '[30m])) > 0', "0m", "warning", "{{ $labels.instance }} logged {{ $labels.reason }} in the last 30 "
              "minutes (alert only: no quarantine)."),
    ]


def health_gate_alerts(namespace: str) -> list[Alert]:
    """The health gate's result (DCGM diagnostic + NCCL all-reduce against the catalogue's bus bandwidth), as
    kube-state-metrics publishes every Job's status: a failed gate run is a node pair to look at."""
    return [Alert("HealthGateFailed", f'max by (job_name) (kube_job_status_failed{{namespace="{namespace}"}}) > 0',
                  "0m", "warning", "Health gate {{ $labels.job_name }} failed (DCGM diagnostic or NCCL bus bandwidth "
                  "below the machine type's threshold): see its pod logs, cordon the nodes it ran on."),
            # the bus bandwidth each node's gate run measured (node exporter's textfile collector), under the
            # threshold the same run wrote: the series stay until the next run, so this names the slow pairs
            Alert("HealthGateBusBandwidthLow", "max by (instance, machine_type) "
                  "(gpufleet_health_gate_nccl_busbw_gbytes_per_second "
                  "< gpufleet_health_gate_nccl_busbw_threshold_gbytes_per_second)", "0m", "warning",
                  "The last health gate on {{ $labels.instance }} measured {{ $value }} GB/s NCCL bus bandwidth, "
                  "below the {{ $labels.machine_type }} threshold: check its fabric (dashboard gpufleet / Fabric).")]


def kueue_alerts() -> list[Alert]:
    return [
        Alert("KueueAdmissionWaitHigh", "histogram_quantile(0.9, sum by (le, cluster_queue) "
              "(rate(kueue_admission_wait_time_seconds_bucket[30m]))) > 3600", "30m", "warning",
              "Workloads in ClusterQueue {{ $labels.cluster_queue }} wait over an hour for admission (p90)."),
        Alert("KueuePendingGpuWorkloads", 'sum by (cluster_queue) (kueue_pending_workloads{status="inadmissible"}) > 0',
              "30m", "warning", "ClusterQueue {{ $labels.cluster_queue }} has workloads that cannot be admitted."),
    ]


def lustre_alerts(csi_driver: str) -> list[Alert]:
    plugin = f"kubernetes.io/csi:{csi_driver}"
    return [Alert("LustreMountErrors", f'sum by (instance) (increase(storage_operation_duration_seconds_count'
                  f'{{volume_plugin="{plugin}",operation_name=~"volume_mount.*",status!="success"}}[15m])) > 0',
                  "0m", "critical", "Lustre mounts fail on {{ $labels.instance }}: jobs there cannot read data.")]


def prometheus_rule(namespace: str, alerts_by_group: dict[str, list[Alert]], after: tuple[str, ...]) -> Manifest:
    groups = [{"name": group, "rules": [a.rule() for a in alerts]} for group, alerts in alerts_by_group.items()
              if alerts]
    return Manifest(obj("monitoring.coreos.com/v1", "PrometheusRule", "gpufleet-gpu-health", namespace,
                        spec={"groups": groups}), after)
