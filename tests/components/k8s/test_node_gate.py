"""The gate on new GPU nodes (components/k8s/nodegate.py, data/node_gate.py): what it renders (one DaemonSet per gated
machine type, past every pool taint including its own startup taint, which Kueue's flavors do not tolerate; dcgmi's
flags from the DCGM digest) and what its script does against a FAKE API server (HTTPS on 127.0.0.1, a node and its
pods in memory): a passing diagnostic lifts the startup taint with a JSON patch whose test repeats the taints read;
a failing or missing result leaves the marker the node problem detector turns into the quarantine condition."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from components.k8s import healthgate, nodegate, upstream
from components.k8s.inputs import AddonInputs
from components.k8s.render import render
from components.validate import resolve
from tests.capacity.loopback import listening, self_signed
from tests.components.k8s.conftest import STACKS, clusters
from tests.conftest import example_fleet

TOKEN = "fake-token"
GATE = "gpufleet.io/health-gate"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
STARTUP = {"key": GATE, "value": "pending", "effect": "NoSchedule"}


def _rendered(cluster: Any) -> list[dict[str, Any]]:
    return [m.obj for m in render(cluster, AddonInputs(kubeconfig="k")).manifests]


@pytest.mark.parametrize("stack", STACKS)
def test_every_gated_machine_gets_a_gate_that_passes_every_pool_taint_and_kueue_does_not(stack: str) -> None:
    for cluster in clusters(stack):
        objs = _rendered(cluster)
        gates = [o for o in objs if o["kind"] == "DaemonSet" and o["metadata"]["name"].startswith("gpu-node-gate-")]
        assert len(gates) == len({p.machine.name for p in cluster.pools if p.gated})
        for ds in gates:
            tolerated = {t["key"] for t in ds["spec"]["template"]["spec"]["tolerations"]}
            assert GATE in tolerated and "nvidia.com/gpu" in tolerated
        for flavor in (o for o in objs if o["kind"] == "ResourceFlavor"):
            assert GATE not in {t["key"] for t in flavor["spec"]["tolerations"]}


def test_self_healing_off_means_no_startup_taint_and_no_gate() -> None:
    raw = example_fleet("aws-train")
    raw["clusters"][0].setdefault("addons", {})["self_healing"] = {"enabled": False}
    [cluster] = resolve(raw).clusters
    assert not any(p.gated for p in cluster.pools)
    assert not [o for o in _rendered(cluster) if o["metadata"]["name"].startswith("gpu-node-gate")]


def test_the_diagnostic_uses_only_flags_dcgmi_has() -> None:
    """dcgmi v4.2.3 (the operator's DCGM image): `diag` takes -r, --host and --expectedNumEntities (gpu:N),
    `discovery` -l and --host (dcgmi/CommandLineParser.cpp, digested)."""
    tclap = upstream.digest("dcgm")["cpp"]["dcgmi/CommandLineParser.cpp"]["tclap"]
    diag = {a["long"] for a in tclap["ProcessDiagCommandLine"]["args"]} | {
        a["short"] for a in tclap["ProcessDiagCommandLine"]["args"]}
    query = {a["long"] for a in tclap["ProcessQueryCommandLine"]["args"]} | {
        a["short"] for a in tclap["ProcessQueryCommandLine"]["args"]}
    assert {"r", "host", "expectedNumEntities"} <= diag and {"l", "host"} <= query
    script = nodegate.diag_script(8)
    assert "dcgmi diag --host nvidia-dcgm:5555 -r 2 --expectedNumEntities gpu:8" in script
    assert "dcgmi discovery --host nvidia-dcgm:5555 -l" in script


# ---- the script against a FAKE API server -----------------------------------------------------------------------

class FakeCluster:
    """One node and its pods, as the API server would serve them."""

    def __init__(self, taints: list[dict[str, Any]], gpu_pods: int = 0):
        self.node = {"metadata": {"name": "gpu-0"}, "spec": {"taints": taints}}
        resources = {"limits": {"nvidia.com/gpu": "8"}}
        self.pods = [{"spec": {"nodeName": "gpu-0", "containers": [{"name": "t", "resources": resources}]},
                      "status": {"phase": "Running"}} for _ in range(gpu_pods)]
        self.requests: list[tuple[str, str, Any]] = []

    def patch(self, ops: list[dict[str, Any]]) -> tuple[int, dict[str, Any]]:
        for op in ops:
            here = self.node["spec"].get("taints")
            if op["op"] == "test" and op["path"] == "/spec/taints" and op["value"] != here:
                return 422, {"kind": "Status", "message": "test failed"}
            if op["op"] == "replace" and op["path"] == "/spec/taints":
                self.node["spec"]["taints"] = op["value"]
        return 200, self.node


def _api(fake: FakeCluster) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def reply(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def handle_one(self, method: str) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or "null")
            fake.requests.append((method, unquote(self.path), body))
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                return self.reply(401, {"kind": "Status"})
            if self.path == "/api/v1/nodes/gpu-0":
                if method == "GET":
                    return self.reply(200, fake.node)
                if self.headers.get("Content-Type") != "application/json-patch+json":
                    return self.reply(415, {"kind": "Status"})
                return self.reply(*fake.patch(body))
            if method == "GET" and unquote(self.path) == "/api/v1/pods?fieldSelector=spec.nodeName=gpu-0":
                return self.reply(200, {"items": fake.pods})
            return self.reply(404, {"kind": "Status", "message": self.path})

        def do_GET(self) -> None:
            self.handle_one("GET")

        def do_PATCH(self) -> None:
            self.handle_one("PATCH")

    return Handler


@pytest.fixture
def tls(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("serviceaccount")
    cert, _ = self_signed(d)
    cert.rename(d / "ca.crt")
    (d / "token").write_text(TOKEN + "\n")
    return d


@pytest.fixture
def serve(tls: Path) -> Iterator[Any]:
    with ExitStack() as servers:
        def start(fake: FakeCluster) -> int:
            return int(urlsplit(servers.enter_context(listening(_api(fake), (tls / "ca.crt", tls / "key.pem")))).port
                       or 0)
        yield start


def gate_env() -> dict[str, str]:
    [cluster] = clusters("aws-train")
    [ds] = [o for o in _rendered(cluster) if o["metadata"]["name"] == "gpu-node-gate-p5-48xlarge"]
    [gate] = [c for c in ds["spec"]["template"]["spec"]["containers"] if c["name"] == "gate"]
    return {e["name"]: e["value"] for e in gate["env"] if "value" in e}


def run_gate(serve: Any, tls: Path, fake: FakeCluster, tmp: Path, result: str | None, budget_s: float = 5) -> Any:
    """The gate container's script as the DaemonSet runs it (its env), the diag container's answer already written
    (or none), the marker under a temp directory, the fake server as the API server."""
    work, marker = tmp / "work", tmp / "run" / "failed"
    work.mkdir()
    if result is not None:
        (work / "result").write_text(result + "\n")
    env = {**gate_env(), "NODE_NAME": "gpu-0", "GATE_WORK": str(work), "GATE_MARKER": str(marker),
           "GATE_BUDGET_S": str(budget_s), "GATE_POLL_S": "0.05", "GATE_ONCE": "1",
           "KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT_HTTPS": str(serve(fake)),
           "SERVICEACCOUNT_DIR": str(tls), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, str(nodegate.SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    return done, marker, work


def test_a_passing_diagnostic_opens_the_node(serve: Any, tls: Path, tmp_path: Path) -> None:
    fake = FakeCluster([GPU_TAINT, STARTUP])
    done, marker, work = run_gate(serve, tls, fake, tmp_path, "pass")
    assert done.returncode == 0, done.stdout + done.stderr
    assert fake.node["spec"]["taints"] == [GPU_TAINT]
    [(_, _, ops)] = [r for r in fake.requests if r[0] == "PATCH"]
    assert ops[0] == {"op": "test", "path": "/spec/taints", "value": [GPU_TAINT, STARTUP]}
    assert (work / "request").exists() and not marker.exists()


@pytest.mark.parametrize("result", ["fail: dcgmi diag -r 2 exited 226", None])
def test_a_failed_or_late_diagnostic_keeps_the_node_closed_and_marks_it(serve: Any, tls: Path, tmp_path: Path,
                                                                       result: str | None) -> None:
    fake = FakeCluster([GPU_TAINT, STARTUP])
    done, marker, _ = run_gate(serve, tls, fake, tmp_path, result, budget_s=0.3)
    assert done.returncode == 1
    assert fake.node["spec"]["taints"] == [GPU_TAINT, STARTUP]
    assert not [r for r in fake.requests if r[0] == "PATCH"]
    text = marker.read_text()
    assert text.startswith("health gate on new node failed: ")
    assert ("exited 226" in text) if result else ("no diagnostic result within" in text)
    # the marker is the one the detector's health-gate check reads (its condition quarantines the node)
    assert healthgate.MARKER.endswith("/" + marker.name)


def test_a_node_already_running_gpu_pods_is_opened_without_a_diagnostic(serve: Any, tls: Path,
                                                                         tmp_path: Path) -> None:
    fake = FakeCluster([STARTUP, GPU_TAINT], gpu_pods=1)
    done, marker, work = run_gate(serve, tls, fake, tmp_path, None)
    assert done.returncode == 0 and fake.node["spec"]["taints"] == [GPU_TAINT]
    assert not (work / "request").exists() and not marker.exists()


def test_an_ungated_node_is_left_alone(serve: Any, tls: Path, tmp_path: Path) -> None:
    fake = FakeCluster([GPU_TAINT])
    done, _, work = run_gate(serve, tls, fake, tmp_path, None)
    assert done.returncode == 0 and [r[0] for r in fake.requests] == ["GET"]
    assert not (work / "request").exists()


def test_a_concurrent_taint_change_is_read_again_not_overwritten(serve: Any, tls: Path, tmp_path: Path) -> None:
    fake = FakeCluster([GPU_TAINT, STARTUP])
    first = fake.patch

    def racing(ops: list[dict[str, Any]]) -> tuple[int, dict[str, Any]]:
        fake.patch = first  # type: ignore[method-assign]
        fake.node["spec"]["taints"] = [*fake.node["spec"]["taints"], {"key": "other", "effect": "NoSchedule"}]
        return first(ops)  # the test op now fails: 422

    fake.patch = racing  # type: ignore[method-assign]
    done, _, _ = run_gate(serve, tls, fake, tmp_path, "pass")
    assert done.returncode == 0, done.stderr
    assert fake.node["spec"]["taints"] == [GPU_TAINT, {"key": "other", "effect": "NoSchedule"}]
    assert len([r for r in fake.requests if r[0] == "PATCH"]) == 2
