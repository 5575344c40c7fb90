"""The checkpoint I/O probe (docs/addons.md "Training observability"): a small Deployment that, every
``INTERVAL_S``, writes and reads back ``SIZE_MIB`` on the cluster's Lustre volume and, where the stack bound the
checkpoint tools' identity to the checkpoint bucket, uploads, downloads and deletes a ``BUCKET_SIZE_MIB`` object under
the bucket's probe prefix with the pinned rclone (``data/checkpoint_probe.py``); it serves the results per target to
Prometheus (a PodMonitor) and alerts on them (its own PrometheusRule).

A long-running prober rather than a CronJob: a CronJob's results would need a Pushgateway to reach Prometheus and
vanish between runs; the prober keeps the last result scrapeable and counts failures. It runs on the system pool
(GPU nodes are tainted), so it measures the file system and the bucket, not a training node's NIC."""

from __future__ import annotations

import ast
from pathlib import Path

from components import checkpoint_tools
from components.fleet import Cluster
from components.k8s import checkpoints, rules
from components.k8s.checkpoints import CheckpointBucket
from components.k8s.model import Manifest, Obj, Rendered, as_nobody, config_map, obj
from components.k8s.storage import CLAIM

NAMESPACE = checkpoint_tools.NAMESPACE
SCRIPT = Path(__file__).parent / "data" / "checkpoint_probe.py"
IMAGE = "python:3.12-slim"  # Docker Official Image (https://hub.docker.com/_/python): the script is stdlib only
PORT = 9101
INTERVAL_S = 900
SIZE_MIB = 1024  # one checkpoint shard's order of magnitude, small next to any Lustre file system
# Smaller in the bucket: a versioned bucket keeps each deleted probe object until its lifecycle drops old probe
# versions (a day, components.checkpoint_tools), and soft delete (GCS, Azure) a week longer.
BUCKET_SIZE_MIB = 256
STAGING = "/staging"  # the bucket probe's local copies (an emptyDir)
PREFIX = "gpufleet_checkpoint_probe_"


def metric_names() -> list[str]:
    """The series the probe script publishes: PREFIX + each key of its METRICS table (read from the script, so the
    alerts and dashboards are checked against what it really serves)."""
    [table] = [n.value for n in ast.parse(SCRIPT.read_text()).body
               if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "METRICS"]
    return [PREFIX + name for name in ast.literal_eval(table)]


def probe_alerts() -> list[rules.Alert]:
    return [
        rules.Alert("CheckpointProbeFailing", f"time() - {PREFIX}last_success_timestamp_seconds > {3 * INTERVAL_S} "
                    f"or increase({PREFIX}errors_total[1h]) > 0", "0m", "critical",
                    "The checkpoint probe could not write and read back {{ $labels.target }} (the Lustre volume or "
                    "the checkpoint bucket): checkpoints are at risk."),
        rules.Alert("CheckpointWriteSlow", f"{PREFIX}write_bytes_per_second < 0.5 * "
                    f"quantile_over_time(0.5, {PREFIX}write_bytes_per_second[1d])", "30m", "warning",
                    "Checkpoint writes to {{ $labels.target }} run at under half of their daily median."),
        rules.Alert("CheckpointReadSlow", f"{PREFIX}read_bytes_per_second < 0.5 * "
                    f"quantile_over_time(0.5, {PREFIX}read_bytes_per_second[1d])", "30m", "warning",
                    "Checkpoint reads (restarts) from {{ $labels.target }} run at under half of their daily median."),
    ]


def _bucket_parts(bucket: CheckpointBucket | None) -> tuple[list[Obj], list[Obj], list[Obj], list[Obj]]:
    """What probing the bucket adds: env, init containers, volumes and mounts (nothing without a bucket)."""
    if bucket is None:
        return [], [], [], []
    probe_env = {"PROBE_REMOTE": checkpoints.remote_path(bucket, checkpoint_tools.PROBE_PREFIX),
                 "PROBE_RCLONE": checkpoints.RCLONE, "PROBE_STAGING": STAGING,
                 "PROBE_BUCKET_SIZE_MIB": str(BUCKET_SIZE_MIB)}
    env = [{"name": k, "value": v} for k, v in probe_env.items()] + checkpoints.env(bucket)
    volumes = [{"name": "tools", "emptyDir": {}},
               {"name": "staging", "emptyDir": {"sizeLimit": f"{2 * BUCKET_SIZE_MIB + 64}Mi"}}]
    mounts = [{"name": "tools", "mountPath": checkpoints.TOOLS_MOUNT, "readOnly": True},
              {"name": "staging", "mountPath": STAGING}]
    return env, [checkpoints.install_rclone()], volumes, mounts


