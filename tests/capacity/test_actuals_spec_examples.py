"""`capacity actuals` on the FOCUS specification's own worked examples (FOCUS_Spec v1.2, specification/data/):
each commitment's utilisation is the one the specification states for the example (e.g. 75 % for usage scenario 3),
read from CSV and from Parquet."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.capacity.focus_files import DIGEST, actuals_json, to_parquet, write_csv

EXAMPLES = {Path(e["path"]).stem: e for e in DIGEST["examples"]}


def test_the_digest_holds_the_examples_the_spec_states_a_utilisation_for() -> None:
    assert DIGEST["source"]["tag"] == "v1.2"
    scenario = EXAMPLES["commitment_discount_usage_scenario_3"]
    assert scenario["utilization"] == 0.75 and "(75% utilization)" in scenario["statement"]
    assert {e["utilization"] for e in EXAMPLES.values()} == {0.0, 0.75, 1.0}
    assert len(EXAMPLES) == 8


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_utilisation_is_what_the_spec_states(tmp_path: Path, name: str, fmt: str) -> None:
    example = EXAMPLES[name]
    path = write_csv(tmp_path / f"{name}.csv", example["rows"])
    if fmt == "parquet":
        path = to_parquet(path)
    doc = actuals_json(tmp_path / "actuals.duckdb", "--focus", str(path), "--currency", "USD")
    assert [c["id"] for c in doc["commitments"]] == ["<my-commitment-discount-id>"]
    commitment = doc["commitments"][0]
    assert commitment["utilization"] == pytest.approx(example["utilization"])
    used = sum(float(r["EffectiveCost"]) for r in example["rows"] if r.get("CommitmentDiscountStatus") == "Used")
    unused = sum(float(r["EffectiveCost"]) for r in example["rows"] if r.get("CommitmentDiscountStatus") == "Unused")
    assert (commitment["used_cost_usd"], commitment["unused_cost_usd"]) == pytest.approx((used, unused))
    assert commitment["cloud"] is None  # the examples name no provider: unknown, not guessed
    assert doc["files"] == [{"file": str(path.resolve()), "rows": len(example["rows"])}]


def test_scenario_4s_overage_is_on_demand_spend_not_commitment_use(tmp_path: Path) -> None:
    rows = EXAMPLES["commitment_discount_usage_scenario_4"]["rows"]
    path = write_csv(tmp_path / "s4.csv", rows)
    doc = actuals_json(tmp_path / "db.duckdb", "--focus", str(path), "--currency", "USD")
    assert doc["commitments"][0]["used_cost_usd"] == 1.0  # the $0.50 overage row carries no commitment id
    assert doc["commitments"][0]["utilization"] == 1.0
