"""`gpufleet capacity apply`: one plan month carried into the stack files, round trip with reconcile.

Plans here are written by hand (not by the planner) so each expectation is computed from the lines.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pulumi
import pytest
from apply_helpers import FEB, JAN, apply, commitment, fleet, line, pending_pools, stacks, write_plan

from capacity.apply.need import peak_gpus
from capacity.reconcile import reconcile
from capacity.schema import PlanLine
from stacks.config import CONFIG_KEY, load_stack_file, pending_capacity

__all__ = ["stacks"]  # the fixture, used by name

# --- the peak of a month ---------------------------------------------------------------------------------

def test_peak_is_the_average_for_spreadable_work_and_whole_gangs_for_gang_work() -> None:
    # 100 GPUs for all of January (744 h): 74,400 GPU-hours
    assert peak_gpus(74_400, 1, JAN) == pytest.approx(100)
    assert peak_gpus(74_400, 64, JAN) == 128  # 100 GPUs of 64-GPU gangs: two gangs at once
    assert peak_gpus(74_400, 100, JAN) == 100
    assert peak_gpus(10, 512, JAN) == 512  # a gang runs whole or not at all
    assert peak_gpus(67_200, 8, FEB) == 100 + 4  # 100 GPUs in February (672 h) -> 13 gangs of 8


# --- round trip ------------------------------------------------------------------------------------------

def round_trip_plan(tmp_path: Path) -> Path:
    return write_plan(tmp_path / "plan", [
        line(JAN, "pretrain", "H100", "aws", "us-east-1", 200, gang=64),  # 4 gangs of 64: 256 GPUs peak
        line(JAN, "research", "A100-40GB", "aws", "us-east-1", 10),
        line(JAN, "eval", "H100", "aws", "us-east-1", 20, option="spot"),
        line(JAN, "pretrain", "H100", "gcp", "us-central1", 100, gang=64),  # 2 gangs: 128, 64 on the reservation
        line(JAN, "batch", "A100-40GB", "aws", "us-east-2", 16, gang=8),  # no stack provisions us-east-2
    ])


def test_round_trip_plan_apply_reconcile(tmp_path: Path, stacks: Path) -> None:
    plan = round_trip_plan(tmp_path)
    result = apply(plan, stacks, JAN, "--write")
    assert result.exit_code == 0, result.output
    draft = stacks / "Pulumi.aws-us-east-2.yaml"
    assert draft.exists() and draft.read_text().startswith("# DRAFT")
    fleets = [load_stack_file(f) for f in sorted(stacks.glob("Pulumi.*.yaml"))]  # every stack still validates
    from capacity.csvio import load_rows

    rows = reconcile(load_rows(plan / "plan.csv", PlanLine), [], fleets, [])
    jan = [r for r in rows if r.month == JAN]
    assert not [r for r in jan if r.status == "under"], jan
    per_node = {"H100": 8, "A100-40GB": 8, "L4": 1, "H200": 8}  # p5 / a3-mega / ND H100 v5 / p4d / a2: 8 GPUs a node
    for r in jan:
        if r.status == "over":  # only what prepaid pools hold beyond the plan, or less than a whole node
            assert r.reserved_gpus > 0 or r.gpus < per_node[r.gpu], r
    # a second apply finds nothing to change
    again = apply(plan, stacks, JAN)
    assert again.exit_code == 0 and "No stack file changes." in again.output, again.output


def test_round_trip_sizes_pools_and_queues_from_the_plan(tmp_path: Path, stacks: Path) -> None:
    assert apply(round_trip_plan(tmp_path), stacks, JAN, "--write").exit_code == 0
    aws = fleet(stacks, "aws-train")["clusters"][0]
    pools = {p["name"]: p for p in aws["node_pools"]}
    # 256 H100 peak, 128 of them on the capacity block the stack already pays for: 16 more p5 nodes on demand
    assert pools["h100"]["nodes"] == {"min": 16, "max": 16}
    assert pools["h100-od"]["nodes"]["max"] == 16 and pools["h100-od"]["machine_type"] == "p5.48xlarge"
    assert pools["h100-spot"]["nodes"]["max"] == 3 and pools["h100-spot"]["capacity"] == {"type": "spot"}  # 20/8
    assert pools["a100-eval"]["nodes"]["max"] == 2  # 10 A100-40GB -> 2 p4d nodes
    teams = {t["name"]: t for t in aws["addons"]["kueue_teams"]}
    assert teams["pretrain"]["gpus"] == {"H100": 256}
    assert teams["research"]["gpus"] == {"A100-40GB": 10} and teams["research"]["borrowing_limit_gpus"] == 8
    assert teams["eval"]["gpus"] == {"H100": 20}
    gcp = fleet(stacks, "gcp-train")["clusters"][0]
    assert {t["name"]: t["gpus"] for t in gcp["addons"]["kueue_teams"]}["pretrain"] == {"H100": 128}
    gcp_pools = {p["name"]: p for p in gcp["node_pools"]}
    assert gcp_pools["h100"]["nodes"] == {"min": 8, "max": 8}  # the specific reservation the stack holds
    assert gcp_pools["h100-od"]["nodes"]["max"] == 8 and gcp_pools["h100-od"]["machine_type"] == "a3-megagpu-8g"
    draft = fleet(stacks, "aws-us-east-2")["clusters"][0]
    assert draft["region"] == "us-east-2" and draft["node_pools"][0]["nodes"]["max"] == 2  # 16 A100-40GB / 8
    assert {t["name"] for t in draft["addons"]["kueue_teams"]} == {"batch"}


def test_comments_and_layout_survive_an_edit(tmp_path: Path, stacks: Path) -> None:
    before = (stacks / "Pulumi.aws-train.yaml").read_text()
    assert apply(round_trip_plan(tmp_path), stacks, JAN, "--write").exit_code == 0
    after = (stacks / "Pulumi.aws-train.yaml").read_text()
    comments = [x.strip() for x in before.splitlines() if "#" in x]
    kept = [x.strip() for x in after.splitlines() if "#" in x]
    assert comments == kept[:len(comments)]
    # every line the edit did not mean to change is still there, in order, with its indentation
    changed = re.compile(r"nodes: |gpus: |kueue_teams|- \{name: ")
    untouched = [x for x in before.splitlines() if not changed.search(x)]
    remaining = iter(after.splitlines())
    assert all(any(x == y for y in remaining) for x in untouched)
    assert "            nodes: {min: 0, max: 2, desired: 2}" in after  # flow style kept, desired clamped


def test_without_write_nothing_changes_and_the_diff_is_shown(tmp_path: Path, stacks: Path) -> None:
    before = {f.name: f.read_text() for f in stacks.iterdir()}
    result = apply(round_trip_plan(tmp_path), stacks, JAN)
    assert result.exit_code == 0, result.output
    assert {f.name: f.read_text() for f in stacks.iterdir()} == before
    assert "+++ b/" in result.output and "--- /dev/null" in result.output  # the draft is a new file


# --- guards ----------------------------------------------------------------------------------------------

def test_a_capacity_block_is_not_shrunk_without_allow_shrink(tmp_path: Path, stacks: Path) -> None:
    plan = write_plan(tmp_path / "plan", [line(JAN, "pretrain", "H100", "aws", "us-east-1", 64, gang=64)])
    result = apply(plan, stacks, JAN, "--write")
    assert result.exit_code == 0 and "Held back" in result.output
    assert fleet(stacks, "aws-train")["clusters"][0]["node_pools"][0]["nodes"] == {"min": 16, "max": 16}
    result = apply(plan, stacks, JAN, "--write", "--allow-shrink")
    assert result.exit_code == 0, result.output
    assert fleet(stacks, "aws-train")["clusters"][0]["node_pools"][0]["nodes"] == {"min": 8, "max": 8}  # 64 / 8


def test_a_team_moving_clusters_is_added_there_and_dropped_here_only_when_allowed(tmp_path: Path,
                                                                                   stacks: Path) -> None:
    jan = [line(JAN, "research", "A100-40GB", "aws", "us-east-1", 16),
           line(JAN, "pretrain", "H100", "aws", "us-east-1", 128)]
    feb = [line(FEB, "research", "H100", "gcp", "us-central1", 16),
           line(FEB, "pretrain", "H100", "aws", "us-east-1", 128)]
    plan = write_plan(tmp_path / "plan", jan + feb)
    assert apply(plan, stacks, JAN, "--write").exit_code == 0
    result = apply(plan, stacks, FEB, "--write")
    assert result.exit_code == 0, result.output
    aws_teams = {t["name"] for t in fleet(stacks, "aws-train")["clusters"][0]["addons"]["kueue_teams"]}
    gcp_teams = {t["name"]: t["gpus"] for t in fleet(stacks, "gcp-train")["clusters"][0]["addons"]["kueue_teams"]}
    assert "research" in aws_teams and "research" in result.output  # held, and said so
    assert gcp_teams["research"] == {"H100": 16}
    assert apply(plan, stacks, FEB, "--write", "--allow-shrink").exit_code == 0
    aws_teams = {t["name"] for t in fleet(stacks, "aws-train")["clusters"][0]["addons"]["kueue_teams"]}
    assert aws_teams == {"pretrain"}


@pytest.mark.parametrize(("gpus", "machine", "nodes", "to_buy"), [
    # the stack reserves 8 a3-megagpu-8g nodes already; the commitment holds 12: 4 more to buy
    (96, "a3-megagpu-8g", 12, 4),
    # a GCP commitment attaches to a reservation of its own machine type: the a3-mega one cannot hold a3-high nodes
    (24, "a3-highgpu-8g", 3, 3),
])
def test_a_gcp_commitment_becomes_a_reservation_pool_with_a_pending_id(tmp_path: Path, stacks: Path, gpus: int,
                                                                       machine: str, nodes: int, to_buy: int) -> None:
    plan = write_plan(tmp_path / "plan", [line(JAN, "pretrain", "H100", "gcp", "us-central1", gpus, "commit_1y")],
                      [commitment("gcp", "us-central1", machine, "commit_1y", nodes)])
    result = apply(plan, stacks, JAN, "--write")
    assert result.exit_code == 0, result.output
    assert pending_pools(stacks, "gcp-train") == [(machine, {"min": to_buy, "max": to_buy})]
    assert machine in result.output.split("the plan buys")[1] and "buy now" in result.output
    edited = load_stack_file(stacks / "Pulumi.gcp-train.yaml")  # validates: a preview may show it
    assert pending_capacity(edited) == ["clusters[0].node_pools[2].capacity.id (train/h100-res)"]


def test_pulumi_up_refuses_a_pending_id_while_preview_warns(stacks: Path) -> None:
    from pulumi.runtime import mocks, settings

    from stacks import config

    raw = fleet(stacks, "gcp-train")
    raw["clusters"][0]["node_pools"][0]["capacity"]["id"] = "pending"

    class Nothing(mocks.Mocks):
        def new_resource(self, args):  # pragma: no cover - nothing is registered
            return "", {}

        def call(self, args):  # pragma: no cover
            return {}

    settings.ROOT.set(None)
    pulumi.runtime.set_all_config({CONFIG_KEY: json.dumps(raw)}, [])
    try:
        mocks.set_mocks(Nothing(), project="gpufleet", stack="gcp-train", preview=False)
        with pytest.raises(pulumi.RunError, match=r"capacity still to buy.*pending"):
            config.load()
        mocks.set_mocks(Nothing(), project="gpufleet", stack="gcp-train", preview=True)
        assert config.load().clusters[0].pools[0].spec.capacity.id == "pending"
    finally:
        pulumi.runtime.set_all_config({}, [])


def test_bad_arguments_are_clear_errors(tmp_path: Path, stacks: Path) -> None:
    plan = round_trip_plan(tmp_path)
    result = apply(plan, stacks, "2027-13")
    assert result.exit_code == 2 and "YYYY-MM" in result.output
    result = apply(plan, stacks, "2030-01")
    assert result.exit_code == 2 and "Its months: 2027-01" in result.output
    result = apply(plan, tmp_path / "nowhere", JAN)
    assert result.exit_code == 2 and "no Pulumi.<stack>.yaml files" in result.output


@pytest.mark.parametrize("stack", ["aws-train", "gcp-train", "azure-train"])
def test_a_pending_id_validates_on_every_cloud(stack: str) -> None:
    from components.validate import resolve
    from tests.conftest import example_fleet

    raw = example_fleet(stack)
    raw["clusters"][0]["node_pools"][0]["capacity"]["id"] = "pending"
    assert pending_capacity(resolve(raw)) == ["clusters[0].node_pools[0].capacity.id (train/h100)"]


def test_every_edited_stack_previews_and_keeps_its_comments(tmp_path: Path, stacks: Path) -> None:
    # the preview runs in its own process (as a user runs it): a fresh Pulumi runtime, bounded in time
    import subprocess
    import sys

    before = {f.name: f.read_text() for f in stacks.glob("Pulumi.*.yaml")}
    assert apply(round_trip_plan(tmp_path), stacks, JAN, "--write").exit_code == 0
    changed = [f for f in sorted(stacks.glob("Pulumi.*.yaml")) if before.get(f.name) != f.read_text()]
    # the fleet queue's manager: pretrain's order and quota follow its workers' (docs/fleet-queue.md)
    assert {f.name for f in changed} == {"Pulumi.aws-train.yaml", "Pulumi.gcp-train.yaml", "Pulumi.aws-us-east-2.yaml",
                                         "Pulumi.fleet.yaml"}
    for f in changed:
        name = f.name[len("Pulumi."):-len(".yaml")]
        done = subprocess.run([sys.executable, "-m", "gpufleet.cli", "preview", "--stacks-dir", str(stacks),
                               "--stack", name, "--format", "json", "--no-policies"],
                              capture_output=True, text=True, timeout=300, cwd=Path(__file__).parents[2])
        assert done.returncode == 0, done.stderr
        names = {r["name"] for r in json.loads(done.stdout)["resources"]}
        assert all(f"{c['name']}-{p['name']}-ng" in names or f"{c['name']}-{p['name']}" in names
                   for c in fleet(stacks, name)["clusters"] for p in c.get("node_pools", [])), names
        old_comments = [x.strip() for x in before.get(f.name, "").splitlines() if x.lstrip().startswith("#")]
        new_comments = [x.strip() for x in f.read_text().splitlines() if x.lstrip().startswith("#")]
        assert all(c in new_comments for c in old_comments if "DRAFT" not in c), f.name
