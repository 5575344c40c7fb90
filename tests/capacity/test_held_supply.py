"""Which ledger entries are held capacity for the planner (capacity/ledger/supply.py, docs/capacity.md "Held
capacity"): active or scheduled capacity of a catalogue GPU machine type, in whole nodes; everything else is left
out with its reason, never taken as capacity of unknown size or end."""

from __future__ import annotations

import datetime as dt

import pytest

from capacity.ledger.model import Entry, Kind
from capacity.ledger.supply import held
from capacity.schema import Option

END = dt.datetime(2027, 2, 1, tzinfo=dt.UTC)


def entry(**changes: object) -> Entry:
    base = {"cloud": "aws", "kind": Kind.CAPACITY_BLOCK, "id": "cr-1", "region": "us-east-1",
            "machine_type": "p5.48xlarge", "gpus": 128, "end": END, "state": "active", "active": True}
    return Entry.model_validate({**base, **changes})


def test_an_active_block_is_held_in_whole_nodes() -> None:
    rows, left = held([entry(gpus=132)])  # 16 nodes and 4 GPUs: only whole nodes hold a node's work
    assert left == []
    assert [(r.id, r.gpu, r.gpus, r.option, r.end) for r in rows] == [("cr-1", "H100", 128, Option.CAPACITY_BLOCK,
                                                                       END)]


@pytest.mark.parametrize(("changes", "option"), [
    ({"kind": Kind.CAPACITY_RESERVATION, "end": None}, Option.RESERVATION),  # an ODCR held until released
    ({"state": "scheduled", "active": False}, Option.CAPACITY_BLOCK),  # bought, starts later
    ({"cloud": "gcp", "kind": Kind.RESERVATION, "region": "us-central1", "machine_type": "a3-megagpu-8g",
      "state": "READY", "end": None}, Option.RESERVATION),
])
def test_held_kinds(changes: dict, option: Option) -> None:
    rows, left = held([entry(**changes)])
    assert left == [] and [r.option for r in rows] == [option]


@pytest.mark.parametrize(("changes", "why"), [
    ({"state": None, "active": None, "end": None}, "its state and end are unknown (the ledger was read offline)"),
    ({"state": "expired", "active": False}, "not active (state expired)"),
    ({"end": None}, "a capacity block without a known end"),
    ({"gpus": 4}, "it holds 4 GPUs, not a whole node of 8"),
    ({"gpus": None}, "it holds an unknown number of GPUs"),
    ({"machine_type": "m7i.2xlarge"}, "machine type m7i.2xlarge is not a catalogue GPU machine type"),
    ({"region": None}, "its region is unknown"),
    ({"cloud": "gcp", "kind": Kind.COMMITMENT, "machine_type": None, "state": "ACTIVE"},
     "a committed use discount pays for the reservations attached to it"),
])
def test_what_is_left_out_says_why(changes: dict, why: str) -> None:
    rows, left = held([entry(**changes)])
    assert rows == [] and len(left) == 1 and why in left[0]


def test_the_plans_own_purchases_are_not_held() -> None:
    assert held([entry(kind=Kind.PLANNED, state="planned", active=False)]) == ([], [])
