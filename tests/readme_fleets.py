"""Stacks a user writes from the README's fleet description (docs/fleet.md), one per cloud, covering the machine types
and capacity kinds the README names: p5en and p6-b200 (reservation, capacity block, spot), a3-highgpu-8g and
a4-highgpu-8g (spot, a reservation block), ND H200 v5 (a capacity reservation group) with an Azure spot pool
capped by price. Shared by the conformance tests and any test that wants user-shaped fleets."""

from __future__ import annotations

import copy
from typing import Any

TAGS = {"team": "ml-platform", "cost_center": "cc-4100"}
NOEXECUTE = [{"key": "dedicated", "value": "training", "effect": "NoExecute"}]

_FLEETS: dict[str, dict[str, Any]] = {
    "aws-p5en-p6": {
        "cloud": "aws", "account": "123456789012", "monthly_budget_usd": 2_000_000, "tags": TAGS,
        "clusters": [{
            "name": "frontier", "region": "us-east-1", "zones": ["use1-az6", "use1-az2"],
            "admins": ["arn:aws:iam::123456789012:role/ml-platform-admin"],
            "node_pools": [
                {"name": "h200", "machine_type": "p5en.48xlarge", "nodes": {"min": 4, "max": 4}, "zone": "use1-az6",
                 "capacity": {"type": "reservation", "id": "cr-0123456789abcdef0"}, "taints": NOEXECUTE},
                {"name": "b200", "accelerator": "B200", "gpus": 8, "nodes": {"min": 2, "max": 2}, "zone": "use1-az6",
                 "capacity": {"type": "capacity_block", "id": "cr-0fedcba9876543210"}},
                {"name": "l40s", "machine_type": "g6e.12xlarge", "nodes": {"min": 0, "max": 4}, "zone": "use1-az2",
                 "capacity": {"type": "spot"}},
            ],
            "storage": {"buckets": [{"name": "checkpoints"}],
                        "lustre": {"capacity_tib": 19.2, "throughput_mbps_per_tib": 250, "bucket": "checkpoints"}},
            "addons": {"kueue_teams": [{"name": "frontier", "gpus": {"H200": 32, "B200": 16}}]},
        }],
    },
    "gcp-a3-a4": {
        "cloud": "gcp", "account": "ml-train-prod", "monthly_budget_usd": 1_500_000, "tags": TAGS,
        "clusters": [{
            "name": "hyper", "region": "us-central1", "zones": ["us-central1-b"],
            "admins": ["ml-platform-admins@example.com"],
            "node_pools": [
                {"name": "a3high", "machine_type": "a3-highgpu-8g", "nodes": {"min": 0, "max": 8},
                 "capacity": {"type": "spot"}, "taints": NOEXECUTE},
                {"name": "a4", "machine_type": "a4-highgpu-8g", "nodes": {"min": 4, "max": 4},
                 "capacity": {"type": "reservation", "id": "a4-resv", "block": "a4-resv-block-0001"}},
            ],
            "storage": {"buckets": [{"name": "checkpoints"}],
                        "lustre": {"capacity_tib": 18, "throughput_mbps_per_tib": 1000, "bucket": "checkpoints"}},
            "addons": {"gpu_driver": "cloud"},
        }],
    },
    "azure-nd-h200": {
        "cloud": "azure", "account": "3f2a6b1c-9d4e-4f5a-8b7c-1d2e3f4a5b6c", "monthly_budget_usd": 1_000_000,
        "tags": TAGS,
        "clusters": [{
            "name": "nd", "region": "eastus2", "zones": ["1", "2"],
            "admins": ["5b8f3c2e-7a41-4d6b-9e0f-2c3d4e5f6a7b"],
            "node_pools": [
                {"name": "h200", "machine_type": "Standard_ND96isr_H200_v5", "nodes": {"min": 2, "max": 2},
                 "zone": "1", "capacity": {"type": "reservation", "id": (
                     "/subscriptions/3f2a6b1c-9d4e-4f5a-8b7c-1d2e3f4a5b6c/resourceGroups/capacity/providers/"
                     "Microsoft.Compute/capacityReservationGroups/nd-h200")}, "taints": NOEXECUTE},
                {"name": "evalspot", "accelerator": "H100-NVL", "gpus": 1, "nodes": {"min": 0, "max": 4}, "zone": "2",
                 "capacity": {"type": "spot", "max_usd_per_hour": 4.5}},
            ],
            "storage": {"buckets": [{"name": "checkpoints"}],
                        "lustre": {"capacity_tib": 8, "throughput_mbps_per_tib": 250, "bucket": "checkpoints"}},
            "addons": {"gpu_driver": "cloud"},
        }],
    },
}

NAMES = sorted(_FLEETS)


def readme_fleet(name: str) -> dict[str, Any]:
    """A deep copy of one README-shaped fleet, for a test to mutate."""
    return copy.deepcopy(_FLEETS[name])
