"""Ledger flags at their boundaries: expired (end <= now), ending within N days (end <= now + N days), idle-billed
(active, no pool references it); unknown ends and states are not judged."""

from __future__ import annotations

import datetime as dt

import pytest

from capacity.ledger.checks import check
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
