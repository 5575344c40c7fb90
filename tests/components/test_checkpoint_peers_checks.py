"""Validation refuses checkpoint replication across the fleet queue that cannot work (components/checkpoint_peers.py),
from each worker's side, at its config path: a peer without a checkpoint bucket, a worker without one among peers
that have one, the sync (which carries the replication) turned off, export paths that differ."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from components import checkpoint_peers
from components.validate import resolve
from gpufleet.cli import app
from stacks.config import CONFIG_KEY, STACKS_DIR
from tests.conftest import FLEET_QUEUE, cross_stack_problems, example_fleet


def problems(stack: str, edit: dict[str, Any] | None = None) -> dict[str, str]:
    return cross_stack_problems(checkpoint_peers.check, stack, edit)


def lustre(f: dict[str, Any]) -> dict[str, Any]:
    return f["clusters"][0]["storage"]["lustre"]


def no_lustre(f: dict[str, Any]) -> None:
    del f["clusters"][0]["storage"]["lustre"]


def test_the_example_workers_replicate_to_each_other() -> None:
    fleets = {s: resolve(example_fleet(s)) for s in FLEET_QUEUE}
    gcp, azure = fleets["gcp-train"].clusters[0], fleets["azure-train"].clusters[0]
    assert [p.name for p in checkpoint_peers.peers("gcp-train", gcp.spec, fleets)] == ["azure-train-train"]
    assert [p.name for p in checkpoint_peers.peers("azure-train", azure.spec, fleets)] == ["gcp-train-train"]
    assert checkpoint_peers.peers("fleet", fleets["fleet"].clusters[0].spec, fleets) == []  # the manager has none
    assert [problems(s) for s in FLEET_QUEUE] == [{}, {}, {}]


def test_a_peer_without_a_checkpoint_bucket_is_refused_from_both_sides() -> None:
    edit = {"azure-train": no_lustre}
    assert problems("gcp-train", edit) == {"clusters[0].multikueue.manager": (
        "the fleet queue's worker azure-train-train has no checkpoint bucket (storage.lustre in "
        "stacks/Pulumi.azure-train.yaml) to replicate this worker's checkpoints to.")}
    [(path, message)] = problems("azure-train", edit).items()
    assert path == "clusters[0].storage.lustre"
    assert message.startswith("is not set, but the other workers of this fleet queue (gcp-train-train) keep "
                              "checkpoints")


def test_no_worker_with_a_bucket_means_nothing_to_replicate() -> None:
    edit = {"azure-train": no_lustre, "gcp-train": no_lustre}
    assert problems("gcp-train", edit) == {} and problems("azure-train", edit) == {}


def test_the_sync_that_carries_the_replication_may_not_be_off() -> None:
    def off(f: dict[str, Any]) -> None:
        lustre(f)["checkpoint_sync"]["enabled"] = False
    assert list(problems("gcp-train", {"gcp-train": off})) == ["clusters[0].storage.lustre.checkpoint_sync.enabled"]
    assert problems("azure-train", {"gcp-train": off}) == {}  # the peer's own sync is its own problem


def test_export_paths_must_agree_across_the_fleet_queue() -> None:
    def elsewhere(f: dict[str, Any]) -> None:
        lustre(f)["export_path"] = "ckpt/"
    found = problems("gcp-train", {"azure-train": elsewhere})
    assert found == {"clusters[0].storage.lustre.export_path": (
        "is 'checkpoints/', but worker azure-train-train's is 'ckpt/': a job dispatched there would not find its "
        "checkpoints at its path.")}
    # a trailing slash is no difference
    assert problems("gcp-train", {"azure-train": lambda f: lustre(f).update(export_path="checkpoints")}) == {}


def test_the_preview_refuses_it_in_one_line_with_the_config_path(tmp_path: Path) -> None:
    for s in FLEET_QUEUE:
        shutil.copy(STACKS_DIR / f"Pulumi.{s}.yaml", tmp_path)
    path = tmp_path / "Pulumi.azure-train.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["config"][CONFIG_KEY]["clusters"][0]["storage"]["lustre"]["export_path"] = "ckpt/"
    path.write_text(yaml.safe_dump(doc))
    result = CliRunner().invoke(app, ["preview", "-s", "gcp-train", "--stacks-dir", str(tmp_path)],
                                env={"COLUMNS": "250"})
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if "export_path" in line]
    assert len(lines) == 1 and "clusters[0].storage.lustre.export_path: is 'checkpoints/'" in lines[0]
    assert "Traceback" not in result.output


def test_two_eks_workers_of_one_account_with_a_third_peer_are_refused() -> None:
    """IAM allows one OIDC provider per issuer URL per account (EntityAlreadyExists otherwise): both EKS workers
    would create one for gcp-train's issuer."""
    raw = {s: example_fleet(s) for s in FLEET_QUEUE}
    raw["aws-a"], raw["aws-b"] = example_fleet("aws-train"), example_fleet("aws-train")
    for name in ("aws-a", "aws-b"):
        raw[name]["account"] = "111122223333"
        raw[name]["clusters"][0]["multikueue"] = {"manager": {"stack": "fleet", "cluster": "queue", "reach": "network",
                                                               "cidrs": ["10.64.0.0/14"]}}
        raw["fleet"]["clusters"][0]["multikueue"]["workers"].append({"stack": name, "cluster": "train"})
    fleets = {s: resolve(f) for s, f in raw.items()}
    found = {p.path: p.message for p in checkpoint_peers.check("aws-a", fleets["aws-a"], fleets)}
    assert list(found) == ["clusters[0].multikueue.manager"]
    assert "aws-b-train is in this worker's AWS account (111122223333)" in found["clusters[0].multikueue.manager"]
    raw["aws-b"]["account"] = "444455556666"  # another account: nothing to refuse
    fleets = {s: resolve(f) for s, f in raw.items()}
    assert checkpoint_peers.check("aws-a", fleets["aws-a"], fleets) == []
