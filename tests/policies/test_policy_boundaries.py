"""Each policy at, below and above its threshold and on its other branches (tests/policies/cases_boundaries.py),
over the analyzer gRPC protocol like the crafted violations: the policy reports exactly the expected verdicts."""

from __future__ import annotations

import pytest

from gpufleet.analyzer import PolicyPack, merge_config
from tests.policies.cases_boundaries import CASES
from tests.policies.conftest import Bases
from tests.policies.helpers import Case


@pytest.mark.parametrize("case", CASES, ids=[f"{c.policy}-{c.label}" for c in CASES])
def test_boundary_and_branch(pack: PolicyPack, bases: Bases, case: Case) -> None:
    base = bases[case.base]
    pack.configure(merge_config(base.config, case.config))
    graph = case.graph(base)
    if pack.policies[case.policy].kind == "stack":
        verdicts = pack.analyze_stack(graph)
    else:
        verdicts = pack.analyze_resources(graph, {key for key, _ in case.changes})
    assert [(v.resource, v.message) for v in verdicts if v.policy == case.policy] == case.expected


def test_every_case_is_labelled_uniquely() -> None:
    labels = [f"{c.policy}-{c.label}" for c in CASES]
    assert len(labels) == len(set(labels))
