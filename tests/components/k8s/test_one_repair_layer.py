"""Never two repair layers on one node (docs/addons.md "The remediation engine"): on every GPU pool of every example
stack, read from the preview graph, NotReady has exactly one owner (the cloud's repair where the pool has it on, the
pool's NodeHealthCheck where it does not), and GPU faults are only the in-cluster engine's, because nothing gives the
cloud's repair a GPU condition to act on (no EKS node monitoring agent)."""

from __future__ import annotations

import pytest

from gpufleet.engine.capture import Graph, Resource
from tests.components.k8s.conftest import POOL_STACKS, STACKS
from tests.conftest import of_type

POOL = "gpufleet.io/pool"
# What each cloud's repair reacts to, typed from its documentation on 2026-12-02:
# - EKS node repair "by itself" (no node monitoring agent): the kubelet's Ready condition and deleted node objects
#   (https://docs.aws.amazon.com/eks/latest/userguide/node-health.html);
# - GKE auto-repair: NotReady or no status for about 10 minutes, a full boot disk for about 30
#   (https://cloud.google.com/kubernetes-engine/docs/how-to/node-auto-repair);
# - AKS auto-repair: NotReady, or no status, within 10 minutes (https://learn.microsoft.com/azure/aks/node-auto-repair).
CLOUD_REPAIR_CONDITIONS = {"Ready"}
# With the EKS node monitoring agent, EKS repair also acts on its conditions, AcceleratedHardwareReady (GPU, Xid
# codes) first, replacing or rebooting after 10 minutes (https://docs.aws.amazon.com/eks/latest/userguide/
# node-repair.html): a second layer on GPU faults. Its add-on name, from the same page.
EKS_NODE_MONITORING_AGENT = "eks-node-monitoring-agent"


def _cloud_repairs(graph: Graph) -> dict[str, bool]:
    """Pool name -> whether the cloud's repair is on for it, as the preview graph declares it."""
    eks = {r.inputs["labels"][POOL]: bool(r.inputs["nodeRepairConfig"]["enabled"])
           for r in of_type(graph, "eks/nodeGroup:NodeGroup")}
    gke = {r.inputs["nodeConfig"]["labels"][POOL]: bool(r.inputs["management"]["autoRepair"])
           for r in of_type(graph, "container/nodePool:NodePool")}
    # AKS repairs every agent pool and has no setting to turn it off (https://learn.microsoft.com/azure/aks/
    # node-auto-repair: "preconfigured" on AKS Standard): on, whatever the graph says
    aks = {r.inputs["nodeLabels"][POOL]: True for r in of_type(graph, "containerservice:AgentPool")}
    return eks | gke | aks


def _health_checks(graph: Graph) -> dict[str, Resource]:
    return {r.inputs["spec"]["selector"]["matchLabels"][POOL]: r
            for r in graph.resources if r.type.endswith(":NodeHealthCheck")}


@pytest.mark.parametrize("stack", POOL_STACKS)  # GPU pools: the fleet queue's manager has none
def test_not_ready_has_one_owner_and_gpu_faults_are_only_the_clusters(graphs: dict[str, Graph], stack: str) -> None:
    checks = _health_checks(graphs[stack])
    cloud = _cloud_repairs(graphs[stack])
    assert checks and set(checks) <= set(cloud), (sorted(checks), sorted(cloud))
    for pool, check in checks.items():
        watched = {u["type"] for u in check.inputs["spec"]["unhealthyConditions"]}
        if cloud[pool]:
            assert not watched & CLOUD_REPAIR_CONDITIONS, (stack, pool, "NHC and the cloud both act on NotReady")
        else:
            assert watched >= CLOUD_REPAIR_CONDITIONS, (stack, pool, "nobody acts on a NotReady node")
        gpu = watched - CLOUD_REPAIR_CONDITIONS
        assert gpu and all(c.startswith("Gpu") for c in gpu), (stack, pool, gpu)


def test_the_examples_cover_both_owners_on_each_cloud_that_can_turn_repair_off(graphs: dict[str, Graph]) -> None:
    """The rule above is tested on pools with the cloud's repair on and off (EKS, GKE) and on AKS."""
    owners = {(stack, on) for stack in STACKS for on in _cloud_repairs(graphs[stack]).values()}
    assert owners >= {("aws-train", True), ("aws-train", False), ("gcp-train", True), ("gcp-train", False),
                      ("azure-train", True)}


@pytest.mark.parametrize("stack", STACKS)
def test_no_stack_installs_the_eks_node_monitoring_agent(graphs: dict[str, Graph], stack: str) -> None:
    addons = [r.inputs["addonName"] for r in of_type(graphs[stack], "eks/addon:Addon")]
    assert EKS_NODE_MONITORING_AGENT not in addons
    releases = [r for r in graphs[stack].resources if r.type.endswith("helm.sh/v3:Release")
                and EKS_NODE_MONITORING_AGENT in str(r.inputs.get("chart", ""))]
    assert not releases