def checkpoint_probe(cluster: Cluster, lustre: bool, monitoring: bool,
                     bucket: CheckpointBucket | None = None) -> Rendered:
    """Only with both a Lustre volume (its PVC in NAMESPACE: render.py adds the namespace, the ServiceAccount and the
    claim) and monitoring; the bucket too where the stack bound the tools' identity to it (``bucket``)."""
    if not (lustre and monitoring):
        return Rendered()
    labels = {"app.kubernetes.io/name": "checkpoint-probe"}
    env = {"PROBE_DIR": "/lustre/.gpufleet-probe", "PROBE_SIZE_MIB": str(SIZE_MIB),
           "PROBE_INTERVAL_S": str(INTERVAL_S), "PROBE_PORT": str(PORT)}
    bucket_env, bucket_init, bucket_volumes, bucket_mounts = _bucket_parts(bucket)
    pod: Obj = {
        # the probe calls no Kubernetes API; the clouds' identity webhooks project their own tokens
        "automountServiceAccountToken": False,
        # Lustre has no fsGroup support: a root init step gives the probe (nobody) its own directory
        "initContainers": [{"name": "probe-dir", "image": IMAGE, "command": [
            "sh", "-c", f"mkdir -p {env['PROBE_DIR']} && chown 65534:65534 {env['PROBE_DIR']}"],
            "securityContext": {"runAsUser": 0, "allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"], "add": ["CHOWN"]}},
            "volumeMounts": [{"name": "lustre", "mountPath": "/lustre"}]}, *bucket_init],
        "containers": [{
            "name": "probe", "image": IMAGE, "command": ["python", "/probe/checkpoint_probe.py"],
            "env": [{"name": k, "value": v} for k, v in env.items()] + bucket_env,
            "ports": [{"name": "metrics", "containerPort": PORT}],
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
            "securityContext": as_nobody(),
            "volumeMounts": [{"name": "probe", "mountPath": "/probe"}, {"name": "lustre", "mountPath": "/lustre"},
                             *bucket_mounts],
        }],
        "volumes": [{"name": "probe", "configMap": {"name": "checkpoint-probe"}},
                    {"name": "lustre", "persistentVolumeClaim": {"claimName": CLAIM}}, *bucket_volumes]}
    if bucket is not None:
        pod = {"serviceAccountName": checkpoint_tools.SERVICE_ACCOUNT, **pod}
    pod.update(checkpoints.lustre_placement(cluster))
    template_labels = {**labels, **(checkpoints.pod_labels(bucket) if bucket else {})}
    deployment = obj("apps/v1", "Deployment", "checkpoint-probe", NAMESPACE, labels, spec={
        "replicas": 1, "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": template_labels}, "spec": pod}})
    return Rendered(manifests=[
        config_map("checkpoint-probe", NAMESPACE, {SCRIPT.name: SCRIPT.read_text()}),
        Manifest(deployment),
        Manifest(obj("monitoring.coreos.com/v1", "PodMonitor", "checkpoint-probe", NAMESPACE, spec={
            "selector": {"matchLabels": labels}, "podMetricsEndpoints": [{"port": "metrics"}]}),
            after=("kube-prometheus-stack",)),
        Manifest(obj("monitoring.coreos.com/v1", "PrometheusRule", "gpufleet-checkpoint-probe", NAMESPACE,
                     spec={"groups": [{"name": "checkpoint-io", "rules": [a.rule() for a in probe_alerts()]}]}),
                 after=("kube-prometheus-stack",)),
    ])
