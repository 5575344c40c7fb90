"""Health gate -> quarantine: a failed gate run leaves a marker on its node, node-problem-detector's custom plugin
monitor turns it into a node condition, and every GPU pool's NodeHealthCheck remediates that condition under the
pool's limit. The gate's shell and the detector's check script run for real here, against a temporary directory
standing in for the host directory both mount."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from components.fleet import Cluster
from components.k8s import rules, selfheal, upstream
from components.k8s.healthgate import templates
from components.k8s.inputs import AddonInputs
from components.k8s.model import Obj
from components.k8s.render import render
from components.k8s.upstream.derive_manifests import config_keys
from tests.components.k8s.conftest import STACKS, clusters
from tests.components.k8s.promql import metric_names
from tests.components.k8s.test_selfheal import NHC_CLUSTER, _cluster_with, monitor_config, rendered

# node-problem-detector v1.34.4 pkg/custompluginmonitor/types/types.go: OK = 0, NonOK = 1 (condition True)
PLUGIN_OK, PLUGIN_NON_OK = 0, 1


def gate_pods(cluster: Cluster) -> list[Obj]:
    return [d["spec"]["template"]["spec"] for d in templates(render(cluster, AddonInputs(kubeconfig="{}")).manifests)
            if d["kind"] == "Job"]


def detector(cluster: Cluster) -> Obj:
    [ds] = [o for o in rendered(cluster) if o["kind"] == "DaemonSet" and o["metadata"]["name"] ==
            "gpu-problem-detector"]
    return dict(ds["spec"]["template"]["spec"])


def host_mounts(pod: Obj, container: Obj) -> dict[str, str]:
    """Host directory -> where the container sees it, for the pod's hostPath volumes."""
    hosts = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
    return {hosts[m["name"]]: m["mountPath"] for m in container.get("volumeMounts", []) if m["name"] in hosts}


GATE_CONDITION = "GpuHealthGateFailed"  # docs/addons.md "Self-healing GPU nodes", step 1


def plugin_config(cluster: Cluster, condition: str) -> dict[str, Any]:
    """The custom plugin monitor config, among those the detector's --config.custom-plugin-monitor flag names (a
    comma separated list: cmd/options/options.go at the pinned tag), that holds ``condition``."""
    [flag] = [a for a in detector(cluster)["containers"][0]["command"]
              if a.startswith("--config.custom-plugin-monitor=")]
    configs = [monitor_config(cluster, Path(p).name) for p in flag.split("=", 1)[1].split(",")]
    [config] = [c for c in configs if condition in {d["type"] for d in c["conditions"]}]
    return config


def gate_config(cluster: Cluster) -> dict[str, Any]:
    return plugin_config(cluster, GATE_CONDITION)


def check_script(cluster: Cluster, condition: str = GATE_CONDITION) -> str:
    """The script the plugin rule runs, resolved through the detector's mounts to its ConfigMap key."""
    spec = detector(cluster)
    [rule] = plugin_config(cluster, condition)["rules"]
    [mount] = [m for m in spec["containers"][0]["volumeMounts"] if rule["path"].startswith(m["mountPath"] + "/")]
    [volume] = [v for v in spec["volumes"] if v["name"] == mount["name"]]
    assert volume["configMap"]["defaultMode"] & 0o111 == 0o111  # executable: NPD execs the path
    [cm] = [o for o in rendered(cluster) if o["kind"] == "ConfigMap" and
            o["metadata"]["name"] == volume["configMap"]["name"]]
    return str(cm["data"][rule["path"][len(mount["mountPath"]) + 1:]])


@pytest.mark.parametrize("stack", STACKS)
def test_the_gate_and_the_detector_mount_the_same_host_directory(stack: str) -> None:
    for cluster in clusters(stack):
        if not (cluster.pools and cluster.spec.addons.self_healing.enabled):
            continue
        spec = detector(cluster)
        seen = host_mounts(spec, spec["containers"][0])
        for pod in gate_pods(cluster):
            for container in (pod["initContainers"][0], pod["containers"][0]):  # dcgm-diag, nccl-allreduce
                shared = {h: p for h, p in host_mounts(pod, container).items() if h in seen}
                assert len(shared) == 1, container["name"]
                [(host, path)] = shared.items()
                assert seen[host] == path and host.startswith("/run/")  # /run: cleared at boot (FHS 3.0 3.15)
                assert path in container["command"][-1] and path in check_script(cluster)


