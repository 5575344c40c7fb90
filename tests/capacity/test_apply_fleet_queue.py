"""`capacity apply` writes the fleet queue's order and quotas from the plan (docs/fleet-queue.md "From the plan").

The example fleet queue (stacks/Pulumi.fleet.yaml) dispatches team pretrain's H100 work to two workers: gcp-train's
cluster (us-central1: an 8-node a3-mega reservation, 64 H100) and azure-train's (eastus2: an 8-node ND H100 v5
capacity reservation, 64 H100). Both hold the team's H100 as prepaid capacity, so only where the plan put the team's
prepaid GPU-hours decides which is tried first. Plans are written by hand; January has 744 hours.
"""

from __future__ import annotations

from pathlib import Path

from apply_helpers import JAN, apply, commitment, fleet, line, stacks, write_plan

__all__ = ["stacks"]  # the fixture, used by name

GCP, AZURE = "gcp-train-train", "azure-train-train"
COMMITMENTS = [commitment("gcp", "us-central1", "a3-megagpu-8g", "reservation", 8),
               commitment("azure", "eastus2", "Standard_ND96isr_H100_v5", "reservation", 8)]


def plan(tmp_path: Path, prepaid: str, on_demand: str, on_demand_gpus: int) -> Path:
    """pretrain: 64 GPUs on the reservation in ``prepaid``'s region, ``on_demand_gpus`` on demand in the other's."""
    region = {"gcp": "us-central1", "azure": "eastus2"}
    return write_plan(tmp_path / f"plan-{prepaid}", [
        line(JAN, "pretrain", "H100", prepaid, region[prepaid], 64, "reservation", gang=8),
        line(JAN, "pretrain", "H100", on_demand, region[on_demand], on_demand_gpus, gang=8),
    ], COMMITMENTS)


def manager(stacks: Path) -> dict:
    return fleet(stacks, "fleet")["clusters"][0]


def test_the_order_follows_the_plan_and_the_quota_what_the_workers_hold(tmp_path: Path, stacks: Path) -> None:
    result = apply(plan(tmp_path, "azure", "gcp", 40), stacks, JAN, "--write")
    assert result.exit_code == 0, result.output
    queue = manager(stacks)
    # the plan put the team's prepaid GPUs in Azure: azure-train first, though the example lists gcp-train first
    assert queue["multikueue"]["order"]["pretrain"] == [AZURE, GCP]
    # the workers' pretrain queues follow the plan (64 in Azure, 40 in GCP); the manager admits their sum
    assert {t["name"]: t["gpus"] for t in queue["addons"]["kueue_teams"]}["pretrain"] == {"H100": 64 + 40}
    assert "- {name: pretrain, gpus: {H100: 104}}" in (stacks / "Pulumi.fleet.yaml").read_text()
    assert "pretrain: [azure-train-train, gcp-train-train]" in (stacks / "Pulumi.fleet.yaml").read_text()

    result = apply(plan(tmp_path, "gcp", "azure", 16), stacks, JAN, "--write")
    assert result.exit_code == 0, result.output
    queue = manager(stacks)
    assert queue["multikueue"]["order"]["pretrain"] == [GCP, AZURE]
    assert {t["name"]: t["gpus"] for t in queue["addons"]["kueue_teams"]}["pretrain"] == {"H100": 64 + 16}


def test_teams_the_plan_does_not_serve_keep_their_order_and_quota(tmp_path: Path, stacks: Path) -> None:
    before = manager(stacks)
    result = apply(plan(tmp_path, "gcp", "azure", 16), stacks, JAN, "--write")
    assert result.exit_code == 0, result.output
    after = manager(stacks)
    assert set(after["multikueue"]["order"]) == {"pretrain"}  # research and finetune: their workers by listing
    kept = {t["name"]: t for t in before["addons"]["kueue_teams"] if t["name"] != "pretrain"}
    assert {t["name"]: t for t in after["addons"]["kueue_teams"] if t["name"] != "pretrain"} == kept
    assert not after.get("node_pools")  # the manager gets no GPU pool: its workers run the work


def test_the_preview_shows_the_edit_and_writes_nothing(tmp_path: Path, stacks: Path) -> None:
    text = (stacks / "Pulumi.fleet.yaml").read_text()
    result = apply(plan(tmp_path, "azure", "gcp", 40), stacks, JAN)
    assert result.exit_code == 0, result.output
    assert "clusters[0].multikueue.order.pretrain" in result.output
    assert "+            pretrain: [azure-train-train, gcp-train-train]" in result.output
    assert (stacks / "Pulumi.fleet.yaml").read_text() == text


def test_plan_work_where_no_worker_is_is_said(tmp_path: Path, stacks: Path) -> None:
    lines = [line(JAN, "pretrain", "H100", "aws", "us-east-1", 64, "capacity_block", gang=8),
             line(JAN, "pretrain", "H100", "gcp", "us-central1", 8, gang=8)]
    result = apply(write_plan(tmp_path / "p", lines, [commitment("aws", "us-east-1", "p5.48xlarge",
                                                                 "capacity_block", 16)]), stacks, JAN)
    assert result.exit_code == 0, result.output
    assert "no worker of the fleet queue fleet/queue" in " ".join(result.output.split())
