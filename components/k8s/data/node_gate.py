"""The health gate on a new GPU node: keep the node closed (its startup taint) until DCGM's diagnostic passes there,
then open it; on failure or past the time budget leave the health gate's failure marker, which quarantines the node
through the remediation path (docs/addons.md "The gate on new nodes"). Runs in the gpu-node-gate DaemonSet's `gate`
container (components/k8s/nodegate.py), beside the `diag` container that runs `dcgmi diag` when asked; stdlib only.

Environment:
  NODE_NAME           this node (the downward API)
  GATE_TAINT          the startup taint's key, on every new node of a gated pool (components/fleet.py)
  GATE_BUDGET_S       how long the diagnostic may take, engine start included, before the gate fails the node
  GATE_WORK           the directory shared with the diag container (request, result)
  GATE_MARKER         the health gate's failure marker (under /run: the remediation's reboot clears it)
  GPU_RESOURCE        the extended resource a training pod asks for (a node running such a pod is not new)
  KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT_HTTPS   the API server, as the kubelet sets them
  SERVICEACCOUNT_DIR  the mounted service account token and CA (default: where Kubernetes mounts them)

A node without the taint is left alone, and so is a tainted node already running GPU pods (the taint was added to a
pool in use): its taint is lifted without a diagnostic, which would disturb the running work. The taint is removed
with a JSON patch whose `test` repeats the taints read, so a concurrent change is re-read, never overwritten.
"""

from __future__ import annotations

import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

SERVICEACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


def log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} node-gate: {message}", flush=True)


class Api:
    def __init__(self, env: dict[str, str]):
        host = env["KUBERNETES_SERVICE_HOST"]
        host = f"[{host}]" if ":" in host else host
        self.base = f"https://{host}:{env['KUBERNETES_SERVICE_PORT_HTTPS']}"
        self.account = env.get("SERVICEACCOUNT_DIR", SERVICEACCOUNT)
        self.tls = ssl.create_default_context(cafile=f"{self.account}/ca.crt")

    def call(self, method: str, path: str, body: Any = None) -> Any:
        token = Path(f"{self.account}/token").read_text().strip()  # projected tokens rotate: read per request
        request = urllib.request.Request(
            self.base + path, method=method, data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json",
                     **({"Content-Type": "application/json-patch+json"} if body is not None else {})})
        with urllib.request.urlopen(request, context=self.tls, timeout=30) as response:
            return json.load(response)


def gated(node: dict[str, Any], key: str) -> bool:
    return any(t.get("key") == key for t in node.get("spec", {}).get("taints") or [])


def runs_gpu_pods(api: Api, name: str, resource: str) -> bool:
    selector = urllib.parse.quote(f"spec.nodeName={name}")
    pods = api.call("GET", f"/api/v1/pods?fieldSelector={selector}")["items"]
    return any(resource in (c.get("resources") or {}).get("requests", {}) or
               resource in (c.get("resources") or {}).get("limits", {})
               for p in pods if p.get("status", {}).get("phase") in ("Pending", "Running")
               for c in p["spec"].get("containers", []))


def lift(api: Api, name: str, key: str) -> None:
    """Remove the startup taint; on a conflicting change (the test fails: 422) read again and retry."""
    for _ in range(10):
        taints = api.call("GET", f"/api/v1/nodes/{name}")["spec"].get("taints") or []
        if not any(t.get("key") == key for t in taints):
            return
        kept = [t for t in taints if t.get("key") != key]
        try:
            api.call("PATCH", f"/api/v1/nodes/{name}", [{"op": "test", "path": "/spec/taints", "value": taints},
                                                        {"op": "replace", "path": "/spec/taints", "value": kept}])
            log(f"passed: {key} lifted, the node takes work")
            return
        except urllib.error.HTTPError as err:
            if err.code not in (409, 422):
                raise
            time.sleep(1)
    raise RuntimeError(f"could not remove {key} from {name}: the taints kept changing")


def wait_for_result(work: Path, budget_s: float, poll_s: float) -> str:
    deadline = time.monotonic() + budget_s
    (work / "request").write_text(time.strftime("%FT%TZ", time.gmtime()))
    while time.monotonic() < deadline:
        result = work / "result"
        if result.exists() and result.read_text().strip():
            return result.read_text().strip()
        time.sleep(poll_s)
    return f"fail: no diagnostic result within {budget_s:.0f} s"


def gate(env: dict[str, str], api: Api) -> int:
    name, key = env["NODE_NAME"], env["GATE_TAINT"]
    node = api.call("GET", f"/api/v1/nodes/{name}")
    if not gated(node, key):
        log(f"{key} not on {name}: nothing to gate")
        return 0
    if runs_gpu_pods(api, name, env["GPU_RESOURCE"]):
        log(f"{name} already runs GPU pods: not a new node, lifting {key} without a diagnostic")
        lift(api, name, key)
        return 0
    result = wait_for_result(Path(env["GATE_WORK"]), float(env["GATE_BUDGET_S"]), float(env.get("GATE_POLL_S", "5")))
    if result == "pass":
        lift(api, name, key)
        return 0
    marker = Path(env["GATE_MARKER"])
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(f"health gate on new node failed: {result} ({time.strftime('%FT%TZ', time.gmtime())})\n")
    log(f"failed ({result}): {key} stays, marker {marker} written (the node is quarantined)")
    return 1


def main() -> int:
    env = dict(os.environ)
    status = gate(env, Api(env))
    if env.get("GATE_ONCE"):  # tests: return instead of idling
        return status
    while True:  # a DaemonSet's container must not exit: idle until the next boot restarts it
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
