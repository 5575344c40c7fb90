"""Self-healing GPU nodes: which kernel faults quarantine a node and which only alert, the per-pool rate limit, the
pools whose cloud repair is off, and every object against its pinned upstream (CRD digests, config keys)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from components.aws.nodegroup import node_repair
from components.catalog import Cloud
from components.fleet import Cluster
from components.k8s import rules, selfheal, upstream
from components.k8s.inputs import AddonInputs
from components.k8s.model import Obj
from components.k8s.render import render
from components.k8s.upstream import crd
from components.k8s.upstream.derive_manifests import config_keys
from components.repair import cloud_repair, max_unhealthy_nodes
from components.spec import CapacityType, SelfHealingSpec
from components.validate import resolve
from gpufleet.engine.capture import Graph
from tests.components.k8s.conftest import POOL_STACKS, STACKS, clusters
from tests.components.k8s.promql import metric_names
from tests.conftest import example_fleet, of_type


def rendered(cluster: Cluster) -> list[Obj]:
    return [m.obj for m in render(cluster, AddonInputs(kubeconfig="fake-kubeconfig")).manifests]


def monitor_config(cluster: Cluster, key: str = selfheal.NPD_CONFIG) -> dict[str, Any]:
    """One node-problem-detector config from the rendered ConfigMap (the GPU kernel monitor unless ``key``)."""
    [cm] = [o for o in rendered(cluster) if o["kind"] == "ConfigMap" and o["metadata"]["name"] ==
            "gpu-problem-detector-config"]
    return dict(json.loads(cm["data"][key]))


def monitor_configs(cluster: Cluster) -> list[dict[str, Any]]:
    """Every config the detector runs: the GPU kernel monitor and the custom plugin monitors (health gate, DCGM
    health)."""
    return [monitor_config(cluster, k) for k in (selfheal.NPD_CONFIG, *(c.config for c in selfheal.MARKER_CHECKS))]


def matches(config: dict[str, Any], line: str) -> list[dict[str, Any]]:
    """The rules a kernel line triggers, as node-problem-detector matches them: the pattern compiled with `\\z`
    appended against the log buffer (pkg/systemlogmonitor/log_buffer.go), here a buffer of one line."""
    return [r for r in config["rules"] if re.search(r["pattern"] + r"\Z", line)]


def xid_line(xid: int) -> str:
    # the kernel line format of https://docs.nvidia.com/deploy/xid-errors/ ("NVRM: Xid (PCI:<bus id>): <xid>, ...")
    return f"NVRM: Xid (PCI:0000:3b:00): {xid}, pid=2317, name=python, Ch 00000008"


NHC_CLUSTER = clusters("aws-train")[0]

# From the NVIDIA XID catalogue: node faults a reset or a replacement fixes (quarantine), and faults of one
# application (alert only: the node is fine for the next job).
QUARANTINE = {48: "GpuXidFatal", 63: "GpuXidFatal", 64: "GpuXidFatal", 79: "GpuXidFatal", 92: "GpuXidFatal",
              94: "GpuXidFatal", 95: "GpuXidFatal", 74: "GpuNVLinkError"}
ALERT_ONLY = (13, 31, 43, 45, 119)


@pytest.mark.parametrize(("xid", "condition"), QUARANTINE.items())
def test_fatal_xids_set_the_condition_the_health_check_remediates(xid: int, condition: str) -> None:
    config = monitor_config(NHC_CLUSTER)
    permanent = [r for r in matches(config, xid_line(xid)) if r["type"] == "permanent"]
    assert [r["condition"] for r in permanent] == [condition]
    for check in [o for o in rendered(NHC_CLUSTER) if o["kind"] == "NodeHealthCheck"]:
        assert {"type": condition, "status": "True", "duration": "0s"} in check["spec"]["unhealthyConditions"]


@pytest.mark.parametrize("xid", ALERT_ONLY)
def test_application_xids_only_alert(xid: int) -> None:
    hits = matches(monitor_config(NHC_CLUSTER), xid_line(xid))
    assert [(r["type"], r["reason"]) for r in hits] == [("temporary", "GpuXid")]
    [alert] = [a for a in rules.self_healing_alerts() if "GpuXid" in a.expr]
    assert alert.severity == "warning"


def test_nvswitch_sxid_only_alerts_and_unrelated_lines_match_nothing() -> None:
    config = monitor_config(NHC_CLUSTER)
    sxid = "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 37 egress non-posted PRIV error"
    assert [(r["type"], r["reason"]) for r in matches(config, sxid)] == [("temporary", "NVSwitchSXid")]
    assert matches(config, "EXT4-fs (nvme0n1): mounted filesystem") == []
    assert matches(config, "NVRM: Xid (PCI:0000:3b:00): 480, pid=1") == [r for r in config["rules"]
                                                                          if r["reason"] == "GpuXid"]


def test_monitor_config_uses_only_keys_upstream_reads() -> None:
    upstream_keys = set(upstream.manifest(selfheal.NPD_PIN, "kernel-monitor")["keys"])
    assert set(config_keys(monitor_config(NHC_CLUSTER))) <= upstream_keys
    assert config_keys({"rules": [{"tpye": "x"}]}) == ["rules", "rules[].tpye"]  # a typo would show


def test_every_quarantining_condition_is_one_the_monitor_sets() -> None:
    conditions = {c["type"] for config in monitor_configs(NHC_CLUSTER) for c in config["conditions"]}
    for check in [o for o in rendered(NHC_CLUSTER) if o["kind"] == "NodeHealthCheck"]:
        watched = {u["type"] for u in check["spec"]["unhealthyConditions"]}
        assert watched - {"Ready"} == conditions


# ---- rate limit ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("nodes", "pct", "expected"), [
    (16, 10, 1), (19, 10, 1), (20, 10, 2), (1, 10, 1), (8, 100, 8), (10, 1, 1), (200, 1, 2), (64, 25, 16)])
def test_max_unhealthy_rounds_down_but_allows_one(nodes: int, pct: int, expected: int) -> None:
    cluster = _cluster_with("aws-train", nodes=nodes, healing={"max_unhealthy_pct": pct})
    pool = cluster.pools[0]
    assert max_unhealthy_nodes(pool, cluster.spec.addons.self_healing) == expected
    [check] = [o for o in rendered(cluster) if o["kind"] == "NodeHealthCheck" and
               o["spec"]["selector"]["matchLabels"]["gpufleet.io/pool"] == pool.name]
    assert check["spec"]["maxUnhealthy"] == expected


@given(nodes=st.integers(1, 512), pct=st.integers(1, 100))
def test_the_limit_never_lets_more_than_the_share_go_except_the_first(nodes: int, pct: int) -> None:
    pool = NHC_CLUSTER.pools[0]
    pool = type(pool)(**{**pool.__dict__, "spec": pool.spec.model_copy(
        update={"nodes": pool.spec.nodes.model_copy(update={"min": 0, "max": nodes, "initial": 0})})})
    limit = max_unhealthy_nodes(pool, SelfHealingSpec(max_unhealthy_pct=pct))
    assert 1 <= limit <= nodes
    assert limit == 1 or limit * 100 <= nodes * pct < (limit + 1) * 100


def test_the_limit_is_checked_at_the_spec() -> None:
    for bad in ({"max_unhealthy_pct": 0}, {"max_unhealthy_pct": 101}, {"max_parallel_repairs": 0}):
        with pytest.raises(ValidationError):
            SelfHealingSpec(**bad)


# ---- pools whose cloud repair is off ------------------------------------------------------------------------------

@pytest.mark.parametrize(("cloud", "capacity", "cloud_repairs"), [
    (Cloud.AWS, CapacityType.CAPACITY_BLOCK, False), (Cloud.AWS, CapacityType.ON_DEMAND, True),
    (Cloud.AWS, CapacityType.RESERVATION, True), (Cloud.AWS, CapacityType.SPOT, True),
    (Cloud.GCP, CapacityType.FLEX_START, False), (Cloud.GCP, CapacityType.RESERVATION, True),
    (Cloud.GCP, CapacityType.ON_DEMAND, True), (Cloud.AZURE, CapacityType.RESERVATION, True),
    (Cloud.AZURE, CapacityType.SPOT, True)])
def test_cloud_repair_by_capacity(cloud: Cloud, capacity: CapacityType, cloud_repairs: bool) -> None:
    assert cloud_repair(cloud, capacity).enabled is cloud_repairs


def _ready_watched(cluster: Cluster, pool: str) -> bool:
    [check] = [o for o in rendered(cluster) if o["kind"] == "NodeHealthCheck" and o["metadata"]["name"] ==
               f"gpu-{pool}"]
    return any(u["type"] == "Ready" for u in check["spec"]["unhealthyConditions"])


@pytest.mark.parametrize(("stack", "pool", "ready"), [
    ("aws-train", "h100", True), ("aws-train", "a100-eval", False),  # capacity block / on demand
    ("gcp-train", "h200", True), ("gcp-train", "h100", False),  # flex-start / reservation
    ("azure-train", "h100", False)])
def test_the_health_check_reboots_not_ready_nodes_only_where_the_cloud_does_not_repair(
        stack: str, pool: str, ready: bool) -> None:
    [cluster] = clusters(stack)
    assert {p.name for p in cluster.pools} >= {pool}
    assert _ready_watched(cluster, pool) is ready


@pytest.mark.parametrize("stack", ["aws-train", "gcp-train"])
def test_the_cloud_repair_follows_the_capacity(graphs: dict[str, Graph], stack: str) -> None:
    [cluster] = clusters(stack)
    healing = cluster.spec.addons.self_healing
    for pool in cluster.pools:
        off = pool.capacity in (CapacityType.CAPACITY_BLOCK, CapacityType.FLEX_START)
        if stack == "aws-train":
            [group] = [r for r in of_type(graphs[stack], "eks/nodeGroup:NodeGroup")
                       if r.name == f"train-{pool.name}-ng"]
            assert group.inputs["nodeRepairConfig"] == ({"enabled": False} if off else {
                "enabled": True, "maxUnhealthyNodeThresholdPercentage": healing.max_unhealthy_pct,
                "maxParallelNodesRepairedCount": healing.max_parallel_repairs})
        else:
            [np] = [r for r in of_type(graphs[stack], "container/nodePool:NodePool")
                    if r.name == f"train-{pool.name}-np"]
            assert np.inputs["management"]["autoRepair"] is not off


def test_self_healing_off_removes_the_engine_and_the_cloud_repair() -> None:
    cluster = _cluster_with("aws-train", healing={"enabled": False})
    objs = rendered(cluster)
    assert not [o for o in objs if o["kind"] in ("NodeHealthCheck", "Subscription", "DaemonSet")
                and "problem-detector" in o["metadata"]["name"] + o["kind"] + o["metadata"].get("namespace", "")]
    assert not [o for o in objs if o["kind"] == "NodeHealthCheck"]
    assert all(node_repair(p, cluster.spec.addons.self_healing) == {"enabled": False} for p in cluster.pools)


# ---- upstream pins ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("stack", POOL_STACKS)  # self-healing GPU nodes: the fleet queue's manager has none
def test_every_custom_resource_matches_its_crd_digest(stack: str) -> None:
    for cluster in clusters(stack):
        ours = [o for o in rendered(cluster) if o["apiVersion"].split("/")[0] in (
            "remediation.medik8s.io", "self-node-remediation.medik8s.io", "operators.coreos.com")]
        assert {o["kind"] for o in ours} == {"NodeHealthCheck", "Subscription", "SelfNodeRemediationTemplate",
                                             "SelfNodeRemediationConfig", "OperatorGroup"}
        for o in ours:
            assert crd.problems(o) == []


def test_subscriptions_pin_the_bundles_operatorhub_serves() -> None:
    subs = {o["metadata"]["name"]: o["spec"] for o in rendered(NHC_CLUSTER) if o["kind"] == "Subscription"}
    # k8s-operatorhub/community-operators: operators/node-healthcheck-operator/0.12.0, self-node-remediation/0.13.0
    assert subs["node-healthcheck-operator"]["startingCSV"] == "node-healthcheck-operator.v0.12.0"
    assert subs["self-node-remediation"]["startingCSV"] == "self-node-remediation.v0.13.0"
    assert {s["source"] for s in subs.values()} == {"operatorhubio-catalog"}
    assert {s["installPlanApproval"] for s in subs.values()} == {"Manual"}  # a pin is not followed past its tag


def test_the_first_pulumi_up_creates_the_checks_before_the_install_plans_are_approved() -> None:
    # With Manual approval OLM installs nothing until someone approves, so a NodeHealthCheck, template or config
    # applied then would find no CRD and fail `pulumi up`: each waits on its CRD, applied by Pulumi from the pinned tag.
    out = render(NHC_CLUSTER, AddonInputs(kubeconfig="fake-kubeconfig"))
    files = {f.name: f.url for f in out.files}
    nhc = "https://raw.githubusercontent.com/medik8s/node-healthcheck-operator/v0.12.0/config/crd/bases/"
    snr = "https://raw.githubusercontent.com/medik8s/self-node-remediation/v0.13.0/config/crd/bases/"
    expected = {  # the CRD files at the tags the Subscriptions pin (startingCSV v0.12.0 / v0.13.0)
        "NodeHealthCheck": nhc + "remediation.medik8s.io_nodehealthchecks.yaml",
        "SelfNodeRemediationTemplate": snr + "self-node-remediation.medik8s.io_selfnoderemediationtemplates.yaml",
        "SelfNodeRemediationConfig": snr + "self-node-remediation.medik8s.io_selfnoderemediationconfigs.yaml"}
    medik8s = [m for m in out.manifests if m.obj["apiVersion"].split("/")[0].endswith("medik8s.io")]
    assert {m.kind for m in medik8s} == set(expected)
    for m in medik8s:
        assert expected[m.kind] in [files.get(a) for a in m.after], m.name


def test_olm_is_installed_from_its_release_assets_not_the_stale_quickstart() -> None:
    out = render(NHC_CLUSTER, AddonInputs(kubeconfig="fake-kubeconfig"))
    olm = [f for f in out.files if f.name.startswith("olm-")]
    # deploy/upstream/quickstart/install.sh at v0.46.0: ${default_base_url}/${release}/crds.yaml, then olm.yaml
    base = "https://github.com/operator-framework/operator-lifecycle-manager/releases/download/v0.46.0/"
    assert [(f.url, f.after) for f in olm] == [(base + "crds.yaml", ()), (base + "olm.yaml", ("olm-crds",))]
    assert not [f for f in out.files if "quickstart" in f.url]


def test_snr_runs_in_a_privileged_namespace_of_its_own() -> None:
    """The release's `operators` namespace enforces Pod Security baseline (deploy/upstream/values.yaml
    operator_namespace_psa at v0.46.0), which refuses SNR's privileged, hostPID agent: Medik8s gets its own
    namespace, labelled privileged, with an OperatorGroup for every namespace (both CSVs: AllNamespaces only)."""
    operators = next(o for o in upstream.digest("olm")["release"]["objects"] if o["name"] == "operators")
    assert operators["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"
    objs = rendered(NHC_CLUSTER)
    subs = [o for o in objs if o["kind"] == "Subscription"]
    [ns] = {o["metadata"]["namespace"] for o in subs}
    assert ns != "operators"
    [namespace] = [o for o in objs if o["kind"] == "Namespace" and o["metadata"]["name"] == ns]
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    [group] = [o for o in objs if o["kind"] == "OperatorGroup"]
    assert group["metadata"]["namespace"] == ns and "targetNamespaces" not in group["spec"]


@pytest.mark.parametrize("stack", STACKS)
def test_snrs_agent_tolerates_every_taint_of_every_gpu_pool(stack: str) -> None:
    for cluster in clusters(stack):
        configs = [o for o in rendered(cluster) if o["kind"] == "SelfNodeRemediationConfig"]
        if not (cluster.pools and cluster.spec.addons.self_healing.enabled):
            assert not configs
            continue
        [config] = configs
        # the one name SNR's controller reads (api/v1alpha1/selfnoderemediationconfig_types.go ConfigCRName)
        assert config["metadata"]["name"] == "self-node-remediation-config"
        tolerated = {t["key"] for t in config["spec"]["customDsTolerations"] if t["operator"] == "Exists"}
        assert not [t for t in config["spec"]["customDsTolerations"] if "effect" in t or "value" in t]
        for pool in cluster.pools:
            assert {t.key for t in pool.spec.taints} | {"nvidia.com/gpu"} <= tolerated, pool.name


def test_the_detector_runs_the_released_image_on_gpu_pools_only() -> None:
    [ds] = [o for o in rendered(NHC_CLUSTER) if o["kind"] == "DaemonSet" and o["metadata"]["name"] ==
            "gpu-problem-detector"]
    [workload] = upstream.manifest(selfheal.NPD_PIN, "daemonset")["workloads"]
    spec = ds["spec"]["template"]["spec"]
    # the released version (version.txt at v1.34.4), from the repository upstream's manifest pulls from; the
    # manifest's own tag is an example's (v0.8.19)
    assert spec["containers"][0]["image"] == "registry.k8s.io/node-problem-detector/node-problem-detector:v1.34.4"
    assert workload["containers"][0]["image"].endswith(":v0.8.19")
    [term] = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchExpressions"][0]["values"] == sorted(p.name for p in NHC_CLUSTER.pools)
    assert f"--config.system-log-monitor=/config/{selfheal.NPD_CONFIG}" in spec["containers"][0]["command"]


def test_alerts_name_the_detectors_reasons() -> None:
    configs = monitor_configs(NHC_CLUSTER)
    permanent = {r["reason"] for c in configs for r in c["rules"] if r["type"] == "permanent"}
    temporary = {r["reason"] for c in configs for r in c["rules"] if r["type"] == "temporary"}
    [page] = [a for a in rules.self_healing_alerts() if a.severity == "critical"]
    [warn] = [a for a in rules.self_healing_alerts() if a.severity == "warning"]
    assert metric_names(page.expr) == {"problem_gauge"} and metric_names(warn.expr) == {"problem_counter"}
    assert set(re.search(r'reason=~"([^"]+)"', page.expr)[1].split("|")) == permanent
    assert set(re.search(r'reason=~"([^"]+)"', warn.expr)[1].split("|")) == temporary


def _cluster_with(stack: str, nodes: int | None = None, healing: dict[str, Any] | None = None) -> Cluster:
    fleet = example_fleet(stack)
    cluster = fleet["clusters"][0]
    if nodes is not None:
        cluster["node_pools"] = [{**cluster["node_pools"][1], "nodes": {"min": 0, "max": nodes}}]
        cluster["addons"]["kueue_teams"] = []
        cluster.pop("network_profiles", None)
    cluster["addons"]["self_healing"] = healing or {}
    return resolve(fleet).clusters[0]
