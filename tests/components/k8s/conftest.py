"""Fixtures for the add-on layer: example stack graphs (captured once per session) and helpers over them."""

from __future__ import annotations

import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from components.fleet import Cluster
from components.validate import resolve
from gpufleet.engine.capture import Graph, Resource, run_program
from stacks.config import CONFIG_KEY, stack_names
from tests.conftest import example_fleet

DATA = Path(__file__).parent / "data"
STACKS = stack_names()
NOT_OBJECTS = ("kubernetes:helm.sh/v3:Release", "kubernetes:yaml/v2:ConfigFile")


@pytest.fixture(scope="session")
def graphs() -> dict[str, Graph]:
    """Every example stack's preview graph."""
    return {stack: run_program(stack, {CONFIG_KEY: example_fleet(stack)}) for stack in STACKS}


def clusters(stack: str) -> tuple[Cluster, ...]:
    return resolve(example_fleet(stack)).clusters


# stacks whose clusters queue work on their own GPU pools (not the fleet's MultiKueue manager: tests/components/k8s/
# test_fleetqueue.py)
POOL_STACKS = [s for s in STACKS if not any(c.spec.is_manager for c in clusters(s))]


def kubernetes_objects(graph: Graph) -> list[Resource]:
    """Every Kubernetes object the graph registers (not Helm releases or manifest files, not providers)."""
    return [r for r in graph.resources if r.type.startswith("kubernetes:") and r.type not in NOT_OBJECTS]


def as_object(r: Resource) -> dict[str, Any]:
    """The Kubernetes object as the provider will apply it (inputs are already camelCase)."""
    return dict(r.inputs)


FAKE_RCLONE = Path(__file__).parent / "fake_rclone.py"


@pytest.fixture
def fake_rclone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An executable FAKE rclone; the bucket is tmp_path/bucket, its call log tmp_path/calls.jsonl."""
    binary = tmp_path / "rclone"
    binary.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_RCLONE}" "$@"\n')
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "bucket").mkdir()
    monkeypatch.setenv("FAKE_BUCKET_ROOT", str(tmp_path / "bucket"))
    monkeypatch.setenv("FAKE_RCLONE_LOG", str(tmp_path / "calls.jsonl"))
    return binary
