"""The gate on new GPU nodes (components/k8s/nodegate.py, data/node_gate.py): what it renders (one DaemonSet per gated
machine type, past every pool taint including its own startup taint, which Kueue's flavors do not tolerate; dcgmi's
flags from the DCGM digest) and what its script does against a FAKE API server (HTTPS on 127.0.0.1, a node and its
pods in memory): a passing diagnostic lifts the startup taint with a JSON patch whose test repeats the taints read;
a failing or missing result leaves the marker the node problem detector turns into the quarantine condition."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from components.k8s import healthgate, nodegate, upstream
from components.k8s.inputs import AddonInputs
from components.k8s.render import render
from components.validate import resolve
from tests import fake_kube_api
from tests.components.k8s.conftest import STACKS, clusters
from tests.conftest import example_fleet
from tests.fake_kube_api import FakeCluster, service_account, serving

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
            assert GATE not in {t["key"] for t in flavor["spec"].get("tolerations", [])}


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

@pytest.fixture
def tls(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return service_account(tmp_path_factory.mktemp("serviceaccount"))


@pytest.fixture
def serve(tls: Path) -> Iterator[Any]:
    with serving(tls) as start:
        yield start


def gate_env() -> dict[str, str]:
    [cluster] = clusters("aws-train")
    [ds] = [o for o in _rendered(cluster) if o["metadata"]["name"] == "gpu-node-gate-p5-48xlarge"]
    [gate] = [c for c in ds["spec"]["template"]["spec"]["containers"] if c["name"] == "gate"]
    return {e["name"]: e["value"] for e in gate["env"] if "value" in e}


def run_gate(serve: Any, tls: Path, fake: FakeCluster, tmp: Path, result: str | None, budget_s: float = 5) -> Any:
    return fake_kube_api.run_gate(nodegate.SCRIPT, gate_env(), serve(fake), tls, tmp, result, budget_s)


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
