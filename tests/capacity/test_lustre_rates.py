"""Lustre rates (capacity/prices/lustre.py, the "lustre" rows of capacity/data/prices/typed.json) and how a file
system's own inputs are read against them (policies/storage.py): a rate prices exactly its cloud, region and tier,
nothing else; a masked size is unknown, never 0; a bad row is refused with where and why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capacity.prices.lustre import FIELDS, rate, rates
from policies.props import AZURE_LUSTRE, FSX_LUSTRE, GCP_LUSTRE
from policies.storage import lustre_cost, tier

FSX = {"deploymentType": "PERSISTENT_2", "storageType": "SSD", "perUnitStorageThroughput": 125,
       "storageCapacity": 4800}


def test_the_sourced_row_says_where_it_was_typed_from() -> None:
    found = rate("aws", "us-east-1", "PERSISTENT_2/SSD/125")
    assert found is not None and found.usd_per_unit_month == 0.145 and found.unit == "GB-month"
    assert found.provenance == f"typed from {found.source} on 2026-12-02"
    assert found.source.startswith("https://c3x.dev/resources/aws/aws_fsx_lustre_file_system/")


@pytest.mark.parametrize(("region", "grade"), [("us-west-2", "PERSISTENT_2/SSD/125"),  # another region
                                                ("us-east-1", "PERSISTENT_2/SSD/500"),  # another tier
                                                (None, "PERSISTENT_2/SSD/125")])  # a region nobody knows
def test_a_rate_is_never_applied_elsewhere(region: str | None, grade: str) -> None:
    assert rate("aws", region, grade) is None


def test_fsx_is_billed_on_its_storage_capacity_figure() -> None:
    """AWS bills storageCapacity (GiB; 1.2 TiB is 1,200) per GB-month: 4,800 x $0.145 = $696, by hand."""
    cost = lustre_cost(FSX_LUSTRE, "fsx", FSX, "us-east-1")
    assert cost.monthly_usd == pytest.approx(696.0) and cost.tib == pytest.approx(4.8)
    assert cost.described == "fsx (FSx for Lustre 4.8 TiB, tier PERSISTENT_2/SSD/125, us-east-1)"


def test_unpriced_and_unknown_are_not_zero() -> None:
    elsewhere = lustre_cost(FSX_LUSTRE, "fsx", FSX, "eu-west-1")
    assert elsewhere.monthly_usd is None
    assert elsewhere.source == ("unpriced: no sourced FSx for Lustre rate for tier PERSISTENT_2/SSD/125 in "
                                "eu-west-1 (capacity/data/prices/typed.json)")
    masked = lustre_cost(FSX_LUSTRE, "fsx", {**FSX, "storageCapacity": "[unknown]"}, "us-east-1")
    assert masked.capacity is None and masked.monthly_usd is None
    assert masked.described == "fsx (FSx for Lustre size unknown until apply, tier PERSISTENT_2/SSD/125, us-east-1)"


def test_tiers_as_each_cloud_spells_them() -> None:
    """GCP's API takes the throughput as a string, captured graphs may hold a number: the same tier."""
    assert tier(GCP_LUSTRE, {"perUnitStorageThroughput": "500"}) == tier(GCP_LUSTRE,
                                                                         {"perUnitStorageThroughput": 500.0}) == "500"
    assert tier(AZURE_LUSTRE, {"sku": {"name": "AMLFS-Durable-Premium-250"}}) == "AMLFS-Durable-Premium-250"
    assert tier(FSX_LUSTRE, FSX) == "PERSISTENT_2/SSD/125"


def _typed(tmp_path: Path, row: dict) -> Path:
    path = tmp_path / "typed.json"
    path.write_text(json.dumps({"lustre": {"rates": [row]}}))
    return path


GOOD = {"cloud": "gcp", "region": "us-central1", "tier": "500", "unit": "GiB-month", "usd_per_unit_month": 0.3,
        "as_of": "2026-12-02", "source": "test fixture, not a real rate"}


@pytest.mark.parametrize(("change", "says"), [
    ({"unit": "PB-year"}, "lustre.rates[0]: unit 'PB-year' is not one of GB-month, GiB-month, TiB-month"),
    ({"usd_per_unit_month": 0}, "usd_per_unit_month 0 must be a positive number"),
    ({"page": "x"}, "missing none, unknown page"),
])
def test_a_bad_row_is_refused_with_where_and_why(tmp_path: Path, change: dict, says: str) -> None:
    row = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    with pytest.raises(ValueError, match=says.replace("[", r"\[").replace("]", r"\]")):
        rates(_typed(tmp_path, row))


def test_a_missing_field_is_named(tmp_path: Path) -> None:
    row = {k: v for k, v in GOOD.items() if k != "as_of"}
    with pytest.raises(ValueError, match="missing as_of, unknown none"):
        rates(_typed(tmp_path, row))


JSONISH = st.recursive(st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=8),
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                                  max_size=3), max_leaves=6)


@given(st.dictionaries(st.sampled_from(sorted(FIELDS | {"page"})), JSONISH))
def test_any_row_loads_or_is_refused_with_a_clear_error(tmp_path_factory: pytest.TempPathFactory, row: dict) -> None:
    path = tmp_path_factory.mktemp("typed") / "typed.json"
    path.write_text(json.dumps({"lustre": {"rates": [row]}}))
    try:
        loaded = rates(path)
    except ValueError as err:
        assert "lustre.rates[0]" in str(err)
    else:
        [found] = loaded.values()
        assert found.usd_per_unit_month > 0 and found.unit in ("GB-month", "GiB-month", "TiB-month")
