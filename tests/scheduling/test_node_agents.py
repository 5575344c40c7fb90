"""Every node agent that must run on GPU nodes is scheduled there (gpufleet/checks/agents.py): over every example
stack and every README fleet (tests/readme_fleets.py: user NoExecute taints, spot and reservation pools), evaluated
the way kube-scheduler's filter predicates do; generated fleets get the same check in tests/invariants. The
negative cases show the check catches what it is for: SNR's agent without its config's tolerations (the bug the
stacks had), node exporter with its chart's default tolerations under a user's NoExecute taint."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.validate import resolve
from gpufleet.checks.agents import fleet_problems, node_agents, problems
from gpufleet.engine.capture import Graph, run_program
from stacks.config import CONFIG_KEY, stack_names
from tests.conftest import example_fleet
from tests.readme_fleets import NAMES as README_FLEETS
from tests.readme_fleets import readme_fleet

SNR_CONFIG = "kubernetes:self-node-remediation.medik8s.io/v1alpha1:SelfNodeRemediationConfig"
RELEASE = "kubernetes:helm.sh/v3:Release"


def _graph(raw: dict[str, Any]) -> Graph:
    return run_program("scheduling", {CONFIG_KEY: raw})


@pytest.fixture(scope="module")
def readme_graphs() -> dict[str, Graph]:
    return {name: _graph(readme_fleet(name)) for name in README_FLEETS}


@pytest.mark.parametrize("stack", stack_names())
def test_every_gpu_node_agent_runs_on_every_gpu_pool_of_the_example_stacks(stack: str) -> None:
    raw = example_fleet(stack)
    assert fleet_problems(_graph(raw), resolve(raw).clusters) == []


@pytest.mark.parametrize("name", README_FLEETS)
def test_every_gpu_node_agent_runs_on_every_gpu_pool_of_the_readme_fleets(name: str,
                                                                           readme_graphs: dict[str, Graph]) -> None:
    assert fleet_problems(readme_graphs[name], resolve(readme_fleet(name)).clusters) == []


def test_the_agents_the_issue_names_are_all_checked(readme_graphs: dict[str, Graph]) -> None:
    """Device plugins, DCGM exporter and health watcher, NPD, SNR's agent, the Lustre CSI node plugin, node exporter,
    fabric plugins and GPUDirect installers: each is among the agents checked on some README or example fleet."""
    seen: set[str] = set()
    for raw, graph in [*((readme_fleet(n), g) for n, g in readme_graphs.items()),
                       *((example_fleet(s), _graph(example_fleet(s))) for s in ("aws-train", "gcp-train"))]:
        for cluster in resolve(raw).clusters:
            seen |= {a.placement.name for a in node_agents(graph, cluster)[0]}
    assert {"nvidia-device-plugin-daemonset", "aws-efa-k8s-device-plugin", "nic-rdmaSharedDevicePlugin",
            "nvidia-dcgm-exporter", "gpu-dcgm-health", "gpu-problem-detector", "self-node-remediation-ds",
            "fsx-csi-node", "csi-azurelustre-node-jammy", "node-exporter", "nccl-tcpxo-installer",
            "nccl-tcpx-installer", "nccl-rdma-installer", "device-injector"} <= seen


def _without_snr_tolerations(graph: Graph) -> Graph:
    out = copy.deepcopy(graph)
    for r in out.resources:
        if r.type == SNR_CONFIG:
            r.inputs["spec"]["customDsTolerations"] = []
    return out


def test_snrs_agent_without_its_configs_tolerations_is_caught() -> None:
    """What the stacks shipped before: SNR's DaemonSet tolerates only its own and control-plane taints
    (install/self-node-remediation-deamonset.yaml at v0.13.0), so no GPU node runs the agent and SNR refuses to
    remediate it."""
    raw = example_fleet("aws-train")
    [cluster] = resolve(raw).clusters
    found = problems(_without_snr_tolerations(_graph(raw)), cluster)
    assert {p.split(":")[0] for p in found if "self-node-remediation-ds" in p} == {
        f"train/{p.name}" for p in cluster.pools}
    assert all("untolerated taint nvidia.com/gpu=true:NoSchedule" in p for p in found)


def test_node_exporter_with_its_chart_default_tolerations_is_caught_under_a_noexecute_taint(
        readme_graphs: dict[str, Graph]) -> None:
    """prometheus-node-exporter's default tolerations are NoSchedule only: a user's NoExecute taint (the README's
    `dedicated=training:NoExecute`) keeps it off the pool unless our values tolerate every effect."""
    name = "aws-p5en-p6"
    graph = copy.deepcopy(readme_graphs[name])
    for r in graph.resources:
        if r.type == RELEASE and r.inputs["name"] == "kube-prometheus-stack":
            del r.inputs["values"]["prometheus-node-exporter"]["tolerations"]
    [cluster] = resolve(readme_fleet(name)).clusters
    found = [p for p in problems(graph, cluster) if "node-exporter" in p]
    assert found and all("dedicated=training:NoExecute" in p for p in found)
    assert {p.split(":")[0] for p in found} == {"frontier/h200"}  # the one pool with the NoExecute taint
