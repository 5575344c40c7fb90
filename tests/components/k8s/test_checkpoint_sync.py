"""Checkpoint sync: a CronJob on GCP and Azure only (AWS's data repository association exports by itself), never
overlapping, copying the Lustre export path to the same prefix of the checkpoint bucket as the tools' identity, with
names held to the rclone digest; its schedule is validated before anything is built, with the config path."""

from __future__ import annotations

from typing import Any

import pytest

from components import checkpoint_tools
from components.catalog import Cloud
from components.errors import SpecError
from components.k8s import checkpoints, sync, upstream
from components.k8s.checkpoints import CheckpointBucket
from components.k8s.inputs import AddonInputs, LustreVolume
from components.k8s.render import render
from components.k8s.upstream import crd
from components.validate import resolve
from gpufleet.engine.capture import Graph
from tests.components.k8s.validation import validate
from tests.conftest import example_fleet

STACK = {Cloud.AWS: "aws-train", Cloud.GCP: "gcp-train", Cloud.AZURE: "azure-train"}
BUCKETS = {
    Cloud.AWS: CheckpointBucket(Cloud.AWS, "ckpt-bucket", "us-east-1"),
    Cloud.GCP: CheckpointBucket(Cloud.GCP, "ckpt-bucket", "us-central1"),
    Cloud.AZURE: CheckpointBucket(Cloud.AZURE, "checkpoints", "eastus2", account="ckptaccount", client_id="cid"),
}
VOLUME = LustreVolume("fs-0123/train", {"dnsname": "fs.example", "mountname": "abcd"}, 4800)


def _objects(cloud: Cloud, bucket: CheckpointBucket | None = None, change: dict[str, Any] | None = None,
             lustre: bool = True) -> list[dict]:
    fleet = example_fleet(STACK[cloud])
    fleet["clusters"][0]["storage"]["lustre"].update(change or {})
    fleet["clusters"][0]["addons"]["monitoring"] = False  # the sync alone still brings its namespace and account
    [cluster] = resolve(fleet).clusters
    inputs = AddonInputs(kubeconfig="{}", lustre=VOLUME if lustre else None, checkpoints=bucket)
    return [m.obj for m in render(cluster, inputs).manifests]


def _cronjobs(objs: list[dict]) -> list[dict]:
    return [o for o in objs if o["kind"] == "CronJob"]


@pytest.mark.parametrize("cloud", list(Cloud), ids=lambda c: c.value)
def test_a_cronjob_only_where_lustre_does_not_export_by_itself(cloud: Cloud) -> None:
    jobs = _cronjobs(_objects(cloud, BUCKETS[cloud]))
    assert len(jobs) == (0 if cloud is Cloud.AWS else 1)


@pytest.mark.parametrize("cloud", [Cloud.GCP, Cloud.AZURE], ids=lambda c: c.value)
def test_the_sync_copies_the_export_path_to_its_prefix_never_overlapping(cloud: Cloud) -> None:
    objs = _objects(cloud, BUCKETS[cloud], {"export_path": "ckpt/", "checkpoint_sync": {"schedule": "0 * * * *"}})
    [job] = _cronjobs(objs)
    for o in objs:
        if o["metadata"].get("namespace") == checkpoint_tools.NAMESPACE and o["apiVersion"] in ("v1", "batch/v1"):
            validate(o, "1.33")
    assert (job["spec"]["schedule"], job["spec"]["concurrencyPolicy"]) == ("0 * * * *", "Forbid")
    pod = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    [container] = pod["containers"]
    tool = upstream.digest("rclone")["tool"]
    assert container["image"] == f"{tool['image']}:{tool['tag']}"
    args = container["args"]
    # same prefix as the native export: gcloud --gcs-path-uri=gs://<bucket>/ckpt/, AMLFS archive of /ckpt
    assert args[:4] == ["copy", "--config=", "/lustre/ckpt", f"checkpoints:{BUCKETS[cloud].bucket}/ckpt"]
    assert args[0] in tool["commands"]
    assert {a[2:].split("=")[0] for a in args if a.startswith("--")} <= set(tool["flags"])
    assert pod["serviceAccountName"] == checkpoint_tools.SERVICE_ACCOUNT
    assert [v["persistentVolumeClaim"]["readOnly"] for v in pod["volumes"]] == [True]
    assert [e["name"] for e in container["env"]] == [e["name"] for e in checkpoints.env(BUCKETS[cloud])]
    names = {(o["kind"], o["metadata"]["name"]) for o in objs if o["metadata"].get("namespace") ==
             checkpoint_tools.NAMESPACE}
    assert {("ServiceAccount", "checkpoint-tools"), ("PersistentVolumeClaim", "lustre")} <= names


