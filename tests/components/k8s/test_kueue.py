"""Kueue from the spec: quotas equal the teams' quotas and fit the pools; flavors follow the pools; one cohort."""

from __future__ import annotations

from collections import Counter

import pytest

from components.errors import SpecError
from components.validate import resolve
from gpufleet.engine.capture import Graph
from tests.components.k8s.conftest import POOL_STACKS, STACKS, clusters
from tests.conftest import example_fleet, of_type

# Kueue Topology levels, outermost first, typed in from each cloud's documentation (not read from the code):
EXPECTED_LEVELS = {
    # https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-topology.html (EKS node labels)
    "aws": ["topology.k8s.aws/network-node-layer-1", "topology.k8s.aws/network-node-layer-2",
            "topology.k8s.aws/network-node-layer-3", "kubernetes.io/hostname"],
    # https://cloud.google.com/kubernetes-engine/docs/concepts/about-topology-aware-scheduling
    "gcp": ["cloud.google.com/gce-topology-block", "cloud.google.com/gce-topology-subblock",
            "cloud.google.com/gce-topology-host", "kubernetes.io/hostname"],
    # AKS sets no fabric labels; one InfiniBand pool is one network (https://learn.microsoft.com/azure/aks/use-infiniband)
    "azure": ["gpufleet.io/pool", "kubernetes.io/hostname"],
}


def gpu_quotas(queue: dict) -> dict[str, int]:
    """flavor -> nominal nvidia.com/gpu of one ClusterQueue."""
    [group] = queue["spec"]["resourceGroups"]
    return {f["name"]: int(next(r["nominalQuota"] for r in f["resources"] if r["name"] == "nvidia.com/gpu"))
            for f in group["flavors"]}


@pytest.mark.parametrize("stack", POOL_STACKS)
def test_cluster_queue_quotas_equal_the_team_quotas(graphs: dict[str, Graph], stack: str) -> None:
    [cluster] = clusters(stack)
    pools = {p.name: p for p in cluster.pools}
    queues = {r.inputs["metadata"]["name"]: r.inputs for r in of_type(graphs[stack], ":ClusterQueue")}
    assert set(queues) == {t.name for t in cluster.spec.addons.kueue_teams}
    used: Counter[str] = Counter()
    for team in cluster.spec.addons.kueue_teams:
        quotas = gpu_quotas(queues[team.name])
        assert set(quotas) == set(pools)  # every flavor listed, so a team may borrow any of them
        by_model: Counter[str] = Counter()
        for flavor, gpus in quotas.items():
            by_model[pools[flavor].machine.gpu] += gpus
            used[flavor] += gpus
        assert {m: n for m, n in by_model.items() if n} == {m: n for m, n in team.gpus.items() if n}
        assert queues[team.name]["spec"]["cohortName"] == cluster.name
    for flavor, gpus in used.items():
        assert gpus <= pools[flavor].max_gpus, f"{flavor}: {gpus} GPUs of quota, {pools[flavor].max_gpus} in the pool"


def test_quotas_beyond_the_pools_are_a_clear_error() -> None:
    fleet = example_fleet("aws-train")
    fleet["clusters"][0]["addons"]["kueue_teams"][0]["gpus"]["H100"] = 129
    with pytest.raises(SpecError) as caught:
        resolve(fleet)
    [problem] = [p.render() for p in caught.value.problems]
    assert problem.startswith("clusters[0].addons.kueue_teams: team quotas ask for 129 H100 GPUs but the node "
                              "pools provide at most 128.")
    assert "raise the pools' nodes.max" in problem


def test_borrowing_limit_and_preemption(graphs: dict[str, Graph]) -> None:
    research = next(r.inputs for r in of_type(graphs["aws-train"], ":ClusterQueue")
                    if r.inputs["metadata"]["name"] == "research")
    gpu = [r for f in research["spec"]["resourceGroups"][0]["flavors"] for r in f["resources"]
           if r["name"] == "nvidia.com/gpu"]
    assert {r["borrowingLimit"] for r in gpu} == {"8"}
    assert research["spec"]["preemption"]["reclaimWithinCohort"] == "Any"
    assert research["spec"]["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "research"}}


@pytest.mark.parametrize("stack", POOL_STACKS)
def test_flavors_follow_the_pools(graphs: dict[str, Graph], stack: str) -> None:
    [cluster] = clusters(stack)
    flavors = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in of_type(graphs[stack], ":ResourceFlavor")}
    assert set(flavors) == {p.name for p in cluster.pools}
    for pool in cluster.pools:
        spec = flavors[pool.name]
        assert spec["nodeLabels"] == {"gpufleet.io/pool": pool.name}
        assert {"key": "nvidia.com/gpu", "operator": "Exists"} in spec["tolerations"]  # every effect
        assert ("topologyName" in spec) == (pool.fabric.value != "none")
    topologies = of_type(graphs[stack], ":Topology")
    if any("topologyName" in f for f in flavors.values()):
        [topology] = topologies
        assert [lv["nodeLabel"] for lv in topology.inputs["spec"]["levels"]] == EXPECTED_LEVELS[cluster.cloud.value]
    else:
        assert not topologies


@pytest.mark.parametrize("stack", STACKS)
def test_local_queues_in_team_namespaces(graphs: dict[str, Graph], stack: str) -> None:
    [cluster] = clusters(stack)
    local = {(r.inputs["metadata"]["namespace"], r.inputs["spec"]["clusterQueue"])
             for r in of_type(graphs[stack], ":LocalQueue")}
    assert local == {(t.name, t.name) for t in cluster.spec.addons.kueue_teams}
    namespaces = {r.inputs["metadata"]["name"] for r in of_type(graphs[stack], "core/v1:Namespace")}
    assert {t.name for t in cluster.spec.addons.kueue_teams} <= namespaces
    priorities = {r.inputs["metadata"]["name"]: r.inputs["value"] for r in of_type(graphs[stack], ":PriorityClass")}
    assert priorities["production-training"] > priorities["experiment"] > priorities["preemptible"]
