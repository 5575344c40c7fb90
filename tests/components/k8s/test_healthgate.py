"""The health gate: one Job template per machine type, across two nodes, with the catalogue's pass threshold."""

from __future__ import annotations

import pytest

from components.k8s.healthgate import NODES, templates
from components.k8s.inputs import AddonInputs
from components.k8s.render import render
from tests.components.k8s.conftest import STACKS, clusters


@pytest.mark.parametrize("stack", STACKS)
def test_one_gate_per_machine_type_with_the_catalogue_threshold(stack: str) -> None:
    for cluster in clusters(stack):
        jobs = {d["metadata"]["name"]: d for d in templates(render(cluster, AddonInputs(kubeconfig="{}")).manifests)
                if d["kind"] == "Job"}
        machines = {p.machine.name: p.machine for p in cluster.pools}
        assert len(jobs) == len(machines)
        for machine in machines.values():
            [job] = [j for j in jobs.values() if j["metadata"]["labels"]["app.kubernetes.io/name"].endswith(
                machine.name.lower().replace(".", "-").replace("_", "-"))]
            spec = job["spec"]
            assert spec["completions"] == spec["parallelism"] == NODES >= 2
            pod = spec["template"]["spec"]
            [main] = pod["containers"]
            env = {e["name"]: e["value"] for e in main["env"]}
            assert float(env["GATE_BUSBW_GBYTE_PER_S"]) == machine.nccl_busbw_gbyte_per_s
            assert main["resources"]["limits"]["nvidia.com/gpu"] == str(machine.gpus)
            assert "dcgmi diag" in pod["initContainers"][0]["command"][-1]
            anti = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            assert anti[0]["topologyKey"] == "kubernetes.io/hostname"  # one pod per node: the gate crosses nodes


def gate_limits(stack: str) -> dict[str, dict[str, str]]:
    """Job name -> the all-reduce container's resource limits."""
    [cluster] = clusters(stack)
    return {d["metadata"]["name"]: d["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
            for d in templates(render(cluster, AddonInputs(kubeconfig="{}")).manifests) if d["kind"] == "Job"}


def test_fabric_devices_are_requested() -> None:
    assert gate_limits("aws-train")["health-gate-p5-48xlarge"]["vpc.amazonaws.com/efa"] == "32"
    assert gate_limits("azure-train")["health-gate-standard-nd96isr-h100-v5"]["rdma/rdma_shared_device_a"] == "1"
    assert set(gate_limits("dev")["health-gate-g6-xlarge"]) == {"nvidia.com/gpu"}
