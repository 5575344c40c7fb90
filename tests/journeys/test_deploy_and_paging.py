"""Journeys of issue #24, through the real CLI (`python -m gpufleet.cli`) on stack files written to a temp directory:

1. a platform engineer writes a stack with a private endpoint, previews it and sees the path `pulumi up` will take,
   and the jobs up.yml will run for it;
2. they declare a deployer outside the network and get the refusal, with the config path, before anything is built
   (the preview, the deploy plan and `gpufleet up` all refuse it before the engine starts);
3. they declare a PagerDuty receiver and see a critical GPU alert routed to it in the Alertmanager configuration the
   preview sends to the engine.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.deploy.automation import RealError, run
from tests.alertmanager_routes import receivers_for
from tests.conftest import example_fleet

ROOT = Path(__file__).resolve().parents[2]


def write_stack(directory: Path, name: str, fleet: dict[str, Any]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    document = {"config": {"pulumi:disable-default-providers": ["*"], "gpufleet:fleet": fleet}}
    (directory / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump(document, sort_keys=False))


def gpufleet(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpufleet.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, check=False)


def private_aws(**deploy: Any) -> dict[str, Any]:
    fleet = copy.deepcopy(example_fleet("dev"))
    cluster = fleet["clusters"][0]
    cluster.update(name="lab", endpoint="private")
    cluster["deploy"] = deploy
    cluster["addons"]["alerting"] = {"receivers": [
        {"name": "oncall", "pagerduty": {"routing_key": {"secret": "pd", "key": "routing-key"}}}]}
    return fleet


def test_a_private_cluster_previews_with_its_deploy_path(tmp_path: Path) -> None:
    stacks = tmp_path / "stacks"
    write_stack(stacks, "lab", private_aws(deployer="network", runner_labels=["self-hosted", "lab-vpc"]))
    text = gpufleet("preview", "--stack", "lab", "--stacks-dir", str(stacks), "--no-tree", "--no-policies")
    assert text.returncode == 0, text.stderr
    assert "deploy paths" in text.stdout and "in-network" in text.stdout
    assert "stage cluster on [self-hosted, lab-vpc]" in " ".join(text.stdout.split())
    document = json.loads(gpufleet("preview", "--stack", "lab", "--stacks-dir", str(stacks), "--format", "json",
                                   "--no-policies").stdout)
    path = document["deploy"]["lab"]
    assert path["route"] == "in-network" and [s["name"] for s in path["stages"]] == ["cloud", "cluster"]
    assert path["stages"][1]["runs_on"] == ["self-hosted", "lab-vpc"] and path["receivers"] == ["oncall"]


def test_a_deployer_outside_the_network_is_refused_before_anything_is_built(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    write_stack(checkout / "stacks", "lab", private_aws(deployer="outside"))
    shutil.copy(ROOT / "Pulumi.yaml", checkout / "Pulumi.yaml")
    found = gpufleet("preview", "--stack", "lab", "--stacks-dir", str(checkout / "stacks"), "--format", "json",
                     "--no-policies")
    assert found.returncode == 1
    document = json.loads(found.stdout)
    assert document["resources"] == [] and document["deploy"] == {}
    [error] = document["errors"]
    assert "clusters[0].deploy.deployer" in error and "cannot reach the API server" in error
    # `gpufleet up` refuses it the same way, before it looks for the Pulumi CLI (which would say it is missing)
    with pytest.raises(RealError, match=r"clusters\[0\]\.deploy\.deployer"):
        run("lab", "up", root=checkout, which=lambda _: None, stage="cloud")


def test_a_declared_receiver_gets_the_critical_gpu_alerts(tmp_path: Path) -> None:
    stacks = tmp_path / "stacks"
    write_stack(stacks, "lab", private_aws(deployer="network"))
    document = json.loads(gpufleet("preview", "--stack", "lab", "--stacks-dir", str(stacks), "--format", "json",
                                   "--no-policies").stdout)
    [release] = [r for r in document["resources"] if r["type"] == "kubernetes:helm.sh/v3:Release"
                 and r["inputs"]["name"] == "kube-prometheus-stack"]
    alertmanager = release["inputs"]["values"]["alertmanager"]
    route = alertmanager["config"]["route"]
    assert receivers_for(route, {"alertname": "GpuFatalXid", "severity": "critical"}) == ["oncall"]
    assert receivers_for(route, {"alertname": "GpuXidError", "severity": "warning"}) == ["null"]
    [oncall] = [r for r in alertmanager["config"]["receivers"] if r["name"] == "oncall"]
    assert oncall["pagerduty_configs"][0]["routing_key_file"] == "/etc/alertmanager/secrets/pd/routing-key"
    assert alertmanager["alertmanagerSpec"]["secrets"] == ["pd"]
    # the Grafana admin password went into a Secret, and the preview shows it only as a secret
    [admin] = [r for r in document["resources"] if r["type"] == "kubernetes:core/v1:Secret"
               and r["inputs"]["metadata"]["name"] == "grafana-admin"]
    assert admin["inputs"]["stringData"] == "[secret]"  # the generated password makes the whole map secret


def test_up_yml_runs_the_deploy_plan_stage_by_stage() -> None:
    """The workflow runs `gpufleet deploy-plan`, the cloud stage on a hosted runner, then each in-cluster stage on
    the runner labels the plan names; the plan of the example stacks has one in-cluster job per private AWS / Azure
    cluster and none for GKE (its DNS endpoint)."""
    workflow = yaml.safe_load((ROOT / ".github/workflows/up.yml").read_text())
    jobs = workflow["jobs"]
    assert "gpufleet deploy-plan --all" in jobs["plan"]["steps"][-1]["run"]
    assert "--stage cloud" in jobs["cloud"]["steps"][-1]["run"]
    assert jobs["cluster"]["runs-on"] == "${{ matrix.job.runs_on }}" and jobs["cluster"]["needs"] == ["plan", "cloud"]
    assert '--stage cluster --cluster "${{ matrix.job.cluster }}"' in jobs["cluster"]["steps"][-1]["run"]
    plan = json.loads(gpufleet("deploy-plan", "--all").stdout)
    staged = {(j["stack"], j["cluster"]) for j in plan if j["stage"] == "cluster"}
    assert staged == {("aws-train", "train"), ("dev", "dev"), ("azure-train", "train")}
