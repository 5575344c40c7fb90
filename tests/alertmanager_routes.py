"""Alertmanager's routing, as its documentation describes it, to walk a rendered route tree in tests (an
independent reading of the docs, not the code under test)."""

from __future__ import annotations

import re
from typing import Any


def _matches(matcher: str, labels: dict[str, str]) -> bool:
    """One Alertmanager matcher (`name="v"`, `name=~"re"`), the regex anchored at both ends as Alertmanager does
    (https://prometheus.io/docs/alerting/latest/configuration/#matcher)."""
    m = re.fullmatch(r'\s*(\w+)\s*(=~|=)\s*"(.*)"\s*', matcher)
    assert m, f"a matcher this test does not read: {matcher}"
    name, op, value = m.groups()
    got = labels.get(name, "")
    return got == value if op == "=" else re.fullmatch(value, got) is not None


def receivers_for(route: dict[str, Any], labels: dict[str, str]) -> list[str]:
    """Alertmanager's routing: depth-first over child routes; a match stops the walk unless it says continue; no
    child matching: the route's own receiver (https://prometheus.io/docs/alerting/latest/configuration/#route)."""
    found: list[str] = []
    for child in route.get("routes", []):
        if all(_matches(m, labels) for m in child.get("matchers", [])):
            found += receivers_for(child, labels) or [child["receiver"]]
            if not child.get("continue", False):
                break
    return found or [route["receiver"]]
