"""`capacity apply` adds only what the plan needs beyond what prepaid pools hold, and leaves teams absent from the
plan alone (docs/capacity.md, "Apply").

The example stacks: aws-train holds a 16-node p5 capacity block (128 H100) and a p4d pool (4 nodes) that team
research has 24 A100-40GB of Kueue quota for; gcp-train holds an 8-node a3-mega reservation (64 H100) and a
flex-start a3-ultra pool (4 nodes) for team finetune (32 H200). Plans are written by hand; January has 744 hours.
"""

from __future__ import annotations

from pathlib import Path

from apply_helpers import JAN, apply, commitment, fleet, line, stacks, write_plan

__all__ = ["stacks"]  # the fixture, used by name


def three_teams(tmp_path: Path) -> Path:
    """pretrain: one 64-GPU gang row per cloud, mostly on the prepaid capacity the stacks hold, partly on demand
    (the planner splits a site's hours over its rows); eval: spot. research and finetune are not in the plan."""
    return write_plan(tmp_path / "plan", [
        # 96 GPUs of 64-GPU gangs: 2 gangs at once, 128 GPUs, which the 128-GPU block holds
        line(JAN, "pretrain", "H100", "aws", "us-east-1", 90, "capacity_block", gang=64),
        line(JAN, "pretrain", "H100", "aws", "us-east-1", 6, gang=64),
        # 48 GPUs: one gang, 64 GPUs, which the 64-GPU reservation holds
        line(JAN, "pretrain", "H100", "gcp", "us-central1", 40, "reservation", gang=64),
        line(JAN, "pretrain", "H100", "gcp", "us-central1", 8, gang=64),
        line(JAN, "eval", "H100", "aws", "us-east-1", 20, "spot"),
    ], [commitment("aws", "us-east-1", "p5.48xlarge", "capacity_block", 16),
        commitment("gcp", "us-central1", "a3-megagpu-8g", "reservation", 8)])


def test_no_on_demand_node_is_added_where_prepaid_pools_hold_the_peak(tmp_path: Path, stacks: Path) -> None:
    # Before: each plan line was rounded up to whole gangs on its own, so 6 and 8 GPUs on demand became a 64-GPU
    # gang each: 16 on-demand nodes beside pools that already hold the peak.
    gcp_before = (stacks / "Pulumi.gcp-train.yaml").read_text()
    result = apply(three_teams(tmp_path), stacks, JAN, "--write")
    assert result.exit_code == 0, result.output
    aws = {p["name"]: p for p in fleet(stacks, "aws-train")["clusters"][0]["node_pools"]}
    gcp = {p["name"]: p for p in fleet(stacks, "gcp-train")["clusters"][0]["node_pools"]}
    assert set(aws) == {"h100", "a100-eval", "h100-spot"} and set(gcp) == {"h100", "h200"}
    assert aws["h100"]["nodes"] == {"min": 16, "max": 16} and gcp["h100"]["nodes"] == {"min": 8, "max": 8}
    assert aws["h100-spot"]["nodes"]["max"] == 3  # 20 spot GPUs: 3 p5 nodes, none of them held
    assert "the plan buys" not in result.output  # the commitments are the blocks the stacks hold
    # it already holds all of it: only the record of what the plan spends there is new (usd_total 1 a block here)
    record = "  gpufleet:capacity_plan: {month: 2027-01, usd_per_month: 1.0}\n"
    assert (stacks / "Pulumi.gcp-train.yaml").read_text() == gcp_before + record


def test_a_team_absent_from_the_plan_keeps_its_pools_and_queue(tmp_path: Path, stacks: Path) -> None:
    before = {name: (stacks / f"Pulumi.{name}.yaml").read_text() for name in ("aws-train", "gcp-train")}
    result = apply(three_teams(tmp_path), stacks, JAN, "--write")
    assert result.exit_code == 0, result.output
    for name, kept in (("aws-train", ["- name: a100-eval", "machine_type: p4d.24xlarge",
                                      "nodes: {min: 0, max: 4, desired: 2}",
                                      "- {name: research, gpus: {A100-40GB: 24}, borrowing_limit_gpus: 8}"]),
                       ("gcp-train", ["- name: h200", "nodes: {min: 0, max: 4}", "capacity: {type: flex_start}",
                                      "- {name: finetune, gpus: {H200: 32}, borrowing_limit_gpus: 8}"])):
        after = (stacks / f"Pulumi.{name}.yaml").read_text()
        for text in kept:
            assert text in before[name] and text in after, (name, text)
    assert "research" in result.output and "not in the plan" in result.output  # the shrink it held back, said


def test_a_gang_on_fewer_prepaid_gpus_gets_its_top_up_pool(tmp_path: Path, stacks: Path) -> None:
    # gcp-train's reservation holds 64 H100; the plan runs one 96-GPU gang all month on it and 32 GPUs on demand:
    # 96 GPUs at once, of which the reservation holds 64, so 32 on demand: 4 a3-mega nodes, no more.
    plan = write_plan(tmp_path / "plan", [
        line(JAN, "pretrain", "H100", "gcp", "us-central1", 64, "reservation", gang=96),
        line(JAN, "pretrain", "H100", "gcp", "us-central1", 32, gang=96),
    ], [commitment("gcp", "us-central1", "a3-megagpu-8g", "reservation", 8)])
    result = apply(plan, stacks, JAN, "--write")
    assert result.exit_code == 0, result.output
    gcp = {p["name"]: p for p in fleet(stacks, "gcp-train")["clusters"][0]["node_pools"]}
    assert gcp["h100"]["nodes"] == {"min": 8, "max": 8}
    assert gcp["h100-od"]["nodes"]["max"] == 4 and gcp["h100-od"]["machine_type"] == "a3-megagpu-8g"


def test_with_allow_shrink_an_absent_teams_pool_may_shrink_but_its_queue_stays(tmp_path: Path,
                                                                              stacks: Path) -> None:
    result = apply(three_teams(tmp_path), stacks, JAN, "--write", "--allow-shrink")
    assert result.exit_code == 0, result.output
    aws = fleet(stacks, "aws-train")["clusters"][0]
    teams = {t["name"]: t for t in aws["addons"]["kueue_teams"]}
    assert teams["research"] == {"name": "research", "gpus": {"A100-40GB": 24}, "borrowing_limit_gpus": 8}
    # shrunk to the plan's (no A100 work), then grown back to hold the quota research keeps: 24 GPUs, 3 nodes
    assert {p["name"]: p for p in aws["node_pools"]}["a100-eval"]["nodes"]["max"] == 3


def test_a_malformed_plan_record_is_a_clear_error() -> None:
    import pytest

    from components.errors import SpecError
    from stacks.config import PLAN_KEY, capacity_plan

    assert capacity_plan({PLAN_KEY: {"month": "2027-01", "usd_per_month": 0}}, "s") == \
        {"month": "2027-01", "usd_per_month": 0.0}
    assert capacity_plan({}, "s") is None
    for bad in ({"month": "January", "usd_per_month": 1}, {"month": "2027-01", "usd_per_month": -1}, "1000"):
        with pytest.raises(SpecError, match=r"gpufleet:capacity_plan: is .* it must be \{month: YYYY-MM"):
            capacity_plan({PLAN_KEY: bad}, "stacks/Pulumi.x.yaml")

