"""Fuzzing the fleet loader: random and mutated descriptions give a Fleet or a SpecError, never a traceback,
and an invalid description registers no resource at all."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.errors import SpecError
from components.fleet import Fleet
from components.validate import resolve
from gpufleet.engine.capture import ProgramError, run_program
from stacks.config import CONFIG_KEY
from tests.conftest import example_fleet

EXAMPLES = {name: example_fleet(name) for name in ("aws-train", "dev")}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=True) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8)


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


@st.composite
def mutated_fleets(draw: st.DrawFn) -> Any:
    fleet = copy.deepcopy(EXAMPLES[draw(st.sampled_from(sorted(EXAMPLES)))])
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(fleet) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = fleet
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "delete" and isinstance(parent, dict):
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=10))] = draw(json_values)
        else:
            parent[path[-1]] = draw(json_values)
    return fleet


def _check(fleet: Any) -> Fleet | None:
    try:
        return resolve(fleet, "stacks/Pulumi.fuzz.yaml")
    except SpecError as err:
        assert err.problems
        for problem in err.problems:
            text = problem.render()
            assert text and "Traceback" not in text
        assert str(err).startswith(f"{len(err.problems)} problem(s)")
        return None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_fleets())
def test_mutated_fleets_resolve_or_explain(fleet: Any) -> None:
    _check(fleet)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_arbitrary_values_resolve_or_explain(value: Any) -> None:
    assert _check(value) is None


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_fleets())
def test_an_invalid_fleet_registers_nothing(fleet: Any) -> None:
    """The real program path: config.load raises before the first resource is registered."""
    if _check(fleet) is not None:
        return
    with pytest.raises(ProgramError) as caught:
        run_program("fuzz", {CONFIG_KEY: fleet})
    assert caught.value.registered == 0
    assert "problem(s) in the fleet description stacks/Pulumi.fuzz.yaml" in str(caught.value)
