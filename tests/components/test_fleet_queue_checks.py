"""Validation refuses a fleet queue that cannot work, from either stack's side, each problem at its config path
(components/multikueue.py): a worker without the team's queue or a flavor of its GPUs, a manager that cannot reach a
worker's API server, a job kind a worker does not run, a manager quota its workers cannot hold."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from components import multikueue
from gpufleet.cli import app
from stacks.config import CONFIG_KEY, STACKS_DIR
from tests.conftest import FLEET_QUEUE, cross_stack_problems


def problems(stack: str, edit: dict[str, Any] | None = None) -> dict[str, str]:
    return cross_stack_problems(multikueue.check, stack, edit)


def cluster(fleet: dict[str, Any]) -> dict[str, Any]:
    return fleet["clusters"][0]


def test_the_example_fleet_queue_is_whole_from_every_side() -> None:
    assert [problems(s) for s in FLEET_QUEUE] == [{}, {}, {}]


def test_a_worker_without_the_teams_queue() -> None:
    def no_pretrain(f: dict[str, Any]) -> None:
        cluster(f)["addons"]["kueue_teams"] = [t for t in cluster(f)["addons"]["kueue_teams"]
                                               if t["name"] != "pretrain"]
    found = problems("fleet", {"azure-train": no_pretrain})
    # the stack file lists pretrain's order, so the problem is there; and 128 H100 is now more than gcp-train's 64
    assert found == {"clusters[0].multikueue.order.pretrain[1]":
                     "worker azure-train-train has no Kueue queue for team pretrain.",
                     "clusters[0].addons.kueue_teams[0].gpus.H100":
                     "128 H100 GPUs is more than the team's workers hold for it (64): the manager would admit work "
                     "no worker can run."}


def test_a_worker_without_a_flavor_of_the_teams_gpus() -> None:
    """research's only worker queue (azure-train) has H100-NVL; the manager asks for H200."""
    def research_on_h200(f: dict[str, Any]) -> None:
        cluster(f)["addons"]["kueue_teams"][1]["gpus"] = {"H200": 8}
    found = problems("fleet", {"fleet": research_on_h200})
    assert found == {"clusters[0].addons.kueue_teams[1]": "worker azure-train-train's queue for team research has "
                     "no flavor of H200 (it has H100-NVL).",
                     "clusters[0].addons.kueue_teams[1].gpus.H200": "none of team research's workers "
                     "(azure-train-train) has H200 quota for it."}


def test_a_manager_that_cannot_reach_a_private_worker() -> None:
    """azure-train's API server is private; its manager runs outside its network (no VPN declared)."""
    def outside(f: dict[str, Any]) -> None:
        cluster(f)["multikueue"]["manager"] = {"stack": "fleet", "cluster": "queue"}
    mine = problems("azure-train", {"azure-train": outside})
    assert list(mine) == ["clusters[0].multikueue.manager.reach"]
    assert mine["clusters[0].multikueue.manager.reach"].startswith("the MultiKueue manager cannot reach this API "
                                                                   "server")
    theirs = problems("fleet", {"azure-train": outside})
    assert list(theirs) == ["clusters[0].multikueue.workers[1]"]
    assert "this manager cannot reach the worker's API server" in theirs["clusters[0].multikueue.workers[1]"]


def test_a_network_reach_needs_the_managers_addresses_where_the_cloud_filters() -> None:
    """GKE lets only its authorized networks in: a manager in a connected network must name its subnets."""
    def network(cidrs: list[str]):
        def change(f: dict[str, Any]) -> None:
            cluster(f)["multikueue"]["manager"] = {"stack": "fleet", "cluster": "queue", "reach": "network",
                                                   "cidrs": cidrs}
        return change
    assert problems("gcp-train", {"gcp-train": network([])}) == {
        "clusters[0].multikueue.manager.cidrs": "is empty, but GKE lets only listed addresses in (the control "
                                                "plane's authorized networks)."}
    assert problems("gcp-train", {"gcp-train": network(["10.64.0.0/14"])}) == {}


def test_a_job_kind_the_worker_does_not_run() -> None:
    def no_trainer(f: dict[str, Any]) -> None:
        cluster(f)["addons"]["operators"] = ["kuberay", "jobset"]
    found = problems("fleet", {"gcp-train": no_trainer})
    assert list(found) == ["clusters[0].multikueue.workers[0]"]
    assert found["clusters[0].multikueue.workers[0]"].startswith("the worker does not run trainer (")


def test_a_manager_quota_beyond_what_the_workers_hold() -> None:
    """pretrain's workers hold 64 + 64 H100 for it: 129 would admit work no worker can run; 128 is allowed."""
    def quota(n: int):
        def change(f: dict[str, Any]) -> None:
            cluster(f)["addons"]["kueue_teams"][0]["gpus"] = {"H100": n}
        return change
    assert problems("fleet", {"fleet": quota(128)}) == {}
    found = problems("fleet", {"fleet": quota(129)})
    assert list(found) == ["clusters[0].addons.kueue_teams[0].gpus.H100"]
    assert "more than the team's workers hold for it (128)" in found["clusters[0].addons.kueue_teams[0].gpus.H100"]


def test_both_sides_must_name_each_other() -> None:
    def other_manager(f: dict[str, Any]) -> None:
        cluster(f)["multikueue"]["manager"]["cluster"] = "elsewhere"
    assert "names manager fleet/elsewhere" in problems("fleet", {"gcp-train": other_manager})[
        "clusters[0].multikueue.workers[0]"]
    found = problems("gcp-train", {"gcp-train": other_manager})
    assert found == {"clusters[0].multikueue.manager.cluster": "stacks/Pulumi.fleet.yaml has no cluster "
                                                               "'elsewhere'."}


def test_the_preview_refuses_a_broken_fleet_queue_with_its_config_path(tmp_path: Path) -> None:
    for s in FLEET_QUEUE:
        shutil.copy(STACKS_DIR / f"Pulumi.{s}.yaml", tmp_path)
    path = tmp_path / "Pulumi.gcp-train.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["config"][CONFIG_KEY]["clusters"][0]["addons"]["operators"] = ["kuberay", "jobset"]
    path.write_text(yaml.safe_dump(doc))
    result = CliRunner().invoke(app, ["preview", "-s", "fleet", "--stacks-dir", str(tmp_path)],
                                env={"COLUMNS": "250"})
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    assert "clusters[0].multikueue.workers[0]: the worker does not run trainer" in text
    assert "Traceback" not in result.output
