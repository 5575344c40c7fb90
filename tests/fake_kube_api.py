"""A FAKE Kubernetes API server for the node gate's script (components/k8s/data/node_gate.py): HTTPS on 127.0.0.1
with a self-signed certificate, one node and its pods in memory, the endpoints the script calls (get / JSON-patch
the node, list the node's pods), a service-account directory (token, ca.crt) it authenticates with. A fake: it
answers only what the script asks, and applies only the patch operations the script sends (test, replace)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from tests.capacity import loopback
from tests.capacity.loopback import JsonHandler

TOKEN = "fake-token"


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
    class Handler(JsonHandler):
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


def service_account(d: Path) -> Path:
    """A service-account-shaped directory for the FAKE API server, with its token."""
    return loopback.service_account(d, TOKEN)


def serving(account: Path) -> AbstractContextManager[Callable[[FakeCluster], int]]:
    """start(fake) -> the port of a fake API server answering for ``fake`` (stopped on leaving)."""
    return loopback.https_servers(account, _api)




def run_gate(script: Path, env: dict[str, str], port: int, account: Path, tmp: Path, result: str | None,
             budget_s: float = 5) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    """The node gate's script as its DaemonSet runs it (``env``: its container's), against the fake server on
    ``port``, the diag container's answer already written (or none), its work directory and marker under ``tmp``."""
    work, marker = tmp / "work", tmp / "run" / "failed"
    work.mkdir()
    if result is not None:
        (work / "result").write_text(result + "\n")
    env = {**env, "NODE_NAME": "gpu-0", "GATE_WORK": str(work), "GATE_MARKER": str(marker),
           "GATE_BUDGET_S": str(budget_s), "GATE_POLL_S": "0.05", "GATE_ONCE": "1",
           "KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT_HTTPS": str(port),
           "SERVICEACCOUNT_DIR": str(account), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60)
    return done, marker, work
