"""The PR cost delta prices each pool at its own region's row, spot pools at the spot row (on-demand pools at the
on-demand row), and falls back to another region only when its own has no offer. The price table is built here
(a test table with two regions and different prices per region and option), so a pool priced at the wrong row
cannot pass by coincidence."""

from __future__ import annotations

from dataclasses import replace

import pytest

from capacity.prices.table import Offer, Prices
from gpufleet.engine.capture import Graph, run_program
from gpufleet.review.cost import pool_costs
from stacks.config import CONFIG_KEY
from tests.conftest import example_fleet

ROWS = {("aws", "us-west-2", "g6.xlarge", "spot"): 0.25, ("aws", "us-west-2", "g6.xlarge", "on_demand"): 0.75,
        ("aws", "us-east-1", "g6.xlarge", "spot"): 9.0, ("aws", "us-east-1", "g6.xlarge", "on_demand"): 20.0}


@pytest.fixture(scope="module")
def dev() -> Graph:
    """The dev example: up to 4 g6.xlarge on spot in us-west-2."""
    return run_program("dev", {CONFIG_KEY: example_fleet("dev")})


def _gpu_pool(graph: Graph, rows: dict[tuple[str, str, str, str], float]):
    prices = Prices({k: Offer(v, f"test {k[1]} {k[3]}") for k, v in rows.items()})
    [pool] = [c for c in pool_costs(graph.resources, prices) if c.machine_type == "g6.xlarge"]
    return pool


def test_spot_pool_at_its_own_regions_spot_row(dev: Graph) -> None:
    pool = _gpu_pool(dev, ROWS)
    assert (pool.region, pool.option, pool.usd_per_node_hour, pool.nodes) == ("us-west-2", "spot", 0.25, 4)
    assert pool.monthly_usd == pytest.approx(0.25 * 4 * 730)


def test_on_demand_pool_at_its_own_regions_on_demand_row(dev: Graph) -> None:
    graph = replace(dev, resources=[replace(r, inputs={**r.inputs, "capacityType": "ON_DEMAND"})
                                    if r.type == "aws:eks/nodeGroup:NodeGroup" else r for r in dev.resources])
    pool = _gpu_pool(graph, ROWS)
    assert (pool.region, pool.option, pool.usd_per_node_hour) == ("us-west-2", "on_demand", 0.75)


def test_another_regions_row_only_when_its_own_has_none(dev: Graph) -> None:
    pool = _gpu_pool(dev, {k: v for k, v in ROWS.items() if k[1] != "us-west-2"})
    assert (pool.option, pool.usd_per_node_hour) == ("spot", 9.0)
    assert "us-east-1" in pool.source


@pytest.mark.parametrize("option", [False, "ondemand", "SPOT", ""])
def test_an_unknown_option_is_refused_not_priced_from_the_list_table(option: object) -> None:
    """Before this guard, node_hour(..., False) (the old ``spot: bool`` signature) matched no row and silently fell
    through to the list-price table; seven priced machine types looked unpriced."""
    prices = Prices({k: Offer(v, "test") for k, v in ROWS.items()},
                    list_prices={("aws", "g6.xlarge"): Offer(1.0, "list")})
    with pytest.raises(ValueError, match="unknown purchase option"):
        prices.price("aws", "us-west-2", "g6.xlarge", option)  # type: ignore[arg-type]
    assert prices.price("aws", "us-west-2", "g6.xlarge", "spot") == Offer(0.25, "test")


def test_spot_without_on_demand_falls_back_to_the_reserved_rate_labelled() -> None:
    """GCP A4: Google sells no on-demand, the snapshot has no spot row: the reserved rate, said to be an upper bound."""
    prices = Prices({("gcp", "us-central1", "a4-highgpu-8g", "reservation"): Offer(100.0, "resv")})
    offer = prices.price("gcp", "us-central1", "a4-highgpu-8g", "spot")
    assert offer == Offer(100.0, "no spot offer: the reserved (on-demand-equivalent) rate, an upper bound; resv")
