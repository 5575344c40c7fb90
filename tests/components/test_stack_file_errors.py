"""Stack files that cannot be read as a fleet: a clear one-line problem naming the file, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.errors import SpecError
from stacks.config import load_stack, read_stack_config

FLEET = """config:
  gpufleet:fleet:
    cloud: aws
    monthly_budget_usd: 5000
"""


def _problems(path: Path) -> list[str]:
    with pytest.raises(SpecError) as caught:
        read_stack_config(path)
    return [p.render(str(path)) for p in caught.value.problems]


def test_a_duplicate_key_is_refused_with_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.dup.yaml"
    path.write_text(FLEET + "    monthly_budget_usd: 9000\n")
    [message] = _problems(path)
    assert "duplicate key 'monthly_budget_usd' on line 5 (first on line 4)" in message
    assert message.startswith(str(path))


def test_a_duplicate_key_in_a_list_item_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.dup.yaml"
    path.write_text(FLEET + "    clusters:\n      - name: a\n        region: us-east-1\n        name: b\n")
    [message] = _problems(path)
    assert "duplicate key 'name' on line 8 (first on line 6)" in message


def test_the_same_key_in_two_mappings_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.ok.yaml"
    path.write_text(FLEET + "    clusters:\n      - name: a\n      - name: b\n")
    assert [c["name"] for c in read_stack_config(path)["gpufleet:fleet"]["clusters"]] == ["a", "b"]


def test_a_file_that_is_not_utf8_gets_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.latin1.yaml"
    path.write_bytes((FLEET + "    tags: {team: équipe}\n").encode("latin-1"))
    [message] = _problems(path)
    assert "is not UTF-8 text: byte b'\\xe9'" in message and "iconv" in message


@pytest.mark.parametrize(("key", "expected"), [
    ("gpufleet:fleets", "config: has no gpufleet:fleet, but has 'gpufleet:fleets'. Did you mean gpufleet:fleet? "
                        "Rename gpufleet:fleets to gpufleet:fleet."),
    ("gpufleet:flet", "config: has no gpufleet:fleet, but has 'gpufleet:flet'."),
    ("aws:region", "config: has no gpufleet:fleet (keys: aws:region). Add gpufleet:fleet: an object with cloud,"),
])
def test_a_misspelt_or_missing_config_key_is_named(tmp_path: Path, key: str, expected: str) -> None:
    path = tmp_path / "Pulumi.typo.yaml"
    path.write_text(FLEET.replace("gpufleet:fleet", key))
    with pytest.raises(SpecError) as caught:
        load_stack(path)
    [message] = [p.render() for p in caught.value.problems]
    assert message.startswith(expected)
