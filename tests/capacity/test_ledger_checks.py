"""Ledger flags at their boundaries: expired (end <= now), ending within N days (end <= now + N days), idle-billed
(active, no pool references it); unknown ends and states are not judged."""

from __future__ import annotations

import datetime as dt

import pytest

from capacity.ledger.checks import PoolUse, check, judge
from capacity.ledger.model import Entry, Kind, Reference

NOW = dt.datetime(2026, 3, 1, 12, tzinfo=dt.UTC)
POOL = [Reference(stack="aws-train", cluster="train", pool="h100")]


def entry(end: dt.datetime | None, references: list[Reference] = POOL, active: bool | None = True) -> Entry:
    return Entry(cloud="aws", kind=Kind.CAPACITY_BLOCK, id="cr-0a1b2c3d4e5f60718", gpus=128, zone="use1-az6", end=end,
                 references=references, active=active)


@pytest.mark.parametrize(("end", "rule"), [
    (NOW - dt.timedelta(seconds=1), "expired"), (NOW, "expired"),
    (NOW + dt.timedelta(seconds=1), "ending"), (NOW + dt.timedelta(days=30), "ending"),
    (NOW + dt.timedelta(days=30, seconds=1), None), (None, None)])
def test_a_referenced_end_at_each_boundary(end: dt.datetime | None, rule: str | None) -> None:
    flags = check([entry(end)], NOW, warn_days=30)
    assert [f.rule for f in flags] == ([rule] if rule else [])
    if rule:
        assert flags[0].pools == ["aws-train/train/h100"] and end is not None
        assert end.date().isoformat() in flags[0].message


def test_the_warning_window_is_configurable() -> None:
    soon = entry(NOW + dt.timedelta(days=10))
    assert [f.rule for f in check([soon], NOW, warn_days=10)] == ["ending"]
    assert check([soon], NOW, warn_days=9) == []


@pytest.mark.parametrize(("active", "flagged"), [(True, True), (False, False), (None, False)])
def test_unreferenced_capacity_is_idle_billed_only_when_active(active: bool | None, flagged: bool) -> None:
    flags = check([entry(None, references=[], active=active)], NOW)
    assert [f.rule for f in flags] == (["idle_billed"] if flagged else [])
    if flagged:
        assert "no pool of the stacks references it" in flags[0].message and "128 GPUs in use1-az6" in flags[0].message


# judge: the pools of a change against a recorded ledger (what the policy pack and the PR comment ask)
def use(capacity_id: str | None, stack: str = "aws-train", pool: str = "h100", region: str = "us-east-1") -> PoolUse:
    return PoolUse(stack=stack, cloud="aws", region=region, cluster="train", pool=pool, capacity_id=capacity_id)


def recorded(**fields: object) -> Entry:
    base = {"cloud": "aws", "kind": Kind.CAPACITY_BLOCK, "id": "cr-0a1b2c3d4e5f60718", "region": "us-east-1",
            "gpus": 128, "zone": "use1-az6", "end": NOW + dt.timedelta(days=60), "references": POOL, "active": True,
            "state": "active", "source": "stacks+live"}
    return Entry(**{**base, **fields})  # type: ignore[arg-type]


def test_a_pool_the_change_moves_off_leaves_its_block_idle() -> None:
    # recorded: aws-train/train/h100 draws on the block; the head graph's h100 pool is on demand now
    flags = judge([recorded()], [use(None)], NOW)
    assert [(f.rule, f.id) for f in flags] == [("idle_billed", "cr-0a1b2c3d4e5f60718")]
    assert judge([recorded()], [use("cr-0a1b2c3d4e5f60718")], NOW) == []


def test_another_clusters_reference_is_kept() -> None:
    # the same cluster name in another region is another cluster: its reference stands, the block is not idle
    other = recorded(references=[Reference(stack="staging", cluster="train", pool="h100")])
    assert judge([other], [use(None, region="us-west-2")], NOW) == []


def test_what_the_ledger_cannot_judge_is_undecided_never_passed() -> None:
    offline = recorded(end=None, active=None, state=None, source="stacks")
    flags = judge([offline], [use("cr-0a1b2c3d4e5f60718")], NOW)
    assert [f.rule for f in flags] == ["undecided", "idle_undecided"]
    assert "state is unknown (stacks: record it with --live)" in flags[0].message
    assert flags[0].pools == ["aws-train/train/h100"]
    missing = judge([recorded()], [use("cr-00000000000000abc")], NOW)
    assert [(f.rule, f.id) for f in missing] == [("undecided", "cr-00000000000000abc"),
                                                   ("idle_billed", "cr-0a1b2c3d4e5f60718")]
    # a reservation held until released (live, no end) is judged: not ended
    assert judge([recorded(end=None)], [use("cr-0a1b2c3d4e5f60718")], NOW) == []
    # scheduled, starting later: not ended either
    later = recorded(end=None, active=False, state="scheduled", start=NOW + dt.timedelta(days=1))
    assert judge([later], [use("cr-0a1b2c3d4e5f60718")], NOW) == []


def test_a_gcp_reservation_matches_however_the_pool_spells_it() -> None:
    reservation = Entry(cloud="gcp", kind=Kind.RESERVATION, id="a3mega-train", region="us-central1", gpus=64,
                        active=True, state="READY", source="live")
    for spelt in ("a3mega-train", "projects/p-123/reservations/a3mega-train",
                  "projects/p-123/zones/us-central1-a/reservations/a3mega-train/reservationBlocks/b1"):
        pool = PoolUse(stack="gcp-train", cloud="gcp", region="us-central1", cluster="train", pool="h100",
                       capacity_id=spelt)
        assert judge([reservation], [pool], NOW) == [], spelt


def test_idle_capacity_elsewhere_is_not_this_changes() -> None:
    far = recorded(id="cr-0fedcba9876543210", region="us-west-2", references=[])
    assert judge([recorded(), far], [use("cr-0a1b2c3d4e5f60718")], NOW) == []
