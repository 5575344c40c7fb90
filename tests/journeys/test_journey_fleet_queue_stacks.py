"""Journey: one queue for the fleet (docs/fleet-queue.md). A platform engineer previews the fleet's MultiKueue
manager stack and sees every team's queue dispatch through MultiKueue to workers on two clouds, with credentials by
reference only; finance accepts a plan that buys the team's H100 capacity in Azure; `gpufleet capacity apply
--write` moves azure-train to the front of team pretrain's order and sets its quota on the manager; the pull
request's comment shows that change to the manager stack's Kueue objects, like any stack edit.

Hand-computed: pretrain's workers hold 64 H100 (Azure, the plan's reservation) + 40 (GCP, on demand on the
reservation it holds) = 104 after apply; before it the stack said 128 (64 + 64)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from capacity.cli import app as capacity_app
from gpufleet.cli import app
from stacks.config import STACKS_DIR
from tests.capacity.apply_helpers import JAN, commitment, line, write_plan
from tests.gpufleet.gitrepo import commit_on_main_then_branch

CHECK = "kubernetes:kueue.x-k8s.io/v1beta2:AdmissionCheck"
CONFIG = "kubernetes:kueue.x-k8s.io/v1beta2:MultiKueueConfig"
QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
CLUSTER = "kubernetes:kueue.x-k8s.io/v1beta2:MultiKueueCluster"


def test_plan_to_fleet_queue_to_pull_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(STACKS_DIR, repo / "stacks", ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    commit_on_main_then_branch(repo)
    monkeypatch.chdir(repo)

    # 1. the manager's preview: per team a ClusterQueue -> MultiKueue AdmissionCheck -> MultiKueueConfig of workers
    shown = CliRunner().invoke(app, ["preview", "-s", "fleet", "--format", "json", "--no-policies",
                                     "--stacks-dir", "stacks"])
    assert shown.exit_code == 0, shown.output
    resources = json.loads(shown.stdout)["resources"]
    by_type: dict[str, dict[str, dict]] = {}
    for r in resources:
        if "metadata" in (r.get("inputs") or {}):
            by_type.setdefault(r["type"], {})[r["inputs"]["metadata"]["name"]] = r["inputs"]
    for team, queue in by_type[QUEUE].items():
        [check] = queue["spec"]["admissionChecksStrategy"]["admissionChecks"]
        assert by_type[CHECK][check["name"]]["spec"]["controllerName"] == "kueue.x-k8s.io/multikueue"
        assert by_type[CONFIG][team]["spec"]["clusters"]  # at least one worker
    assert by_type[CONFIG]["pretrain"]["spec"]["clusters"] == ["gcp-train-train", "azure-train-train"]
    assert {c["spec"]["clusterSource"]["kubeConfig"]["locationType"] for c in by_type[CLUSTER].values()} == {"Secret"}

    # 2. the plan puts pretrain's prepaid H100 in Azure; apply writes the order and the manager's quota
    plan = write_plan(tmp_path / "plan", [
        line(JAN, "pretrain", "H100", "azure", "eastus2", 64, "reservation", gang=8),
        line(JAN, "pretrain", "H100", "gcp", "us-central1", 40, gang=8),
    ], [commitment("azure", "eastus2", "Standard_ND96isr_H100_v5", "reservation", 8),
        commitment("gcp", "us-central1", "a3-megagpu-8g", "reservation", 8)])
    applied = CliRunner().invoke(capacity_app, ["apply", "--plan", str(plan), "--month", JAN, "--stacks-dir",
                                                "stacks", "--write"], env={"COLUMNS": "250"})
    assert applied.exit_code == 0, applied.output
    text = (repo / "stacks" / "Pulumi.fleet.yaml").read_text()
    assert "pretrain: [azure-train-train, gcp-train-train]" in text and "{name: pretrain, gpus: {H100: 104}}" in text

    # 3. the pull request shows the manager stack's Kueue objects changing
    out = CliRunner().invoke(app, ["pr", "--base", "main", "--no-policies", "--format", "json"])
    assert out.exit_code == 0, out.output
    stacks = {s["stack"]: s for s in json.loads(out.stdout)["stacks"]}
    assert stacks["fleet"]["ok"], stacks["fleet"]["problems"]
    changes = {c["resource"]: c for c in stacks["fleet"]["changes"]}
    order = changes[f"{CONFIG}::queue-addons-multikueueconfig-pretrain"]
    assert order["op"] == "update" and any(p["path"].startswith("spec.clusters") for p in order["paths"])
    quota = changes[f"{QUEUE}::queue-addons-clusterqueue-pretrain"]
    assert quota["op"] == "update" and any("nominalQuota" in p["path"] for p in quota["paths"])
    assert not [c for c in changes.values() if c["op"] in ("delete", "replace")]
    comment = CliRunner().invoke(app, ["pr", "--base", "main", "--no-policies"])
    assert "### Stack `fleet`" in comment.stdout and "queue-addons-multikueueconfig-pretrain" in comment.stdout
