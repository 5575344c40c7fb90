"""network_profiles: each bad profile gets one clear problem with its config path; good ones are off by default."""

from __future__ import annotations

from typing import Any

import pytest

from components.validate import resolve
from tests.components.test_validate import problems
from tests.conftest import example_fleet

WHERE = "clusters[0].network_profiles[0]"


def fleet_with(**profile: Any) -> dict[str, Any]:
    fleet = example_fleet("aws-train")
    fleet["clusters"][0]["network_profiles"] = [{"name": "wan", "pools": ["h100"], **profile}]
    return fleet


def test_a_profile_is_off_by_default_with_its_documented_defaults() -> None:
    [profile] = resolve(fleet_with(latency_ms=40)).clusters[0].spec.network_profiles
    assert not profile.enabled
    assert (profile.namespace, profile.duration_minutes, profile.to_pools, profile.bandwidth_mbps) == \
        ("netsim", 60, [], None)


def test_example_stack_profiles_resolve_and_stay_off() -> None:
    profiles = resolve(example_fleet("aws-train")).clusters[0].spec.network_profiles
    assert profiles and not any(p.enabled for p in profiles)


def test_unknown_pool_suggests_the_closest() -> None:
    [message] = problems(fleet_with(latency_ms=10, pools=["h10"]))
    assert message.startswith(f"{WHERE}.pools[0]: 'h10' is not a known node pool of this cluster.")
    assert "Did you mean 'h100'?" in message and "Known: a100-eval, h100" in message


def test_unknown_target_pool_is_reported_at_its_own_path() -> None:
    [message] = problems(fleet_with(latency_ms=10, to_pools=["h100", "a100-evl"]))
    assert message.startswith(f"{WHERE}.to_pools[1]: 'a100-evl'") and "Did you mean 'a100-eval'?" in message


@pytest.mark.parametrize(("field", "value", "expected"), [
    ("loss_pct", 100, "must be less than 100"),
    ("loss_pct", -0.1, "must be at least 0"),
    ("bandwidth_mbps", 0.0009, "must be at least 0.001"),
    ("latency_ms", 10_001, "must be at most 10000"),
    ("duration_minutes", 0, "must be at least 1"),
    ("duration_minutes", 1441, "must be at most 1440"),
])
def test_out_of_range_values_name_the_field_the_value_and_the_bound(field: str, value: float, expected: str) -> None:
    [message] = problems(fleet_with(**{"latency_ms": 10, field: value}))
    assert message.startswith(f"{WHERE}.{field}: ") and expected in message and f"got the number {value!r}" in message


def test_boundaries_that_are_allowed() -> None:
    resolve(fleet_with(loss_pct=99.9, latency_ms=10_000, jitter_ms=10_000, duration_minutes=1440))
    resolve(fleet_with(loss_pct=0.001, duration_minutes=1))


def test_a_profile_that_changes_nothing() -> None:
    [message] = problems(fleet_with())
    assert message.startswith(f"{WHERE}: profile 'wan' changes nothing")
    assert "Set at least one of them" in message


def test_jitter_above_latency() -> None:
    [message] = problems(fleet_with(latency_ms=5, jitter_ms=5.5))
    assert message.startswith(f"{WHERE}.jitter_ms: 5.5 ms is more than latency_ms (5 ms)")
    assert "Set jitter_ms to at most 5" in message
    resolve(fleet_with(latency_ms=5, jitter_ms=5))  # equal is fine


@pytest.mark.parametrize("namespace", ["default", "kube-system", "chaos-mesh"])
def test_protected_namespaces_are_refused(namespace: str) -> None:
    [message] = problems(fleet_with(latency_ms=5, namespace=namespace))
    assert message.startswith(f"{WHERE}.namespace: {namespace!r} must not be shaped")
    assert "namespace of its own" in message


def test_duplicate_names_and_unknown_keys() -> None:
    fleet = fleet_with(latency_ms=5)
    fleet["clusters"][0]["network_profiles"].append({"name": "wan", "pools": ["h100"], "latncy_ms": 3})
    found = problems(fleet)
    assert any(m.startswith("clusters[0].network_profiles[1].latncy_ms: unknown key. Did you mean 'latency_ms'?")
               for m in found), found
    fleet["clusters"][0]["network_profiles"][1] = {"name": "wan", "pools": ["h100"], "loss_pct": 1}
    [message] = problems(fleet)
    assert message == "clusters[0].network_profiles: network profile name 'wan' is used 2 times. " \
                      "Give each a unique name."


def test_pools_are_required() -> None:
    fleet = fleet_with(latency_ms=5)
    del fleet["clusters"][0]["network_profiles"][0]["pools"]
    [message] = problems(fleet)
    assert message.startswith(f"{WHERE}.pools: is required.")
