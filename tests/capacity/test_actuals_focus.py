"""The actuals code held to the FOCUS digest (capacity/data/recorded/focus_spec.json), never to names typed here."""

from __future__ import annotations

from capacity.actuals import focus, load
from tests.capacity.focus_files import COLUMNS, DIGEST


def test_every_column_read_is_a_focus_1_2_column() -> None:
    assert set(focus.TYPES) <= set(focus.columns("1.2"))
    assert set(COLUMNS) <= set(focus.columns("1.2"))


def test_the_columns_required_are_mandatory_in_every_1_x_release() -> None:
    for version in focus.READ:
        for column in (*focus.NEEDED, "BillingCurrency"):
            assert focus.columns(version)[column]["feature_level"] == "Mandatory", (version, column)


def test_checked_values_and_time_units_come_from_the_spec() -> None:
    assert focus.allowed("CommitmentDiscountStatus") == ["Used", "Unused"]
    assert focus.allowed("CapacityReservationStatus") == ["Used", "Unused"]
    assert "Usage" in focus.allowed("ChargeCategory") and "Purchase" in focus.allowed("ChargeCategory")
    assert set(load.HOURS_PER) <= set(DIGEST["time_units"])


def test_capacity_reservation_columns_arrived_in_1_1() -> None:
    assert "CapacityReservationId" not in focus.columns("1.0")
    assert focus.columns("1.1")["CapacityReservationId"]["introduced"] == "1.1"


def test_machine_names_as_bills_spell_them() -> None:
    assert load.norm("Standard_ND96isr_H100_v5") == "nd96isr-h100-v5"
    assert load.norm("p5.48xlarge") == "p5.48xlarge"
    assert load.norm("a3-megagpu-8g") == "a3-megagpu-8g"