def _fake_tools(tmp: Path, fail: set[str]) -> dict[str, str]:
    """FAKE torchrun / nv-hostengine / dcgmi on PATH: exit 1 if named in ``fail``, else 0."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("torchrun", "nv-hostengine", "dcgmi"):
        exe = bin_dir / tool
        exe.write_text(f"#!/bin/sh\nexit {1 if tool in fail else 0}\n")
        exe.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "JOB_COMPLETION_INDEX": "0"}


def _sh(script: str, real: str, tmp: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["/bin/sh", "-c", script.replace(real, str(tmp / "host"))], env=env, text=True,
                          capture_output=True, check=False, timeout=30)


def test_a_failed_gate_sets_the_condition_and_a_passing_gate_clears_it(tmp_path: Path) -> None:
    cluster = clusters("aws-train")[0]  # EFA: no fabric prelude in the command
    pod = gate_pods(cluster)[0]
    diag, main = pod["initContainers"][0], pod["containers"][0]
    spec = detector(cluster)
    [(host, in_gate)] = [(h, p) for h, p in host_mounts(pod, main).items()
                         if h in host_mounts(spec, spec["containers"][0])]
    in_detector = host_mounts(spec, spec["containers"][0])[host]
    (tmp_path / "host").mkdir()  # hostPath DirectoryOrCreate
    script = check_script(cluster)

    def run_gate(fail: set[str]) -> int:
        env = _fake_tools(tmp_path, fail)
        first = _sh(diag["command"][-1], in_gate, tmp_path, env)
        return first.returncode or _sh(main["command"][-1], in_gate, tmp_path, env).returncode

    def check() -> subprocess.CompletedProcess[str]:
        return _sh(script, in_detector, tmp_path, os.environ.copy())

    assert check().returncode == PLUGIN_OK
    assert run_gate({"torchrun"}) == 1  # the Job fails too: HealthGateFailed still fires
    assert (check().returncode, "NCCL all-reduce" in check().stdout) == (PLUGIN_NON_OK, True)
    assert run_gate(set()) == 0
    assert check().returncode == PLUGIN_OK
    assert run_gate({"dcgmi"}) == 1
    assert (check().returncode, "DCGM" in check().stdout) == (PLUGIN_NON_OK, True)
    env = _fake_tools(tmp_path, set())
    assert _sh(diag["command"][-1], in_gate, tmp_path, env).returncode == 0  # a passing diag alone clears nothing
    assert check().returncode == PLUGIN_NON_OK
    assert len(check().stdout) <= gate_config(cluster)["pluginConfig"]["max_output_length"]


@pytest.mark.parametrize("condition", [GATE_CONDITION, "GpuDcgmHealthFailed"])  # docs/addons.md, step 1
def test_the_marker_monitors_use_only_keys_upstream_reads(condition: str) -> None:
    config = plugin_config(NHC_CLUSTER, condition)
    assert set(config_keys(config)) <= set(upstream.manifest(selfheal.NPD_PIN, "custom-plugin-monitor")["keys"])
    assert config["plugin"] == "custom"  # the custom plugin monitor's plugin name (config/custom-plugin-monitor.json)
    [rule] = config["rules"]
    # what NPD's CustomPluginConfig.Validate() refuses (pkg/custompluginmonitor/types/config.go at the pinned tag): a
    # permanent rule without a default condition, a rule timeout above the global one
    assert rule["type"] == "permanent" and rule["condition"] in {c["type"] for c in config["conditions"]}
    assert _seconds(rule["timeout"]) <= _seconds(config["pluginConfig"]["timeout"])


def _seconds(duration: str) -> int:
    """A Go duration of whole seconds ("5s")."""
    assert re.fullmatch(r"\d+s", duration), duration
    return int(duration[:-1])


@pytest.mark.parametrize("stack", STACKS)
def test_every_gpu_pools_health_check_quarantines_on_the_gate_condition(stack: str) -> None:
    for cluster in clusters(stack):
        if not (cluster.pools and cluster.spec.addons.self_healing.enabled):
            continue
        [rule] = gate_config(cluster)["rules"]
        checks = {o["spec"]["selector"]["matchLabels"]["gpufleet.io/pool"]: o["spec"] for o in rendered(cluster)
                  if o["kind"] == "NodeHealthCheck"}
        assert set(checks) == {p.name for p in cluster.pools}
        for check in checks.values():
            assert {"type": rule["condition"], "status": "True", "duration": "0s"} in check["unhealthyConditions"]


@pytest.mark.parametrize(("nodes", "pct", "limit"), [(19, 10, 1), (20, 10, 2), (1, 10, 1), (64, 25, 16)])
def test_gate_failures_are_remediated_under_the_pools_limit(nodes: int, pct: int, limit: int) -> None:
    # limit = share of nodes.max rounded down, at least 1 (docs/addons.md "Rate limits"), by hand
    cluster = _cluster_with("aws-train", nodes=nodes, healing={"max_unhealthy_pct": pct})
    [rule] = gate_config(cluster)["rules"]
    [check] = [o["spec"] for o in rendered(cluster) if o["kind"] == "NodeHealthCheck"]
    assert rule["condition"] in {u["type"] for u in check["unhealthyConditions"]}
    assert check["maxUnhealthy"] == limit


def test_a_gate_failure_pages_and_the_job_alert_stays() -> None:
    [rule] = gate_config(NHC_CLUSTER)["rules"]
    [page] = [a for a in rules.self_healing_alerts() if a.name == "GpuNodeQuarantined"]
    assert metric_names(page.expr) == {"problem_gauge"}
    assert rule["reason"] in re.search(r'reason=~"([^"]+)"', page.expr)[1].split("|")
    assert [a.name for a in rules.health_gate_alerts("gpufleet-health")] == ["HealthGateFailed",
                                                                             "HealthGateBusBandwidthLow"]
