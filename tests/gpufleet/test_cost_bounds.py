"""Unknown is never $0: a pool without a price makes totals a lower bound ("at least") and the delta a bound whose
direction depends on which side holds the unpriced pool; the gate blocks a head with an unpriced GPU pool."""

from __future__ import annotations

from gpufleet.review import cost, gate
from gpufleet.review.cost import PoolCost
from gpufleet.review.diff import diff_resources
from gpufleet.review.report import StackReport


def pool(name: str, usd: float | None, nodes: int = 2, gpus: int = 16) -> PoolCost:
    return PoolCost(f"aws:eks/nodeGroup:NodeGroup::{name}", "aws", "us-east-1", "p5.48xlarge", nodes, gpus, "H100",
                    "on_demand", usd, "test" if usd else "no offer")


PRICED = pool("a", 10.0)  # 2 nodes x $10 x 730 h = $14,600
UNPRICED = pool("b", None)


def test_a_total_with_an_unpriced_pool_is_at_least_the_priced_pools() -> None:
    assert cost.money([PRICED]) == "$14,600"
    assert cost.money([PRICED, UNPRICED]) == "at least $14,600 (b unpriced)"


def test_the_delta_bound_follows_the_side_that_holds_the_unpriced_pool() -> None:
    assert cost.bound([PRICED], [PRICED]) == "exact"
    assert cost.bound([PRICED], [PRICED, UNPRICED]) == "at_least"  # the head adds an unknown >= 0
    assert cost.money_delta([PRICED], [PRICED, UNPRICED]) == "at least +0 USD"
    assert cost.bound([PRICED, UNPRICED], [PRICED]) == "at_most"  # the base had an unknown >= 0 more
    assert cost.money_delta([UNPRICED], [PRICED]) == "at most +14,600 USD"
    grown = pool("b", None, nodes=4)
    assert cost.bound([UNPRICED], [grown]) == "unknown" and cost.money_delta([UNPRICED], [grown]) == "change unknown"
    assert cost.bound([PRICED, UNPRICED], [PRICED, UNPRICED]) == "exact"  # left as it was: cancels out


def test_the_gate_blocks_an_unpriced_gpu_pool_and_not_an_unpriced_cpu_pool() -> None:
    diff = diff_resources("s", [], [])

    def report(after: list[PoolCost]) -> StackReport:
        return StackReport(diff, [], [], after)

    assert gate.exit_code(gate.stops([report([PRICED])])) == gate.OK
    found = gate.stops([report([PRICED, UNPRICED])])
    assert gate.exit_code(found) == gate.BLOCKED == 3
    assert found[0].reason.startswith("cannot price GPU pool b (2 x p5.48xlarge, on-demand, us-east-1)")
    assert gate.stops([report([pool("system", None, gpus=0)])]) == []
