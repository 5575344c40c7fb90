"""DCGM health -> quarantine: the watcher's shell runs for real here against a FAKE dcgmi that prints CONSTRUCTED
`dcgmi health --check --json` output (built from the keys and result names derived from DCGM v4.2.3's source, not
recorded from a GPU), and node-problem-detector's check script runs for real on the marker it leaves. A Failure
quarantines (the condition, in every GPU pool's NodeHealthCheck, under the pool's limit); a Warning and a monitoring
outage (host engine unreachable) only publish metrics that alert."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from components.fleet import Cluster
from components.k8s import dcgmhealth, nvidia, observability, rules, selfheal, upstream
from components.k8s.model import Obj
from tests.components.k8s.conftest import STACKS, clusters
from tests.components.k8s.promql import metric_names
from tests.components.k8s.test_gate_quarantine import (
    PLUGIN_NON_OK,
    PLUGIN_OK,
    _sh,
    check_script,
    detector,
    gate_pods,
    host_mounts,
    plugin_config,
)
from tests.components.k8s.test_selfheal import NHC_CLUSTER, _cluster_with, rendered

CONDITION = "GpuDcgmHealthFailed"  # docs/addons.md "Self-healing GPU nodes", step 1
# dcgmlib/dcgm_structs.h at v4.2.3: DCGM_HEALTH_RESULT_PASS = 0, _WARN = 10, _FAIL = 20; dcgmi/Health.cpp
# HelperHealthToString prints them as Healthy / Warning / Failure
PASS, WARN, FAIL = 0, 10, 20
# dcgmi's main() returns the dcgmReturn_t (dcgmi/main_dcgmi.cpp); a refused connection is DCGM_ST_CONNECTION_NOT_VALID
# = -21 (Command::Execute -> DoExecuteConnectionFailure), i.e. exit status 256 - 21
UNREACHABLE_EXIT = 256 - 21


def check_output(overall: str, gpu: str = "", system: str = "Memory system", message: str = "") -> str:
    """CONSTRUCTED `dcgmi health -c -j` output: the tree Health::GenerateOutputFromResponse builds through
    DcgmiOutput (body / children / value / overflow / header), printed as jsoncpp's toStyledString does (3-space
    indent, ``"key" : value``, object keys sorted: a std::map)."""
    body: dict[str, Any] = {"Overall Health": {"value": overall}}
    if gpu:
        body["GPU"] = {"children": {"0": {"value": gpu, "children": {"Errors": {"children": {
            system: {"value": gpu, "overflow": [message]}}}}}}}
    tree = {"body": body, "header": ["Health Monitor Report"]}
    return json.dumps(tree, indent=3, separators=(",", " : "), sort_keys=True) + "\n"


def test_the_constructed_output_uses_only_what_dcgm_prints() -> None:
    cpp = upstream.digest("dcgm")["cpp"]
    keys = set(cpp["dcgmi/DcgmiOutput.cpp"]["json_keys"]) | set(cpp["dcgmi/DcgmiOutput.h"]["json_keys"])
    tree = json.loads(check_output("Failure", "Failure", message="x"))
    assert {"body", "header"} <= keys and {"value", "children", "overflow"} <= keys
    assert set(tree) <= keys
    assert cpp["dcgmi/Health.cpp"]["defines"]["OVERALL_HEALTH_TAG"] == "Overall Health"
    names = cpp["dcgmi/Health.cpp"]["returns"]["HelperHealthToString"]
    values = cpp["dcgmlib/dcgm_structs.h"]["enums"]
    assert {names[k]: values[k] for k in names} == {"Healthy": PASS, "Warning": WARN, "Failure": FAIL}


class Node:
    """A temporary directory standing in for the node's /run/gpufleet/dcgm-health (the watcher's and the detector's
    shared host directory), and a FAKE dcgmi on PATH: `--check` prints ``output`` and exits ``status``; every call
    is logged."""

    def __init__(self, tmp: Path):
        self.host, self.bin, self.log = tmp / "host", tmp / "bin", tmp / "dcgmi.log"
        self.host.mkdir()
        self.bin.mkdir()
        fake = self.bin / "dcgmi"
        fake.write_text(f'#!/bin/sh\necho "$*" >> {self.log}\n'
                        f'case "$*" in *--check*) cat {tmp}/out; exit $(cat {tmp}/status) ;; esac\n'
                        f'exit $(cat {tmp}/set_status 2>/dev/null || echo 0)\n')
        fake.chmod(0o755)
        self.tmp = tmp

    def check(self, output: str, status: int = 0, set_status: int = 0) -> subprocess.CompletedProcess[str]:
        (self.tmp / "out").write_text(output)
        (self.tmp / "status").write_text(str(status))
        (self.tmp / "set_status").write_text(str(set_status))
        self.log.write_text("")
        env = {**os.environ, "PATH": f"{self.bin}:{os.environ['PATH']}", **watcher_env(),
               "MARKER_DIR": str(self.host)}
        return subprocess.run(["/bin/sh", "-c", dcgmhealth.script(), "dcgm-health.sh", "once"], env=env, text=True,
                              capture_output=True, check=False, timeout=30)

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines()

    def samples(self) -> dict[str, float]:
        text = (self.host / "gpufleet_dcgm_health.prom").read_text()
        assert not list(self.host.glob("*.tmp"))
        return {m[0]: float(m[1]) for m in re.findall(r"^(\w+) (\S+)$", text, re.MULTILINE)}

    def condition(self, cluster: Cluster = NHC_CLUSTER) -> subprocess.CompletedProcess[str]:
        """node-problem-detector's check script for the DCGM condition, as rendered, on this node's directory."""
        spec = detector(cluster)
        [in_detector] = [p for h, p in host_mounts(spec, spec["containers"][0]).items()
                         if h == watcher_host_dir(cluster)]
        return _sh(check_script(cluster, CONDITION), in_detector, self.tmp, os.environ.copy())


def watcher(cluster: Cluster = NHC_CLUSTER) -> Obj:
    [ds] = [o for o in rendered(cluster) if o["kind"] == "DaemonSet" and o["metadata"]["name"] == "gpu-dcgm-health"]
    return ds


def watcher_env(cluster: Cluster = NHC_CLUSTER) -> dict[str, str]:
    [container] = watcher(cluster)["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e["value"] for e in container["env"]}


def watcher_host_dir(cluster: Cluster) -> str:
    spec = watcher(cluster)["spec"]["template"]["spec"]
    [container] = spec["containers"]
    [(host, seen)] = [(h, p) for h, p in host_mounts(spec, container).items()]
    assert seen == watcher_env(cluster)["MARKER_DIR"] and host.startswith("/run/")  # cleared at boot
    return host


def test_healthy_and_warning_change_no_marker_and_publish_the_result(tmp_path: Path) -> None:
    node = Node(tmp_path)
    assert node.check(check_output("Healthy")).returncode == 0
    assert node.samples()["gpufleet_dcgm_health_result"] == PASS
    assert node.samples()["gpufleet_dcgm_health_check_success"] == 1
    assert node.condition().returncode == PLUGIN_OK
    # a Warning whose message says "Failure" somewhere is still a Warning: only the overall value counts
    node.check(check_output("Warning", "Warning", "PCIe system", "Failure to keep up: replay rate 9/s"))
    assert node.samples()["gpufleet_dcgm_health_result"] == WARN
    assert not (node.host / "failed").exists() and node.condition().returncode == PLUGIN_OK


def test_a_failure_sets_the_condition_until_the_reboot(tmp_path: Path) -> None:
    node = Node(tmp_path)
    node.check(check_output("Failure", "Failure", "Memory system", "Volatile DBEs detected"))
    assert node.samples()["gpufleet_dcgm_health_result"] == FAIL
    cond = node.condition()
    assert (cond.returncode, cond.stdout.startswith("DCGM Failure: Memory system;")) == (PLUGIN_NON_OK, True)
    assert len(cond.stdout) <= plugin_config(NHC_CLUSTER, CONDITION)["pluginConfig"]["max_output_length"]
    node.check(check_output("Healthy"))  # aged out of DCGM's sample window: not a repair
    assert node.condition().returncode == PLUGIN_NON_OK
    (node.host / "failed").unlink()  # the reboot empties /run
    assert node.condition().returncode == PLUGIN_OK


def failing_gpus(message: str) -> str:
    """CONSTRUCTED: GPU 0 failed its NVLink watch, GPU 1 its memory watch and warned on PCIe (systems keyed as
    Health::HelperSystemToString spells them), every incident with ``message``."""
    gpus = {"0": {"NVLINK system": "Failure"}, "1": {"Memory system": "Failure", "PCIe system": "Warning"}}
    body: dict[str, Any] = {"Overall Health": {"value": "Failure"}, "GPU": {"children": {
        gpu: {"value": "Failure", "children": {"Errors": {"children": {
            system: {"value": health, "overflow": [message]} for system, health in systems.items()}}}}
        for gpu, systems in gpus.items()}}}
    return json.dumps({"body": body, "header": ["Health Monitor Report"]}, indent=3, separators=(",", " : "),
                      sort_keys=True)


def test_the_condition_names_the_failed_systems(tmp_path: Path) -> None:
    node = Node(tmp_path)
    node.check(failing_gpus('Detected 2 "volatile" DBE(s) in GPU 1 [link 3], Failure'))
    message = node.condition().stdout
    assert message.startswith("DCGM Failure: ") and "NVLINK system" in message and "Memory system" in message
    assert "PCIe" not in message and "Overall" not in message
    # none of DCGM v4.2.3's 126 message templates (dcgmlib/dcgm_errors.h *_MSG) has a brace; if one did, the list
    # would come out empty: the node is still quarantined
    (node.host / "failed").unlink()
    node.check(failing_gpus("a {brace}"))
    assert node.condition().returncode == PLUGIN_NON_OK


@pytest.mark.parametrize(("output", "status"), [
    ("Error: unable to establish a connection to the specified host: nvidia-dcgm:5555\n", UNREACHABLE_EXIT),
    ("Error: Health watches not enabled. Please enable watches. \n", 256 - 3),  # DCGM_ST_GENERIC_ERROR = -3
    ("", 0),  # no result printed at all
])
def test_a_monitoring_outage_quarantines_nothing_and_sets_the_watches_again(tmp_path: Path, output: str,
                                                                              status: int) -> None:
    node = Node(tmp_path)
    assert node.check(output, status, set_status=status).returncode == 0
    got = node.samples()
    assert got["gpufleet_dcgm_health_check_success"] == 0 and "gpufleet_dcgm_health_result" not in got
    assert not (node.host / "failed").exists() and node.condition().returncode == PLUGIN_OK
    host = watcher_env()["DCGM_HOST"]
    # at start, the check, and once more after the check got nothing (a restarted host engine forgets watches)
    assert node.calls() == [f"health --host {host} --set a", f"health --host {host} --check --json",
                            f"health --host {host} --set a"]


def test_the_watcher_speaks_dcgmi_health_as_v4_2_3_parses_it() -> None:
    parser = upstream.digest("dcgm")["cpp"]["dcgmi/CommandLineParser.cpp"]["tclap"]["ProcessHealthCommandLine"]
    longs = {a["long"] for a in parser["args"]}
    used = set(re.findall(r"dcgmi health((?: --?[a-z-]+(?: \S+)?)+)", dcgmhealth.script()))
    flags = {f for call in used for f in re.findall(r"--([a-z-]+)", call)}
    assert flags and flags <= longs
    assert dcgmhealth.WATCHES in parser["cases"]  # "a": every watch (the --set letters it switches on)


def test_the_watcher_runs_dcgms_own_client_against_the_operators_host_engine() -> None:
    defaults = upstream.digest("gpu-operator")["chart"]["defaults"]
    dcgm = upstream.digest("dcgm")
    [container] = watcher()["spec"]["template"]["spec"]["containers"]
    repo_image, tag = container["image"].rsplit(":", 1)
    assert repo_image == f"{defaults['dcgm.repository']}/{defaults['dcgm.image']}" and tag == defaults["dcgm.version"]
    # DCGM's docker/Makefile tags <DCGM version>-1-<os>; the Dockerfile of that os is the one the digest read
    version, os_name = re.fullmatch(r"(\d+\.\d+\.\d+)-\d+-(.+)", tag).groups()  # type: ignore[union-attr]
    assert f"v{version}" == dcgm["source"]["ref"]
    docker = dcgm["dockerfiles"][f"docker/Dockerfile.{os_name}"]
    assert container["command"][:1] != docker["entrypoint"][:1]  # not the image's nv-hostengine
    [service] = upstream.manifest("gpu-operator", "dcgm-service")["services"]
    assert service["internalTrafficPolicy"] == "Local"  # this node's host engine, never another node's
    name, port = watcher_env()["DCGM_HOST"].split(":")
    assert name == service["name"] and int(port) in docker["expose"]
    assert int(port) == int(dcgm["cpp"]["dcgmlib/dcgm_structs.h"]["defines"]["DCGM_HE_PORT_NUMBER"])
    assert watcher()["metadata"]["namespace"] == nvidia.NAMESPACE  # the Service's namespace (short name resolves)


@pytest.mark.parametrize("stack", STACKS)
def test_the_host_engine_runs_and_every_gpu_pools_check_quarantines_on_a_failure(stack: str) -> None:
    for cluster in clusters(stack):
        if not cluster.pools:
            continue
        values = nvidia.gpu_operator_values(cluster, monitoring=True)
        healing = cluster.spec.addons.self_healing.enabled
        assert values["dcgm"] == {"enabled": healing}
        assert "dcgm.enabled" in upstream.digest("gpu-operator")["chart"]["keys"]
        if not healing:
            continue
        spec = detector(cluster)
        assert watcher_host_dir(cluster) in host_mounts(spec, spec["containers"][0])
        [rule] = plugin_config(cluster, CONDITION)["rules"]
        checks = [o["spec"] for o in rendered(cluster) if o["kind"] == "NodeHealthCheck"]
        assert len(checks) == len(cluster.pools)
        for check in checks:
            assert {"type": rule["condition"], "status": "True", "duration": "0s"} in check["unhealthyConditions"]
        seen = observability.kps_values(cluster)["prometheus-node-exporter"]
        [mount] = [m for m in seen["extraHostVolumeMounts"] if m["hostPath"] == watcher_host_dir(cluster)]
        assert f"--collector.textfile.directory={mount['mountPath']}" in seen["extraArgs"]


def test_self_healing_off_runs_no_watcher_and_no_host_engine() -> None:
    cluster = _cluster_with("aws-train", nodes=4, healing={"enabled": False})
    assert not [o for o in rendered(cluster) if o["metadata"]["name"] == "gpu-dcgm-health"]
    assert nvidia.gpu_operator_values(cluster, monitoring=True)["dcgm"] == {"enabled": False}


@pytest.mark.parametrize(("nodes", "pct", "limit"), [(19, 10, 1), (20, 10, 2), (1, 10, 1), (64, 25, 16)])
def test_dcgm_failures_are_remediated_under_the_pools_limit(nodes: int, pct: int, limit: int) -> None:
    # limit = share of nodes.max rounded down, at least 1 (docs/addons.md "Rate limits"), by hand
    cluster = _cluster_with("aws-train", nodes=nodes, healing={"max_unhealthy_pct": pct})
    [check] = [o["spec"] for o in rendered(cluster) if o["kind"] == "NodeHealthCheck"]
    assert CONDITION in {u["type"] for u in check["unhealthyConditions"]} and check["maxUnhealthy"] == limit


def test_a_failure_pages_a_warning_or_an_outage_only_alerts() -> None:
    [rule] = plugin_config(NHC_CLUSTER, CONDITION)["rules"]
    [page] = [a for a in rules.self_healing_alerts() if a.name == "GpuNodeQuarantined"]
    assert rule["reason"] in re.search(r'reason=~"([^"]+)"', page.expr)[1].split("|")  # type: ignore[index]
    alerts = {a.name: a for a in dcgmhealth.alerts()}
    assert re.search(rf"gpufleet_dcgm_health_result == {WARN}\b", alerts["DcgmHealthWarning"].expr)
    assert metric_names(alerts["DcgmHealthCheckFailing"].expr) == {"gpufleet_dcgm_health_check_success",
                                                                   "gpufleet_dcgm_health_last_check_timestamp_seconds"}
    assert {a.severity for a in alerts.values()} == {"warning"}
    groups = observability.alert_groups(NHC_CLUSTER, lustre=False)
    assert [a.name for a in groups["dcgm-health"]] == list(alerts)


def test_the_marker_checks_share_one_shape() -> None:
    """The gate's and DCGM's monitors differ only in their names, marker and condition (selfheal.MarkerCheck)."""
    configs = [c.monitor() for c in selfheal.MARKER_CHECKS]
    strip = [{**c, "source": "", "conditions": [], "rules": [{**r, "condition": "", "reason": "", "path": ""}
                                                               for r in c["rules"]]} for c in configs]
    assert all(s == strip[0] for s in strip)
    assert len({c.marker_dir for c in selfheal.MARKER_CHECKS}) == len(selfheal.MARKER_CHECKS)


def test_the_gates_dcgm_diagnostic_runs_the_operators_dcgm_image_too() -> None:
    defaults = upstream.digest("gpu-operator")["chart"]["defaults"]
    expected = f"{defaults['dcgm.repository']}/{defaults['dcgm.image']}:{defaults['dcgm.version']}"
    for pod in gate_pods(NHC_CLUSTER):
        [diag] = [c for c in pod["initContainers"] if c["name"] == "dcgm-diag"]
        assert diag["image"] == expected
