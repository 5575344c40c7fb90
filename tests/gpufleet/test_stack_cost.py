"""The cost `gpufleet preview` shows for a stack (gpufleet/review/stack_cost.py): per pool price and source, the
total against the budget, what it leaves out; unknown is never $0. Prices here are a labelled FAKE table so the
figures can be worked by hand whatever the bundled snapshot holds."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from capacity.prices.table import Offer, Prices
from gpufleet.cli import app
from gpufleet.engine.preview import Preview, preview_stack
from gpufleet.review.cost import NOT_COUNTED
from gpufleet.review.stack_cost import document, headline
from policies.props import LUSTRES
from stacks.config import STACKS_DIR

# FAKE rates for azure-train's two pools (stacks/Pulumi.azure-train.yaml: 8 x ND96isr H100 v5 on a capacity
# reservation, up to 8 x NC40ads H100 v5 on spot), eastus2
H100 = ("azure", "eastus2", "Standard_ND96isr_H100_v5", "reservation")
SPOT = ("azure", "eastus2", "Standard_NC40ads_H100_v5", "spot")
FAKE = {H100: Offer(100.0, "FAKE reservation rate"), SPOT: Offer(5.0, "FAKE spot rate")}


@pytest.fixture(scope="module")
def azure_with_lustre() -> Preview:
    return preview_stack("azure-train", STACKS_DIR)


@pytest.fixture(scope="module")
def azure(azure_with_lustre: Preview) -> Preview:
    """azure-train without its Lustre file system, so these tests see the pools alone (test_lustre_* below)."""
    graph = azure_with_lustre.graph
    return replace(azure_with_lustre, graph=replace(graph, resources=[r for r in graph.resources
                                                                      if r.type not in LUSTRES]))


def test_within_budget_by_hand(azure: Preview) -> None:
    doc = document(azure, Prices(FAKE, as_of="2026-11-30"))
    # 8 x $100 x 730 h = $584,000; 8 x $5 x 730 h = $29,200; total $613,200, budget $650,000 (the stack file)
    assert doc["monthly_usd"] == pytest.approx(613_200) and doc["budget_usd"] == 650_000 and not doc["at_least"]
    assert {p["source"] for p in doc["pools"]} == {"FAKE reservation rate", "FAKE spot rate"}
    assert headline(doc) == "$613,200 a month, within its $650,000 budget"
    assert doc["not_counted"] == NOT_COUNTED and "buckets" in NOT_COUNTED
    assert doc["buckets_not_counted"] == ["train-checkpoints-account (Blob)"]  # excluded, by name


def test_over_budget_by_hand(azure: Preview) -> None:
    spec = azure.fleet.spec.model_copy(update={"monthly_budget_usd": 600_000})
    doc = document(replace(azure, fleet=replace(azure.fleet, spec=spec)), Prices(FAKE))
    assert headline(doc) == "$613,200 a month, over its $600,000 budget by $13,200"


def test_an_unpriced_pool_makes_the_total_a_lower_bound(azure: Preview) -> None:
    doc = document(azure, Prices({H100: FAKE[H100]}))  # no spot rate, no on-demand fallback: the spot pool unpriced
    assert doc["at_least"] and doc["monthly_usd"] == pytest.approx(584_000)
    assert doc["unpriced_pools"] == ["azure-native:containerservice:AgentPool::train-evalspot-pool"]
    [spot] = [p for p in doc["pools"] if p["option"] == "spot"]
    assert spot["usd_per_node_hour"] is None and spot["monthly_usd"] is None  # never $0
    assert headline(doc) == ("at least $584,000 a month, so maybe over its $650,000 budget: what is unpriced is "
                             "not counted")


def test_lustre_without_a_sourced_rate_is_unpriced_never_zero(azure_with_lustre: Preview) -> None:
    """No Azure Managed Lustre rate is sourced (capacity/data/prices/typed.json, lustre.not_sourced): the pools'
    total stands as a lower bound and the file system is named, with its tier and region."""
    doc = document(azure_with_lustre, Prices(FAKE))
    assert doc["at_least"] and doc["monthly_usd"] == pytest.approx(613_200)
    [fs] = doc["storage"]
    assert (fs["service"], fs["tier"], fs["region"], fs["capacity_tib"]) == (
        "Azure Managed Lustre", "AMLFS-Durable-Premium-500", "eastus2", 16)  # stacks/Pulumi.azure-train.yaml
    assert fs["monthly_usd"] is None and fs["source"].startswith("unpriced: no sourced Azure Managed Lustre rate")
    assert doc["unpriced_storage"] == [fs["resource"]] and doc["unpriced_pools"] == []


def test_preview_shows_the_cost_line_and_documents_it() -> None:
    runner = CliRunner()
    text = runner.invoke(app, ["preview", "--stack", "dev", "--no-tree", "--no-policies"]).stdout
    assert "stack dev: monthly cost of its node pools" in text and "not counted: buckets" in text
    doc = json.loads(runner.invoke(app, ["preview", "--stack", "dev", "--format", "json", "--no-policies"]).stdout)
    assert set(doc["cost"]) == {"hours_per_month", "monthly_usd", "at_least", "budget_usd", "prices_as_of",
                                "unpriced_pools", "unpriced_storage", "hidden_pools", "not_counted",
                                "buckets_not_counted", "storage", "pools"}
