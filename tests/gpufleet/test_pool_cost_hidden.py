"""A pool whose size the preview cannot see is shown unpriced under its own cloud, on each cloud: never $0, never
a pool of no cloud (the cost table groups and totals by cloud)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.engine.capture import UNKNOWN_MASK, Resource
from gpufleet.review import cost


@pytest.mark.parametrize(("type_", "inputs", "cloud"), [
    ("aws:eks/nodeGroup:NodeGroup", {"instanceTypes": ["p5.48xlarge"], "scalingConfig": UNKNOWN_MASK}, "aws"),
    ("gcp:container/nodePool:NodePool", {"nodeConfig": {"machineType": "a3-highgpu-8g"}, "nodeCount": UNKNOWN_MASK},
     "gcp"),
    ("azure-native:containerservice:AgentPool", {"vmSize": "Standard_ND96isr_H100_v5", "count": UNKNOWN_MASK},
     "azure"),
])
def test_a_pool_of_unknown_size_is_unpriced_under_its_cloud(type_: str, inputs: dict, cloud: str) -> None:
    prices = cost.Prices.load(Path(__file__).parent / "data" / "offers.csv")
    (pool,) = cost.pool_costs([Resource(type_, "train", None, True, inputs, [])], prices)
    assert (pool.cloud, pool.hidden, pool.usd_per_node_hour) == (cloud, UNKNOWN_MASK, None)
