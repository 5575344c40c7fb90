"""`gpufleet policy list / config / check`, the verdict renderer, and the two ways fleet facts reach the pack."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from gpufleet.checks.analyzer import Level, PolicyPack, PolicyPackError, Verdict, load_config
from gpufleet.checks.cli import policy_app, print_verdicts
from policies import ledger
from policies.pack import THEMES, all_policies
from tests.policies import keys as k
from tests.policies.conftest import Bases
from tests.policies.helpers import mutate

app = typer.Typer()
app.add_typer(policy_app, name="policy")


@app.callback()
def _main() -> None:
    """gpufleet (test harness)."""


def test_the_pack_serves_at_least_25_named_described_policies_in_four_themes(pack: PolicyPack) -> None:
    assert len(pack.policies) >= 25
    assert set(THEMES) == {"security", "gpu", "cost", "reliability"} and all(THEMES.values())
    for p in pack.policies.values():
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)+", p.name), p.name
        # the reserved-capacity policies need a ledger recorded with credentials: off until configured with one
        off = p.name in {q.name for q in ledger.POLICIES}
        assert len(p.description) > 40 and p.level in ((Level.DISABLED,) if off else (Level.MANDATORY, Level.ADVISORY))
        assert all("default" in spec for spec in p.config_schema.values()), p.name
    assert pack.policies["stack-monthly-budget"].kind == "stack"
    assert [p.name for p in all_policies()] == list(pack.policies)


def test_policy_list_prints_levels_and_config() -> None:
    result = CliRunner().invoke(app, ["policy", "list", "--format", "json"])
    assert result.exit_code == 0, result.output
    listed = {p["name"]: p for p in json.loads(result.output)}
    assert listed["stack-monthly-budget"]["level"] == "mandatory"
    assert listed["stack-monthly-budget"]["config"]["hours_per_month"]["default"] == 730
    assert listed["maintenance-window-set"] | {"config": {}} == {
        "name": "maintenance-window-set", "theme": "reliability", "kind": "stack", "level": "advisory", "config": {},
        "description": listed["maintenance-window-set"]["description"]}


def test_policy_config_writes_the_fleet_facts(tmp_path: Path) -> None:
    out = tmp_path / "policy-config.json"
    result = CliRunner().invoke(app, ["policy", "config", "--stack", "dev", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert load_config(out) == {"stack-monthly-budget": {"monthly_budget_usd": 5000.0},
                                "spot-only-where-allowed": {"spot_pools": ["dev/l4"]}}


def test_policy_check_exits_3_on_a_mandatory_violation(tmp_path: Path) -> None:
    config = tmp_path / "tight.json"
    config.write_text(json.dumps({"stack-monthly-budget": {"monthly_budget_usd": 100}}))
    result = CliRunner().invoke(app, ["policy", "check", "--stack", "dev", "--policy-pack-config", str(config)],
                                env={"COLUMNS": "250"})
    assert result.exit_code == 3, result.output
    assert "stack-monthly-budget" in result.output and "exceeds the budget of $100" in result.output


def test_bad_config_files_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('["not", "a", "map"]')
    with pytest.raises(PolicyPackError, match="must map policy names to objects"):
        load_config(path)


def test_verdicts_render_per_resource_with_the_stack_last() -> None:
    console = Console(record=True, width=200)
    print_verdicts(console, "dev", [
        Verdict("stack-gpu-cap", Level.MANDATORY, "too many GPUs", None),
        Verdict("imdsv2-required", Level.MANDATORY, "IMDSv1 is allowed", "aws:ec2/launchTemplate:LaunchTemplate::lt"),
        Verdict("node-auto-repair", Level.ADVISORY, "auto-repair is off", "aws:eks/nodeGroup:NodeGroup::ng")])
    text = console.export_text()
    assert "(1 mandatory" not in text and "2 mandatory, 1 advisory" in text
    assert text.index("LaunchTemplate::lt") < text.index("NodeGroup::ng") < text.index("(stack)")
    quiet = Console(record=True, width=200)
    print_verdicts(quiet, "dev", [])
    assert "no violations" in quiet.export_text()


def test_without_policy_config_the_pack_reads_the_stack_config_the_cli_passes(bases: Bases) -> None:
    """`pulumi preview --policy-pack policies` hands the pack the stack's config in PULUMI_CONFIG: the budget
    and the spot pools then come from gpufleet:fleet with no policy config at all."""
    dev = bases["dev"]
    fleet = {"monthly_budget_usd": 1000, "clusters": [{"name": "dev", "node_pools": [
        {"name": "l4", "capacity": {"type": "spot"}}]}]}
    with PolicyPack(stack_config={"gpufleet:fleet": json.dumps(fleet)}) as pack:
        pack.configure({})
        verdicts = pack.analyze(dev.graph)
        assert [v.policy for v in verdicts if v.mandatory] == ["stack-monthly-budget"]
        assert "exceeds the budget of $1,000" in verdicts[-1].message
        on_demand = mutate(dev.graph, k.DEV_NG, {"capacityType": "ON_DEMAND"})
        spot_system = mutate(on_demand, "aws:eks/nodeGroup:NodeGroup::dev-system-ng", {"capacityType": "SPOT"})
        assert [v.message for v in pack.analyze_resources(spot_system) if v.policy == "spot-only-where-allowed"] == [
            "pool dev/system runs on spot, but the fleet spec does not ask for spot there (spot pools: dev/l4); "
            "preemption kills multi-node jobs"]
