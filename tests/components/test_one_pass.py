"""Every problem of a stack file in one pass: type errors and the semantic checks of what did parse, together
(components/validate.py, _checks_beside_type_errors)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.errors import SpecError
from components.validate import resolve
from tests.conftest import example_fleet


def problems(fleet: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(SpecError) as caught:
        resolve(fleet)
    return {p.path: p.message for p in caught.value.problems}


def test_a_type_error_in_one_cluster_does_not_hide_a_wrong_region_in_another() -> None:
    fleet = example_fleet("aws-train")
    second = copy.deepcopy(fleet["clusters"][0])
    second["name"], second["region"] = "eval", "us-east-9"
    fleet["clusters"].append(second)
    fleet["clusters"][0]["node_pools"][0]["nodes"]["max"] = "sixteen"
    found = problems(fleet)
    assert set(found) == {"clusters[0].node_pools[0].nodes.max", "clusters[1].region"}, found


def test_the_other_pools_of_a_cluster_are_checked_at_their_own_index() -> None:
    fleet = example_fleet("aws-train")
    pools = fleet["clusters"][0]["node_pools"]
    pools[0]["nodes"]["max"] = "sixteen"  # h100: a type error
    pools[1]["machine_type"] = "p4d.24xlarg"  # a100-eval: unknown machine, at index 1 still
    found = problems(fleet)
    assert set(found) == {"clusters[0].node_pools[0].nodes.max", "clusters[0].node_pools[1].machine_type"}, found
    assert "Did you mean 'p4d.24xlarge'" in found["clusters[0].node_pools[1].machine_type"]


def test_what_refers_to_a_pool_that_did_not_parse_is_not_called_missing() -> None:
    # pretrain's quota names H100, which only the h100 pool supplies: with h100 unparsed, a Kueue check would
    # report a quota no pool supplies, which is not the user's mistake
    fleet = example_fleet("aws-train")
    fleet["clusters"][0]["node_pools"][0]["nodes"] = "lots"
    assert set(problems(fleet)) == {"clusters[0].node_pools[0].nodes"}


def test_a_cluster_level_type_error_leaves_that_cluster_to_it() -> None:
    fleet = example_fleet("aws-train")
    fleet["clusters"][0]["zones"] = "use1-az6"  # not a list
    fleet["clusters"][0]["node_pools"][1]["machine_type"] = "p4d.24xlarg"
    assert set(problems(fleet)) == {"clusters[0].zones"}
