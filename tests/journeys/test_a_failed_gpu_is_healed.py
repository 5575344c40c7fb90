"""A failed GPU is healed: on a GPU node of each cloud's example stack, a fatal XID in the kernel log (or a failed
health gate, or a DCGM health Failure) becomes a node condition, the pool's NodeHealthCheck creates a Self Node
Remediation for that node, and SNR's agent, which must be on the node for SNR to act (v0.13.0
isNodeRebootCapable), is scheduled there: past every taint of the pool and SNR's own quarantine taint."""

from __future__ import annotations

import pytest

from components.fleet import GATE_TAINT
from components.validate import resolve
from gpufleet.checks.agents import node_agents
from gpufleet.checks.nodes import pool_nodes
from gpufleet.checks.scheduling import Taint, why_not
from gpufleet.engine.capture import Graph
from tests.conftest import example_fleet
from tests.journeys.cluster import conditions_from_kernel_log, remediation
from tests.journeys.conftest import CLOUD_STACKS

# https://docs.nvidia.com/deploy/xid-errors/: XID 79, the GPU has fallen off the bus, as the kernel logs it
FALLEN_OFF_THE_BUS = "NVRM: Xid (PCI:0000:3b:00): 79, pid=2317, name=python, GPU has fallen off the bus."
# SNR's quarantine taint (v0.13.0 internal/controller: NoSchedule while it remediates)
QUARANTINE = Taint("remediation.medik8s.io/self-node-remediation", "", "NoSchedule")


@pytest.mark.parametrize("stack", CLOUD_STACKS)
def test_a_fatal_xid_leads_to_a_remediation_whose_agent_runs_on_that_node(stack: str,
                                                                          previews: dict[str, Graph]) -> None:
    graph = previews[stack]
    [cluster] = resolve(example_fleet(stack)).clusters
    conditions = conditions_from_kernel_log(graph, cluster.name, FALLEN_OFF_THE_BUS)
    assert conditions == [("GpuXidFatal", "GpuFatalXid")]
    agents, _ = node_agents(graph, cluster)
    [agent] = [a for a in agents if a.source == "operator self-node-remediation"]
    for pool in cluster.pools:
        node = pool_nodes(graph, cluster, pool)[0].without_taint(GATE_TAINT)  # in service: its gate passed
        snr, why = remediation(graph, cluster.name, node, [{"type": t, "status": "True"} for t, _ in conditions],
                               unhealthy_in_pool=1)
        assert snr is not None, why
        assert (snr["kind"], snr["metadata"]["name"]) == ("SelfNodeRemediation", node.name)
        assert snr["spec"] == {"remediationStrategy": "Automatic"}
        quarantined = node.with_taints(QUARANTINE)
        assert why_not(agent.placement, quarantined) == [], (pool.name, why_not(agent.placement, quarantined))


@pytest.mark.parametrize("condition", ["GpuHealthGateFailed", "GpuDcgmHealthFailed", "GpuNVLinkError"])
def test_every_gpu_condition_is_remediated_on_every_cloud(condition: str, previews: dict[str, Graph]) -> None:
    for stack in CLOUD_STACKS:
        graph = previews[stack]
        [cluster] = resolve(example_fleet(stack)).clusters
        for pool in cluster.pools:
            node = pool_nodes(graph, cluster, pool)[0]
            snr, why = remediation(graph, cluster.name, node, [{"type": condition, "status": "True"}], 1)
            assert snr is not None, (stack, pool.name, why)


def test_a_fleet_wide_event_stops_at_the_pools_limit(previews: dict[str, Graph]) -> None:
    graph = previews["aws-train"]
    [cluster] = resolve(example_fleet("aws-train")).clusters
    pool = cluster.pools[0]  # h100: 16 nodes, max_unhealthy_pct 10 -> 1 node at a time (16 x 10 // 100 = 1)
    node = pool_nodes(graph, cluster, pool)[0]
    failed = [{"type": "GpuXidFatal", "status": "True"}]
    assert remediation(graph, cluster.name, node, failed, unhealthy_in_pool=1)[0] is not None
    snr, why = remediation(graph, cluster.name, node, failed, unhealthy_in_pool=2)
    assert snr is None and "maxUnhealthy 1" in why
