"""Alert rules and dashboards: every PromQL query parses and names only metrics the exporters publish."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from components.k8s import dcgmhealth, healthgate, probe, rules, sync, upstream
from components.k8s.healthgate import NAMESPACE
from components.k8s.kueue import manager_config
from components.k8s.nvidia import dcgm_metric_names
from components.k8s.observability import dashboard_files
from components.k8s.storage import CSI
from gpufleet.engine.capture import Graph
from tests.components.k8s.conftest import DATA, STACKS
from tests.components.k8s.promql import metric_names
from tests.conftest import of_type

# metric names derived from the exporters' sources (pins.yaml `metrics`)
DERIVED = ("kueue", "kube-state-metrics", "node-exporter")


def exported() -> set[str]:
    """What the cluster's exporters publish: the DCGM exporter's configured fields, the names derived from the
    pinned sources of Kueue and kube-state-metrics, the probe's, the health gate's and the DCGM health watcher's
    own series, and the rest with their sources in exporter_metrics.yaml."""
    sources = yaml.safe_load((DATA / "exporter_metrics.yaml").read_text())
    return (set(dcgm_metric_names()) | {m for pin in DERIVED for m in upstream.digest(pin)["metrics"]}
            | set(probe.metric_names()) | set(healthgate.metric_names())
            | set(re.findall(r"# TYPE (\w+) ", dcgmhealth.script()))  # what the DCGM health watcher writes
            | {m for source in sources.values() for m in source["metrics"]})


def all_alerts() -> list[rules.Alert]:
    lustre = [a for cloud in CSI for a in rules.lustre_alerts(CSI[cloud][0])]
    return (rules.gpu_alerts() + rules.kueue_alerts() + lustre + rules.self_healing_alerts()
            + rules.health_gate_alerts(NAMESPACE) + probe.probe_alerts() + dcgmhealth.alerts()
            + sync.sync_alerts())


def dashboard_queries() -> Iterator[tuple[str, str]]:
    for path in dashboard_files():
        for panel in json.loads(path.read_text())["panels"]:
            for target in panel["targets"]:
                yield f"{path.name}: {panel['title']}", target["expr"]


@pytest.mark.parametrize("alert", all_alerts(), ids=lambda a: a.name)
def test_alert_parses_and_names_exported_metrics(alert: rules.Alert) -> None:
    names = metric_names(alert.expr)
    assert names, f"{alert.name} reads no metric"
    assert names <= exported(), f"{alert.name} reads metrics no exporter publishes: {sorted(names - exported())}"


@pytest.mark.parametrize(("where", "query"), list(dashboard_queries()), ids=lambda v: str(v)[:60])
def test_dashboard_query_parses_and_names_exported_metrics(where: str, query: str) -> None:
    names = metric_names(query)
    assert names and names <= exported(), f"{where}: {sorted(names - exported())}"


def test_the_checker_catches_typos_and_syntax() -> None:
    assert metric_names('rate(DCGM_FI_DEV_XID_ERROR{gpu="0"}[5m]) > 0') - exported() == {"DCGM_FI_DEV_XID_ERROR"}
    with pytest.raises(ValueError):
        metric_names("sum by (node (up)")


def test_health_alerts_cover_the_issue() -> None:
    names = {a.name for a in all_alerts()}
    assert {"GpuXidError", "GpuEccDoubleBitErrors", "GpuRowRemapFailure", "GpuThermalThrottling",
            "GpuPowerThrottling", "GpuFallenOffBus", "DcgmExporterDown", "NodeNotReady", "KueueAdmissionWaitHigh",
            "KueuePendingGpuWorkloads", "LustreMountErrors"} <= names


@pytest.mark.parametrize("stack", STACKS)
def test_the_preview_carries_the_rules_and_dashboards(graphs: dict[str, Graph], stack: str) -> None:
    [rule] = [r for r in of_type(graphs[stack], ":PrometheusRule")
              if r.inputs["metadata"]["name"] == "gpufleet-gpu-health"]
    groups: list[dict[str, Any]] = rule.inputs["spec"]["groups"]
    assert {g["name"] for g in groups} >= {"gpu-health", "kueue"}
    for group in groups:
        for r in group["rules"]:
            assert metric_names(r["expr"]) <= exported()
    boards = [r for r in of_type(graphs[stack], "core/v1:ConfigMap")
              if r.inputs["metadata"]["labels"].get("grafana_dashboard") == "1"]
    assert len(boards) == len(dashboard_files())
    for board in boards:
        [text] = board.inputs["data"].values()
        assert json.loads(text)["panels"]


def test_the_dcgm_metric_set_names_fields_the_pinned_exporter_knows() -> None:
    fields = set(upstream.digest("go-dcgm")["metrics"])
    assert set(dcgm_metric_names()) <= fields
    version = upstream.digest("gpu-operator")["chart"]["defaults"]["dcgmExporter.version"]
    assert version.startswith(upstream.pin("dcgm-exporter")["git"]["ref"] + "-")  # the exporter the operator runs


def test_derived_metric_names_are_what_the_exporters_spell() -> None:
    # spelled as in Kueue's metrics reference (https://kueue.sigs.k8s.io/docs/reference/metrics/) and
    # kube-state-metrics docs/metrics/workload/job-metrics.md
    kueue = set(upstream.digest("kueue")["metrics"])
    assert {"kueue_pending_workloads", "kueue_admission_wait_time_seconds_bucket",
            "kueue_admission_wait_time_seconds_count", "kueue_admitted_active_workloads"} <= kueue
    assert "kueue_admission_wait_time_seconds" not in kueue  # a histogram is its _bucket/_sum/_count series
    ksm = set(upstream.digest("kube-state-metrics")["metrics"])
    assert {"kube_job_status_failed", "kube_node_status_condition"} <= ksm


def test_one_dashboard_per_concern_with_unique_panels() -> None:
    boards = {path.stem: json.loads(path.read_text()) for path in dashboard_files()}
    # the issue's concerns: fleet GPU health, fabric, storage, queues
    assert {"gpu-health", "interconnect-throughput", "checkpoint-io", "team-quota-and-queues"} <= set(boards)
    for name, board in boards.items():
        ids = [p["id"] for p in board["panels"]]
        assert len(ids) == len(set(ids)), name
    assert len({board["uid"] for board in boards.values()}) == len(boards)
    storage = {m for p in boards["checkpoint-io"]["panels"] for t in p["targets"] for m in metric_names(t["expr"])}
    assert set(probe.metric_names()) <= storage  # every probe series is on the storage dashboard


def test_the_cluster_queue_metrics_the_dashboards_read_are_switched_on() -> None:
    # Kueue publishes these only with metrics.enableClusterQueueResources (apis/config/v1beta2/configuration_types.go)
    gated = {"kueue_cluster_queue_resource_usage", "kueue_cluster_queue_nominal_quota"}
    read = {m for _, query in dashboard_queries() for m in metric_names(query)}
    assert gated & read
    config = yaml.safe_load(manager_config(["batch/job"]))
    assert config["metrics"]["enableClusterQueueResources"] is True
