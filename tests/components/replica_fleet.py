"""The example fleet queue with aws-train as a third worker (after gcp-train and azure-train), previewed offline
from a copy of the stacks folder: three clouds whose workers replicate checkpoints to each other."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from gpufleet.engine.capture import Graph
from gpufleet.engine.preview import preview_stack
from stacks.config import CONFIG_KEY, STACKS_DIR

STACKS = ("fleet", "gcp-train", "azure-train", "aws-train")
MANAGER_NET = "10.64.0.0/14"


def _edit(path: Path, change: Any) -> None:
    doc = yaml.safe_load(path.read_text())
    change(doc["config"][CONFIG_KEY]["clusters"][0])
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


PRETRAIN_ORDER = ("gcp-train-train", "aws-train-train", "azure-train-train")


def three_cloud_fleet(folder: Path, pretrain: tuple[str, ...] = PRETRAIN_ORDER) -> Path:
    """The stacks copied into ``folder``, aws-train a worker of the manager; ``pretrain`` the team's worker order."""
    folder.mkdir(parents=True, exist_ok=True)
    for stack in STACKS:
        shutil.copy(STACKS_DIR / f"Pulumi.{stack}.yaml", folder)

    def manager(c: dict[str, Any]) -> None:
        c["multikueue"]["workers"].append({"stack": "aws-train", "cluster": "train"})
        c["multikueue"]["order"] = {"pretrain": list(pretrain),
                                    "research": ["azure-train-train"]}  # aws-train's research queue has A100s

    def worker(c: dict[str, Any]) -> None:
        c["multikueue"] = {"manager": {"stack": "fleet", "cluster": "queue", "reach": "network",
                                       "cidrs": [MANAGER_NET]}}
    _edit(folder / "Pulumi.fleet.yaml", manager)
    _edit(folder / "Pulumi.aws-train.yaml", worker)
    return folder


def previews(folder: Path, stacks: tuple[str, ...] = STACKS) -> dict[str, Graph]:
    out = {}
    for stack in stacks:
        found = preview_stack(stack, folder)
        assert found.ok and found.graph is not None, found.errors
        out[stack] = found.graph
    return out
