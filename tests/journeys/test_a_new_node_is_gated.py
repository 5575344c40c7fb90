"""A new GPU node is closed to Kueue until its health gate passes: a node of each cloud's example stack joins with
the pools' startup taint; a training pod Kueue admits to the pool's flavor (the checked-in example JobSet's pod, with
the flavor's labels and tolerations merged in as Kueue merges them) is not scheduled there, the node's gate
DaemonSet is; the gate's script (run for real, against a FAKE API server holding that node) lifts the taint when the
diagnostic passes, after which the same pod is scheduled there; when it fails, the node stays closed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from components.k8s import healthgate, nodegate
from components.validate import resolve
from gpufleet.checks.nodes import pool_nodes
from gpufleet.checks.scheduling import Node, Placement, Taint, fits, why_not
from gpufleet.engine.capture import Graph
from tests import fake_kube_api
from tests.conftest import example_fleet
from tests.journeys.cluster import admitted, objects, placement
from tests.journeys.conftest import CLOUD_STACKS

ROOT = Path(__file__).resolve().parents[2]
GATE = "gpufleet.io/health-gate"


def _taint(node: Node) -> list[dict[str, Any]]:
    return [{"key": t.key, **({"value": t.value} if t.value else {}), "effect": t.effect} for t in node.taints]


@pytest.fixture
def account(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fake_kube_api.service_account(tmp_path_factory.mktemp("serviceaccount"))


@pytest.mark.parametrize("stack", CLOUD_STACKS)
def test_a_new_node_takes_no_admitted_work_until_its_gate_passes(stack: str, previews: dict[str, Graph],
                                                                 account: Path, tmp_path: Path) -> None:
    graph = previews[stack]
    [cluster] = resolve(example_fleet(stack)).clusters
    job = yaml.safe_load((ROOT / "examples/jobs" / stack / "train-jobset.yaml").read_text())
    pod = job["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pool = next(p for p in cluster.pools if job["metadata"]["name"] == f"jobset-{p.name}")
    [flavor] = [f for f in objects(graph, cluster.name, "ResourceFlavor") if f["metadata"]["name"] == pool.name]
    training = placement("training pod", admitted(pod, flavor))
    new = pool_nodes(graph, cluster, pool)[0]
    assert GATE in {t.key for t in new.taints}
    assert why_not(training, new) == [f"untolerated taint {GATE}=pending:NoSchedule"]

    [gate_ds] = [d for d in objects(graph, cluster.name, "DaemonSet")
                 if d["metadata"]["name"] == f"{nodegate.NAME}-{healthgate.slug(pool.machine)}"]
    assert fits(Placement.of("gate", gate_ds["spec"]["template"]["spec"], daemon=True), new)

    [gate] = [c for c in gate_ds["spec"]["template"]["spec"]["containers"] if c["name"] == "gate"]
    env = {e["name"]: e["value"] for e in gate["env"] if "value" in e}
    fake = fake_kube_api.FakeCluster(_taint(new))
    with fake_kube_api.serving(account) as serve:
        done, marker, _ = fake_kube_api.run_gate(nodegate.SCRIPT, env, serve(fake), account, tmp_path, "pass")
    assert done.returncode == 0, done.stdout + done.stderr
    opened = Node(new.name, new.labels, tuple(Taint(t["key"], t.get("value", ""), t["effect"])
                                              for t in fake.node["spec"]["taints"]), new.pool)
    assert GATE not in {t.key for t in opened.taints} and not marker.exists()
    assert why_not(training, opened) == []


def test_a_node_that_fails_its_gate_stays_closed_and_is_marked(previews: dict[str, Graph], account: Path,
                                                              tmp_path: Path) -> None:
    graph = previews["gcp-train"]
    [cluster] = resolve(example_fleet("gcp-train")).clusters
    new = pool_nodes(graph, cluster, cluster.pools[0])[0]
    gate_ds = next(d for d in objects(graph, cluster.name, "DaemonSet")
                   if d["metadata"]["name"].startswith(nodegate.NAME))
    [gate] = [c for c in gate_ds["spec"]["template"]["spec"]["containers"] if c["name"] == "gate"]
    env = {e["name"]: e["value"] for e in gate["env"] if "value" in e}
    fake = fake_kube_api.FakeCluster(_taint(new))
    with fake_kube_api.serving(account) as serve:
        done, marker, _ = fake_kube_api.run_gate(nodegate.SCRIPT, env, serve(fake), account, tmp_path,
                                                 "fail: dcgmi diag -r 2 exited 226")
    assert done.returncode == 1 and marker.exists()
    assert GATE in {t["key"] for t in fake.node["spec"]["taints"]}
