"""Pools are priced at the option they buy: capacity blocks and reservations as prepaid, labelled."""

from __future__ import annotations

import pytest

from capacity.prices.table import Offer
from gpufleet.engine.capture import Resource
from gpufleet.review import cost
from policies.props import GKE_NODE_POOL, LAUNCH_TEMPLATE, node_pool
from tests.conftest import example_fleet

NG = "aws:eks/nodeGroup:NodeGroup"
SUBNET = Resource("aws:ec2/subnet:Subnet", "sub-a", None, True, {"availabilityZone": "us-east-1a"}, [])
BLOCK_USD = 40.0  # a FAKE capacity-block rate added below (the snapshot has no sourced one: docs/capacity.md)
ON_DEMAND_USD = 55.04  # the snapshot's p5.48xlarge us-east-1 on-demand rate (tsaol/aws-gpu digest, 2026-01-21)


def ng(nodes: int, capacity: str, deps: tuple[str, ...] = ()) -> Resource:
    return Resource(NG, "h", None, True, {"instanceTypes": ["p5.48xlarge"], "scalingConfig": {"maxSize": nodes},
                                          "capacityType": capacity}, [SUBNET.key, *deps])


@pytest.fixture(scope="module")
def prices() -> cost.Prices:
    return cost.Prices.load()


def test_a_capacity_block_pool_is_priced_as_one_and_shrinking_it_saves_nothing(prices: cost.Prices) -> None:
    prices = cost.Prices({**prices.offers, ("aws", "us-east-1", "p5.48xlarge", "capacity_block"):
                          Offer(BLOCK_USD, "fake capacity-block rate, https://aws.amazon.com/ec2/capacityblocks/")})
    before = cost.pool_costs([SUBNET, ng(16, "CAPACITY_BLOCK")], prices)
    assert before[0].option == "capacity_block" and "Capacity Block" in before[0].label
    assert before[0].usd_per_node_hour == pytest.approx(BLOCK_USD)
    assert before[0].monthly_usd == pytest.approx(16 * BLOCK_USD * 730)
    shrunk = cost.pool_costs([SUBNET, ng(8, "CAPACITY_BLOCK")], prices, before)
    assert shrunk[0].nodes == 8 and shrunk[0].monthly_usd == pytest.approx(before[0].monthly_usd)
    grown = cost.pool_costs([SUBNET, ng(24, "CAPACITY_BLOCK")], prices, before)
    assert grown[0].monthly_usd == pytest.approx(24 * BLOCK_USD * 730)
    left = cost.pool_costs([SUBNET, ng(8, "ON_DEMAND")], prices, before)  # off the block: on-demand, 8 nodes
    assert left[0].monthly_usd == pytest.approx(8 * ON_DEMAND_USD * 730)


def test_an_eks_pool_on_a_reservation_is_read_from_its_launch_template(prices: cost.Prices) -> None:
    template = Resource(LAUNCH_TEMPLATE, "lt", None, True, {"capacityReservationSpecification": {
        "capacityReservationTarget": {"capacityReservationId": "cr-0123456789abcdef0"}}}, [])
    costs = cost.pool_costs([SUBNET, template, ng(4, "ON_DEMAND", (template.key,))], prices)
    assert costs[0].option == "reservation" and costs[0].label == "On-Demand Capacity Reservation"
    assert costs[0].usd_per_node_hour == pytest.approx(ON_DEMAND_USD)  # an ODCR bills the on-demand rate


@pytest.mark.parametrize(("node_config", "extra", "option"), [
    ({"reservationAffinity": {"consumeReservationType": "SPECIFIC_RESERVATION"}}, {}, "reservation"),
    ({"flexStart": True}, {"queuedProvisioning": {"enabled": True}}, "flex_start"),
    ({"spot": True}, {}, "spot"),
    ({"reservationAffinity": {"consumeReservationType": "NO_RESERVATION"}}, {}, "on_demand"),
])
def test_gke_pool_options(node_config: dict, extra: dict, option: str) -> None:
    pool = node_pool(GKE_NODE_POOL, {"nodeConfig": {"machineType": "a3-megagpu-8g", **node_config},
                                     "nodeCount": 1, **extra})
    assert pool is not None and pool.capacity == option


def test_the_pr_comment_states_the_price_date_and_warns_when_stale(prices: cost.Prices) -> None:
    from gpufleet.review import comment, report
    from gpufleet.review.diff import diff_resources

    head = [SUBNET, ng(16, "CAPACITY_BLOCK")]
    r = report.build(diff_resources("aws-train", [], head), prices)
    # the snapshot's oldest price: the AWS spot and 3-year digest (capacity/data/prices/aws_spot_3y.csv), 2025-11-30
    assert r.prices_as_of == prices.as_of == "2025-11-30"
    text = comment.render([r])
    assert f"prices from the snapshot as of {prices.as_of}" in text and "> **Warning:** Prices are as of" in text
    assert report.document([r])["prices"]["stale"] is True


def test_the_azure_crg_pool_of_the_example_stack_is_priced_as_a_reservation(capture, prices: cost.Prices) -> None:
    """The AKS pool names its capacity reservation group through the SDK's input (capacityReservationGroupID): the
    cost reads that very input from the captured graph, so the pool is prepaid at the reservation rate."""
    graph = capture(example_fleet("azure-train"))
    costs = {c.key.split("::")[-1]: c for c in cost.pool_costs(graph.resources, prices)}
    h100 = costs["train-h100-pool"]
    assert h100.option == "reservation" and "reservation" in h100.label
    assert costs["train-evalspot-pool"].option == "spot"