def test_on_aks_the_sync_goes_where_the_lustre_node_plugin_runs() -> None:
    [job] = _cronjobs(_objects(Cloud.AZURE, BUCKETS[Cloud.AZURE]))
    pod = job["spec"]["jobTemplate"]["spec"]["template"]
    [term] = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"]
    [expr] = term["matchExpressions"]
    plugin = {sku for m in upstream.digest("azurelustre-csi-driver")["manifests"].values()
              for w in m.get("workloads", []) for sku in w.get("nodeIn", {}).get(expr["key"], [])}
    assert expr["key"] == "kubernetes.azure.com/os-sku-effective" and set(expr["values"]) == plugin
    assert {"key": "nvidia.com/gpu", "operator": "Exists"} in pod["spec"]["tolerations"]
    assert pod["metadata"]["labels"]["azure.workload.identity/use"] == "true"
    [gcp] = _cronjobs(_objects(Cloud.GCP, BUCKETS[Cloud.GCP]))
    assert "affinity" not in gcp["spec"]["jobTemplate"]["spec"]["template"]["spec"]


@pytest.mark.parametrize(("bucket", "change", "lustre"), [
    (None, None, True), (BUCKETS[Cloud.GCP], {"checkpoint_sync": {"enabled": False}}, True),
    (BUCKETS[Cloud.GCP], None, False)], ids=["no identity bound", "disabled", "no lustre volume"])
def test_no_cronjob_without_its_parts(bucket: CheckpointBucket | None, change: dict | None, lustre: bool) -> None:
    objs = _objects(Cloud.GCP, bucket, change, lustre)
    assert _cronjobs(objs) == []
    assert not [o for o in objs if o["metadata"].get("namespace") == checkpoint_tools.NAMESPACE]


def test_example_stacks_sync_on_gcp_and_azure_only(graphs: dict[str, Graph]) -> None:
    found = {stack: [r for r in g.resources if r.type == "kubernetes:batch/v1:CronJob" and "checkpoint-sync" in r.name]
             for stack, g in graphs.items()}
    assert {s for s, jobs in found.items() if jobs} == {"gcp-train", "azure-train"}


def test_with_monitoring_a_rule_watches_the_cronjob_it_renders() -> None:
    fleet = example_fleet("gcp-train")
    [cluster] = resolve(fleet).clusters
    objs = [m.obj for m in render(cluster, AddonInputs("{}", lustre=VOLUME, checkpoints=BUCKETS[Cloud.GCP])).manifests]
    [rule] = [o for o in objs if o["kind"] == "PrometheusRule" and o["metadata"]["name"] == "gpufleet-checkpoint-sync"]
    [job] = _cronjobs(objs)
    assert crd.problems(rule) == []
    [alert] = rule["spec"]["groups"][0]["rules"]
    assert f'cronjob="{job["metadata"]["name"]}"' in alert["expr"]
    assert f'namespace="{job["metadata"]["namespace"]}"' in alert["expr"]
    assert not [o for o in _objects(Cloud.GCP, BUCKETS[Cloud.GCP]) if o["kind"] == "PrometheusRule"]  # monitoring off


@pytest.mark.parametrize(("schedule", "ok"), [
    ("*/30 * * * *", True), ("59 23 31 12 6", True), ("0 0 1 1 0", True), ("@hourly", True), ("@every 45m", True),
    ("0 9-17 * jan-mar MON-FRI", True), ("15/20 * ? * ?", True),
    ("60 * * * *", False), ("0 24 * * *", False), ("0 0 0 * *", False), ("0 0 32 * *", False),
    ("0 0 * 13 *", False), ("0 0 * * 7", False), ("*/0 * * * *", False), ("5-1 * * * *", False),
    ("* * * *", False), ("* * * * * *", False), ("@weekl", False), ("TZ=UTC 0 * * * *", False), ("daily", False)])
def test_the_schedule_is_a_kubernetes_cron_schedule(schedule: str, ok: bool) -> None:
    """Bounds and syntax of robfig/cron v3.0.1's standard parser, which the CronJob controller uses (hand-read:
    minute 0-59, hour 0-23, day of month 1-31, month 1-12, day of week 0-6, step >= 1, five fields)."""
    fleet = example_fleet("gcp-train")
    fleet["clusters"][0]["storage"]["lustre"]["checkpoint_sync"] = {"schedule": schedule}
    if ok:
        resolve(fleet)
        return
    with pytest.raises(SpecError) as caught:
        resolve(fleet, "stacks/Pulumi.gcp-train.yaml")
    [message] = [p.render() for p in caught.value.problems]
    assert "clusters[0].storage.lustre.checkpoint_sync.schedule" in message
    assert f"{schedule!r} is not a Kubernetes CronJob schedule" in message and "*/30 * * * *" in message


def test_a_disabled_sync_needs_no_valid_schedule() -> None:
    fleet = example_fleet("azure-train")
    fleet["clusters"][0]["storage"]["lustre"]["checkpoint_sync"] = {"enabled": False, "schedule": "never"}
    resolve(fleet)


def test_the_default_is_every_half_hour() -> None:
    [cluster] = resolve(example_fleet("azure-train")).clusters
    assert sync.wanted(cluster, True, BUCKETS[Cloud.AZURE])
    assert cluster.spec.storage.lustre is not None
    assert cluster.spec.storage.lustre.checkpoint_sync.schedule == "*/30 * * * *"
