"""The journeys start where a user starts: the CLI. Each example stack is previewed once per session with
`gpufleet preview --stack NAME --format json` (the real program under the mock runtime, as a pull request's preview
runs it), and the journeys read the objects and node pools out of that document."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.engine.capture import Graph
from gpufleet.review.diff import resources_of

CLOUD_STACKS = ("aws-train", "gcp-train", "azure-train")  # each cloud's example stack


@pytest.fixture(scope="session")
def previews() -> dict[str, Graph]:
    out = {}
    for stack in CLOUD_STACKS:
        result = CliRunner().invoke(app, ["preview", "--stack", stack, "--format", "json"])
        assert result.exit_code == 0, result.output[-2000:]
        document = json.loads(result.stdout)
        out[stack] = Graph(document["project"], stack, resources_of(document))
    return out
