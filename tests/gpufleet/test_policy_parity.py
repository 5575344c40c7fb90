"""`gpufleet preview`, `gpufleet policy check` and `gpufleet diff --policies` (the PR path) judge every example stack
with the same policy configuration, so they give the same verdicts. (Before: the PR path ran the pack without the
fleet's budget and spot pools and reported `stack-monthly-budget` / `spot-only-where-allowed` violations that do not
exist.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.review.replacements import find_rule
from stacks.config import STACKS_DIR, stack_names


def _key(verdicts: list[dict[str, Any]]) -> list[tuple[str, str, str | None, str]]:
    return sorted((v["policy"], v["level"], v["resource"], v["message"]) for v in verdicts)


@pytest.fixture(scope="module")
def previews(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("previews") / "all.json"
    done = CliRunner().invoke(app, ["preview", "--all", "--format", "json", "--stacks-dir", str(STACKS_DIR)])
    assert done.exit_code in (0, 3), done.output
    out.write_text(done.stdout)
    return out


def test_preview_policy_check_and_diff_give_the_same_verdicts(previews: Path) -> None:
    docs = {d["stack"]: d for d in json.loads(previews.read_text())}
    assert sorted(docs) == stack_names(STACKS_DIR) and len(docs) >= 4
    checked = CliRunner().invoke(app, ["policy", "check", "--all", "--format", "json", "--stacks-dir", str(STACKS_DIR)])
    assert checked.exit_code in (0, 3), checked.output
    by_check = {d["stack"]: _key(d["verdicts"]) for d in json.loads(checked.stdout)}
    # base == head: no change, but the head graph is still judged, exactly as on a pull request; priced from the
    # bundled snapshot, which prices every example pool (an unpriced GPU pool would block: exit 3)
    diffed = CliRunner().invoke(app, ["diff", str(previews), str(previews), "--policies", "--format", "json"])
    assert diffed.exit_code == 0, diffed.output
    by_diff = {s["stack"]: _key(s["policy"]["verdicts"]) for s in json.loads(diffed.stdout)["stacks"]}
    by_preview = {s: _key(d["policy"]["verdicts"]) for s, d in docs.items()}
    assert by_preview == by_check == by_diff
    flat = [v for vs in by_diff.values() for v in vs]
    # the two policies that read the fleet's config found nothing on the examples (each sets a budget; spot pools
    # are declared)
    assert not [v for v in flat if v[0] in ("stack-monthly-budget", "spot-only-where-allowed")]
    assert not [v for v in flat if v[1] == "mandatory"]


def test_every_example_document_carries_its_fleet_policy_config(previews: Path) -> None:
    for doc in json.loads(previews.read_text()):
        budget = doc["policy_config"]["stack-monthly-budget"]["monthly_budget_usd"]
        assert budget > 0
        assert isinstance(doc["policy_config"]["spot-only-where-allowed"]["spot_pools"], list)


def test_every_kubernetes_kind_the_examples_emit_has_an_update_rule(previews: Path) -> None:
    kinds = {r["type"] for d in json.loads(previews.read_text()) for r in d["resources"]
             if r["custom"] and r["type"].startswith("kubernetes:")}
    assert len(kinds) > 10
    assert [k for k in sorted(kinds) if find_rule(k, "spec.anything") is None] == []


def test_every_provider_resource_the_examples_emit_has_a_rule_and_manages_its_resources(previews: Path) -> None:
    docs = json.loads(previews.read_text())
    providers = {r["type"] for d in docs for r in d["resources"] if r["type"].startswith("pulumi:providers:")}
    # the six the stacks declare (components/{aws,gcp,azure,k8s}/__init__.py; random: components/k8s/addons.py)
    assert providers == {"pulumi:providers:aws", "pulumi:providers:gcp", "pulumi:providers:azure-native",
                         "pulumi:providers:azuread", "pulumi:providers:kubernetes", "pulumi:providers:random"}
    assert [p for p in sorted(providers) if find_rule(p, "anything") is None] == []
    for doc in docs:
        keys = {f"{r['type']}::{r['name']}" for r in doc["resources"]}
        for r in doc["resources"]:
            if r["type"].startswith("pulumi:providers:"):
                assert r["provider"] is None, r
            elif r["custom"]:
                assert r["provider"] in keys and r["provider"].startswith("pulumi:providers:"), r
