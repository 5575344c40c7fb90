"""Each policy at, below and above its threshold and on its other branches (tests/policies/cases_boundaries.py),
over the analyzer gRPC protocol like the crafted violations: the policy reports exactly the expected verdicts."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.checks.analyzer import PolicyPack, merge_config
from tests.policies.cases_boundaries import CASES as BOUNDARIES
from tests.policies.cases_boundaries_catalog import CASES as CATALOG
from tests.policies.cases_budget import CASES as BUDGET
from tests.policies.cases_storage import CASES as STORAGE
from tests.policies.conftest import Bases
from tests.policies.helpers import Case, case_verdicts

CASES = BOUNDARIES + CATALOG + BUDGET + STORAGE


@pytest.mark.parametrize("case", CASES, ids=[f"{c.policy}-{c.label}" for c in CASES])
def test_boundary_and_branch(pack: PolicyPack, bases: Bases, case: Case) -> None:
    verdicts = case_verdicts(pack, bases[case.base], case)
    assert [(v.resource, v.message) for v in verdicts] == case.expected


def test_every_case_is_labelled_uniquely() -> None:
    labels = [f"{c.policy}-{c.label}" for c in CASES]
    assert len(labels) == len(set(labels))


def test_budget_refuses_an_invalid_offers_file(pack: PolicyPack, bases: Bases, tmp_path: Path) -> None:
    """An offers_csv row the catalogue does not offer (a3-highgpu-8g in southamerica-east1): the policy says which
    file is invalid and why, instead of pricing from it or crashing the pack. An absolute path is read as it is."""
    bad = tmp_path / "offers.csv"
    bad.write_text("cloud,region,machine_type,gpu,gpus_per_node,option,usd_per_gpu_hour,source,as_of\n"
                   "gcp,southamerica-east1,a3-highgpu-8g,H100,8,on_demand,10,test fixture,2026-11-01\n")
    base = bases["gke"]
    pack.configure(merge_config(base.config, {"stack-monthly-budget": {"monthly_budget_usd": 1e9,
                                                                       "offers_csv": str(bad)}}))
    messages = [v.message for v in pack.analyze_stack(base.graph) if v.policy == "stack-monthly-budget"]
    assert len(messages) == 1, messages
    assert messages[0].startswith(f"stack-monthly-budget.offers_csv '{bad}' is not a valid offers file: ")
    assert "southamerica-east1" in messages[0] and "does not offer a3-highgpu-8g" in messages[0]
