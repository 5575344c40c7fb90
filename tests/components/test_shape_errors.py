"""Shape errors in a fleet description read in our words (what is wrong, the value, what is allowed, how to write
it, at the config path), never pydantic's ("Input should be a valid dictionary or instance of Nodes", "Value
error, ...", class names). Expected messages are written out here by hand."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from components.errors import SpecError
from components.validate import resolve
from gpufleet.cli import app
from stacks.config import STACKS_DIR

BASE = yaml.safe_load((STACKS_DIR / "Pulumi.dev.yaml").read_text())["config"]["gpufleet:fleet"]
POOL = "clusters[0].node_pools[0]"
PHRASES = re.compile(r"instance of|Input should|Value error|valid dictionary|valid integer|valid number|"
                     r"Field required|Extra inputs|errors\.pydantic", re.I)
CLASSES = re.compile(r"\b[A-Z][a-z]+Spec\b|\bNodes\b|\bCapacity\b")  # pydantic named the model class


def pydantic_words(text: str) -> bool:
    return bool(PHRASES.search(text) or CLASSES.search(text))


def set_at(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    raw = copy.deepcopy(BASE)
    node = raw
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return raw


def problems(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as caught:
        resolve(raw)
    return [p.render() for p in caught.value.problems]


PATH = ("clusters", 0, "node_pools", 0)


@pytest.mark.parametrize(("where", "value", "expected"), [
    ((*PATH, "nodes"), "oops", f"{POOL}.nodes: must be a mapping with the keys desired, max, min; got the text "
     "'oops'. Write 'nodes:' and under it one indented 'key: value' line per setting."),
    ((*PATH, "nodes"), [1, 2], f"{POOL}.nodes: must be a mapping with the keys desired, max, min; got a list of 2 "
     "item(s)."),
    ((*PATH, "gpus"), "eight", f"{POOL}.gpus: must be a whole number; got the text 'eight'. Write digits only, "
     "without quotes or units, and no decimal point, like 8."),
    ((*PATH, "gpus"), 1.5, f"{POOL}.gpus: must be a whole number; got the number 1.5."),
    (("cloud",), "aws2", "cloud: 'aws2' is not allowed. Did you mean 'aws'? Allowed: aws, gcp, azure."),
    (("cloud",), "oracle", "cloud: 'oracle' is not allowed. Allowed: aws, gcp, azure."),
    ((*PATH, "capacity", "type"), "spott", f"{POOL}.capacity.type: 'spott' is not allowed. Did you mean 'spot'? "
     "Allowed: on_demand, spot, reservation, capacity_block, flex_start."),
    (("monthly_budget_usd",), "lots", "monthly_budget_usd: must be a number; got the text 'lots'. Write digits "
     "only, without quotes or units, like 1200000 or 0.5."),
    (("clusters",), {"a": 1}, "clusters: must be a list; got a mapping with key(s) a. Write each item on its own "
     "line, starting with '- '."),
    (PATH, "oops", f"{POOL}: must be a mapping with the keys accelerator, capacity, "),
    ((*PATH, "capacity"), "spot", f"{POOL}.capacity: must be a mapping with the keys block, id, max_usd_per_hour, "
     "type; got the text 'spot'. Write 'capacity:' and under it"),
    (("tags",), ["a"], "tags: must be a mapping with keys like cost_center, team; got a list of 1 item(s)."),
    ((*PATH, "nodes", "min"), -1, f"{POOL}.nodes.min: must be at least 0; got the number -1."),
    ((*PATH, "nodes", "max"), 0, f"{POOL}.nodes.max: must be at least 1; got the number 0."),  # spec.py: ge=1
    ((*PATH, "name"), "L4_pool", f"{POOL}.name: must be 1-32 lowercase letters, digits or dashes, starting with a "
     "letter and not ending with a dash; got the text 'L4_pool'."),
    ((*PATH, "disk_gb"), 10, f"{POOL}.disk_gb: unknown key. Did you mean 'disk_gib'? Allowed here: accelerator,"),
])
def test_shape_errors_in_our_words(where: tuple[Any, ...], value: Any, expected: str) -> None:
    [message] = problems(set_at(where, value))
    assert message.startswith(expected), message
    assert not pydantic_words(message), message


def test_a_model_validator_reason_without_its_value_error_prefix() -> None:
    raw = set_at(PATH, {"name": "l4", "nodes": {"min": 0, "max": 4}})  # neither accelerator nor machine_type
    [message] = problems(raw)
    assert message == f"{POOL}: name an accelerator (with gpus) or a machine_type."


def test_a_stack_file_with_a_shape_error_fails_with_file_path_and_no_traceback(tmp_path: Path) -> None:
    text = (STACKS_DIR / "Pulumi.dev.yaml").read_text().replace("nodes: {min: 0, max: 4}", "nodes: four")
    (tmp_path / "Pulumi.dev.yaml").write_text(text)
    result = CliRunner().invoke(app, ["preview", "--stack", "dev", "--stacks-dir", str(tmp_path), "--no-tree"])
    assert result.exit_code == 1, result.output
    out = " ".join(result.output.split())
    assert f"{POOL}.nodes: must be a mapping with the keys desired, max, min; got the text 'four'." in out
    assert "Pulumi.dev.yaml" in out and "Traceback" not in out and not pydantic_words(out)
