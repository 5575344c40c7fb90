"""Each job example schedules onto its pool: `gpufleet jobs examples --stack NAME` writes the examples; each pod set
of each (a JobSet's pods, a RayJob's head and workers, a TrainJob's nodes from its ClusterTrainingRuntime), once
Kueue admitted it to the pool's ResourceFlavor (labels and tolerations merged in), is scheduled on that pool's nodes
(after their gate passed) and on no other pool's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from components.fleet import GATE_TAINT
from components.validate import resolve
from gpufleet.checks.nodes import gpu_nodes
from gpufleet.checks.scheduling import fits, why_not
from gpufleet.cli import app
from gpufleet.engine.capture import Graph
from tests.conftest import example_fleet
from tests.journeys.cluster import admitted, objects, placement
from tests.journeys.conftest import CLOUD_STACKS


def pod_sets(job: dict[str, Any], runtimes: dict[str, dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(name, pod template) of each pod set Kueue makes of the job."""
    spec = job["spec"]
    if job["kind"] == "JobSet":
        return [(r["name"], r["template"]["spec"]["template"]) for r in spec["replicatedJobs"]]
    if job["kind"] == "RayJob":
        ray = spec["rayClusterSpec"]
        return [("head", ray["headGroupSpec"]["template"]),
                *((g["groupName"], g["template"]) for g in ray["workerGroupSpecs"])]
    replicated = runtimes[spec["runtimeRef"]["name"]]["spec"]["template"]["spec"]["replicatedJobs"]
    return [(r["name"], r["template"]["spec"]["template"]) for r in replicated]


@pytest.mark.parametrize("stack", CLOUD_STACKS)
def test_each_job_example_schedules_onto_its_pool(stack: str, previews: dict[str, Graph], tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["jobs", "examples", "--stack", stack, "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    graph = previews[stack]
    [cluster] = resolve(example_fleet(stack)).clusters
    flavors = {f["metadata"]["name"]: f for f in objects(graph, cluster.name, "ResourceFlavor")}
    runtimes = {r["metadata"]["name"]: r for r in objects(graph, cluster.name, "ClusterTrainingRuntime")}
    nodes = [n.without_taint(GATE_TAINT) for n in gpu_nodes(graph, cluster)]  # in service: their gates passed
    written = sorted((tmp_path / stack).glob("*.yaml"))
    assert {p.name for p in written} == {"train-jobset.yaml", "train-rayjob.yaml", "train-trainjob.yaml"}
    for path in written:
        job = yaml.safe_load(path.read_text())
        pool = job["metadata"]["name"].split("-", 1)[1]  # <kind>-<pool>
        for name, pod in pod_sets(job, runtimes):
            where = placement(f"{path.name}:{name}", admitted(pod, flavors[pool]))
            mine = [n for n in nodes if n.pool == pool]
            assert mine and all(fits(where, n) for n in mine), [why_not(where, n) for n in mine]
            assert not [n.pool for n in nodes if n.pool != pool and fits(where, n)]
