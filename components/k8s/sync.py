"""Checkpoint sync (docs/addons.md "Checkpoint sync"): on GCP and Azure, where the Lustre file system has no
standing export to its bucket, a CronJob copies new and changed files from the Lustre export path to the same prefix
of the checkpoint bucket with the pinned rclone, as the checkpoint tools' identity.

``rclone copy`` only adds and updates (it never deletes in the bucket), and skips files modified in the last
MIN_AGE so a checkpoint still being written waits for the next run. ``concurrencyPolicy: Forbid``: a run that is
still copying makes the next one skip. The cloud's own export (the stack's ``<cluster>-lustre-export`` command) stays
the tool for bulk and one-off exports. On a worker of a fleet queue the same CronJob, on every cloud, also
replicates to the other workers' buckets and restores theirs (``replicate``, docs/fleet-queue.md)."""

from __future__ import annotations

from components import checkpoint_tools
from components.catalog import Cloud
from components.fleet import Cluster
from components.k8s import checkpoints, replicate, rules
from components.k8s.checkpoints import CheckpointBucket
from components.k8s.model import Manifest, Obj, Rendered, as_nobody, obj
from components.k8s.replicate import PeerLink
from components.k8s.storage import CLAIM
from components.k8s.training import LUSTRE_MOUNT

SYNCED = (Cloud.GCP, Cloud.AZURE)  # AWS: the FSx data repository association exports by itself
NAME = "checkpoint-sync"
MIN_AGE_S = 300
MIN_AGE = f"{MIN_AGE_S // 60}m"
TRANSFERS = 8  # files in flight at once (rclone's default is 4): checkpoints are few, large files
DEADLINE_S = 6 * 3600  # a run copying longer than this is stopped; the next run resumes what is missing


BEHIND_FOR = "2h"


def sync_alerts() -> list[rules.Alert]:
    """kube-state-metrics' CronJob times: a scheduled run that has not succeeded since it started, for BEHIND_FOR."""
    cronjob = f'{{namespace="{checkpoint_tools.NAMESPACE}", cronjob="{NAME}"}}'
    return [rules.Alert(
        "CheckpointSyncBehind", f"kube_cronjob_status_last_schedule_time{cronjob} - "
        f"kube_cronjob_status_last_successful_time{cronjob} > 0", BEHIND_FOR, "warning",
        "Checkpoint sync runs keep failing or running long: new checkpoints on Lustre are not reaching the bucket "
        "(or, on a fleet-queue worker, its peers' buckets, or peers' checkpoints are not restored to Lustre) "
        "(kubectl -n gpufleet-probe logs job/<last checkpoint-sync job> --all-containers).")]


def wanted(cluster: Cluster, lustre: bool, bucket: CheckpointBucket | None, peers: tuple[PeerLink, ...] = ()) -> bool:
    """A CronJob where Lustre does not export by itself, or where checkpoints go to peers (docs/fleet-queue.md)."""
    spec = cluster.spec.storage.lustre
    return ((cluster.cloud in SYNCED or bool(peers)) and lustre and bucket is not None and spec is not None
            and spec.checkpoint_sync.enabled)


def command(cluster: Cluster, bucket: CheckpointBucket) -> list:
    """rclone's arguments: copy the Lustre export path to the bucket's export prefix."""
    lustre = cluster.spec.storage.lustre
    assert lustre is not None
    prefix = lustre.export_path.strip("/")
    return ["copy", "--config=", f"{LUSTRE_MOUNT}/{prefix}", checkpoints.remote_path(bucket, prefix),
            f"--min-age={MIN_AGE}", f"--transfers={TRANSFERS}", "--stats=1m", "--stats-one-line", "--verbose"]


def checkpoint_sync(cluster: Cluster, lustre: bool, bucket: CheckpointBucket | None, monitoring: bool,
                    peers: tuple[PeerLink, ...] = ()) -> Rendered:
    """The CronJob and, with monitoring, its PrometheusRule (nothing where ``wanted`` says no); on a worker of a
    fleet queue, with the replication to its peers (``replicate``) and its ConfigMap."""
    if not wanted(cluster, lustre, bucket, peers):
        return Rendered()
    assert bucket is not None and cluster.spec.storage.lustre is not None
    labels = {"app.kubernetes.io/name": NAME}
    synced = cluster.cloud in SYNCED
    containers: list[Obj] = [{
        "name": "rclone", "image": checkpoints.image(), "args": command(cluster, bucket),
        "env": checkpoints.env(bucket),
        "resources": checkpoints.copy_resources(),
        # reads what the training pods wrote: files must be readable by others (the usual umask 022)
        "securityContext": as_nobody(),
        "volumeMounts": [{"name": "lustre", "mountPath": LUSTRE_MOUNT, "readOnly": True}]}] if synced else []
    init: list[Obj] = []
    # read-only for every container, unless the restore (with peers) writes to it; the others still mount it read-only
    volumes: list[Obj] = [{"name": "lustre", "persistentVolumeClaim": {"claimName": CLAIM, "readOnly": not peers}}]
    if peers:
        more = replicate.pod_parts(cluster, bucket, list(peers), min_age_s=MIN_AGE_S)
        init, containers, volumes = more[0], containers + more[1], volumes + more[2]
    pod: Obj = {
        "serviceAccountName": checkpoint_tools.SERVICE_ACCOUNT,
        "automountServiceAccountToken": False,  # calls no Kubernetes API; identity tokens are projected
        "restartPolicy": "Never",
        **checkpoints.lustre_placement(cluster),
        **({"initContainers": init} if init else {}),
        "containers": containers, "volumes": volumes}
    cronjob = obj("batch/v1", "CronJob", NAME, checkpoint_tools.NAMESPACE, labels, spec={
        "schedule": cluster.spec.storage.lustre.checkpoint_sync.schedule, "timeZone": "Etc/UTC",
        "concurrencyPolicy": "Forbid", "startingDeadlineSeconds": 600, "successfulJobsHistoryLimit": 3,
        "failedJobsHistoryLimit": 3,
        "jobTemplate": {"spec": {"backoffLimit": 1, "activeDeadlineSeconds": DEADLINE_S, "template": {
            "metadata": {"labels": {**labels, **checkpoints.pod_labels(bucket)}}, "spec": pod}}}})
    out = [Manifest(cronjob)]
    if peers:
        out.append(replicate.config(list(peers), cluster.spec.storage.lustre.export_path))
    if monitoring:
        out.append(Manifest(obj("monitoring.coreos.com/v1", "PrometheusRule", "gpufleet-checkpoint-sync",
                                checkpoint_tools.NAMESPACE, spec={"groups": [
                                    {"name": "checkpoint-sync", "rules": [a.rule() for a in sync_alerts()]}]}),
                            after=("kube-prometheus-stack",)))
    return Rendered(manifests=out)
