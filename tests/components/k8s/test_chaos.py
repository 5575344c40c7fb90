"""Network profiles in the cluster: Chaos Mesh NetworkChaos objects, off by default, scoped to pools and one
namespace, checked against the CRD and chart digests derived from the pinned Chaos Mesh release."""

from __future__ import annotations

from typing import Any

import pytest

from components.k8s import charts, upstream
from components.k8s.chaos import network_chaos
from components.k8s.render import render
from components.k8s.upstream.crd import problems
from components.k8s.upstream.derive import unread_values
from components.validate import resolve
from tests.components.k8s.upstream_cases import inputs
from tests.conftest import example_fleet


def cluster_with(*profiles: dict[str, Any], stack: str = "aws-train") -> Any:
    fleet = example_fleet(stack)
    fleet["clusters"][0]["network_profiles"] = list(profiles)
    return resolve(fleet).clusters[0]


WAN = {"name": "wan", "enabled": True, "bandwidth_mbps": 2.5, "latency_ms": 35, "jitter_ms": 3, "loss_pct": 0.25,
       "pools": ["h100"], "to_pools": ["a100-eval"], "labels": {"job": "rehearsal"}, "duration_minutes": 90}


def chaos_objects(cluster: Any) -> list[dict[str, Any]]:
    return [m.obj for m in network_chaos(cluster).manifests if m.kind == "NetworkChaos"]


@pytest.mark.parametrize("stack", ["aws-train", "dev"])
def test_example_profiles_are_off_so_nothing_is_installed(stack: str) -> None:
    [cluster] = resolve(example_fleet(stack)).clusters
    assert cluster.spec.network_profiles  # the examples declare some ...
    out = render(cluster, inputs(cluster))  # ... and the add-on layer renders nothing for them
    assert not [r for r in out.releases if r.name == "chaos-mesh"]
    assert not [m for m in out.manifests if m.obj["apiVersion"].startswith("chaos-mesh.org/")]


def test_an_enabled_profile_is_one_object_per_action_scoped_to_its_pools_and_namespace() -> None:
    objs = chaos_objects(cluster_with(WAN))
    assert sorted(o["spec"]["action"] for o in objs) == ["bandwidth", "delay", "loss"]
    for o in objs:
        spec = o["spec"]
        assert o["metadata"]["namespace"] == "netsim"
        assert spec["selector"] == {"namespaces": ["netsim"], "nodeSelectors": {"gpufleet.io/pool": "h100"},
                                    "labelSelectors": {"job": "rehearsal"}}
        assert spec["target"] == {"mode": "all", "selector": {"namespaces": ["netsim"], "labelSelectors":
                                  {"job": "rehearsal"}, "nodeSelectors": {"gpufleet.io/pool": "a100-eval"}}}
        assert (spec["mode"], spec["direction"], spec["duration"]) == ("all", "to", "90m")
    by_action = {o["spec"]["action"]: o["spec"] for o in objs}
    assert by_action["delay"]["delay"] == {"latency": "35ms", "jitter": "3ms", "correlation": "0"}
    assert by_action["loss"]["loss"] == {"loss": "0.25", "correlation": "0"}
    # 2.5 Mbit/s = 2500 kbit; bucket max(16 KiB, 312 B) = 16384; queue max(3 x 16384, 0.2 s x 312,500 B/s) = 62500
    assert by_action["bandwidth"]["bandwidth"] == {"rate": "2500kbit", "buffer": 16384, "limit": 62500}


def test_pairs_without_target_pools_are_every_ordered_pair_of_the_pools() -> None:
    profile = {"name": "lat", "enabled": True, "latency_ms": 5, "pools": ["h100", "a100-eval"]}
    objs = chaos_objects(cluster_with(profile))
    pairs = sorted((o["spec"]["selector"]["nodeSelectors"]["gpufleet.io/pool"],
                    o["spec"]["target"]["selector"]["nodeSelectors"]["gpufleet.io/pool"]) for o in objs)
    assert pairs == [("a100-eval", "a100-eval"), ("a100-eval", "h100"), ("h100", "a100-eval"), ("h100", "h100")]
    assert all(o["spec"]["action"] == "delay" and "labelSelectors" not in o["spec"]["selector"] for o in objs)


def test_the_daemon_runs_only_on_the_profiles_pools_and_the_namespace_exists() -> None:
    out = network_chaos(cluster_with(WAN, {**WAN, "name": "other", "enabled": False, "namespace": "other"}))
    [release] = out.releases
    assert (release.name, release.namespace, release.chart) == ("chaos-mesh", "chaos-mesh", charts.CHAOS_MESH)
    terms = release.values["chaosDaemon"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "gpufleet.io/pool", "operator": "In",
                                            "values": ["a100-eval", "h100"]}]}]
    assert {"key": "nvidia.com/gpu", "operator": "Exists"} in [
        {k: v for k, v in t.items() if k != "effect"} for t in release.values["chaosDaemon"]["tolerations"]]
    namespaces = [m.name for m in out.manifests if m.kind == "Namespace"]
    assert namespaces == ["chaos-mesh", "netsim"]  # not 'other': that profile is off
    assert all(m.after == ("chaos-mesh",) for m in out.manifests if m.kind == "NetworkChaos")


def test_a_kueue_team_namespace_is_not_created_twice() -> None:
    cluster = cluster_with({**WAN, "namespace": "pretrain"})
    out = render(cluster, inputs(cluster))
    assert [m.name for m in out.manifests if m.kind == "Namespace"].count("pretrain") == 1


def test_long_names_stay_short_and_distinct() -> None:
    long = "a" * 32
    fleet = example_fleet("aws-train")
    fleet["clusters"][0]["node_pools"][0]["name"] = long[:-1] + "b"
    fleet["clusters"][0]["node_pools"][1]["name"] = long
    fleet["clusters"][0]["addons"]["kueue_teams"] = []
    fleet["clusters"][0]["network_profiles"] = [{"name": "p" * 32, "enabled": True, "latency_ms": 1,
                                                 "pools": [long, long[:-1] + "b"]}]
    names = [o["metadata"]["name"] for o in chaos_objects(resolve(fleet).clusters[0])]
    assert len(set(names)) == 4 and all(len(n) <= 63 for n in names)


# --- against the pinned upstream release (digests from scripts/refresh_upstream.py) ---------------------------

def test_every_network_chaos_matches_the_pinned_crd() -> None:
    objs = chaos_objects(cluster_with(WAN)) + chaos_objects(
        cluster_with({"name": "bw", "enabled": True, "bandwidth_mbps": 10000, "pools": ["h100"]}))
    assert objs and [p for o in objs for p in problems(o)] == []


def test_the_crd_digest_refuses_what_chaos_mesh_would() -> None:
    [delay] = [o for o in chaos_objects(cluster_with(WAN)) if o["spec"]["action"] == "delay"]
    wrong = {**delay, "spec": {**delay["spec"], "action": "latency"}}
    assert any("'latency' is not one of" in p for p in problems(wrong))
    wrong = {**delay, "spec": {**delay["spec"], "delay": {"latency": 35}}}
    assert any("int where the CRD wants string" in p for p in problems(wrong))
    wrong = {**delay, "spec": {**delay["spec"], "selector": {"nodeSelector": {"a": "b"}}}}  # it is nodeSelectors
    assert any("nodeSelector: unknown field" in p for p in problems(wrong))
    actions = upstream.crds()["chaos-mesh.org/NetworkChaos"]["fields"]["v1alpha1"]["spec.action"]["enum"]
    assert {"delay", "loss", "bandwidth"} <= set(actions)


def test_the_release_is_pinned_and_its_values_are_read_by_the_chart() -> None:
    out = network_chaos(cluster_with(WAN))
    [release] = out.releases
    assert release.chart in charts.ALL
    assert unread_values(release.values, upstream.digest(release.chart.pin)["chart"]) == []
    assert unread_values({"chaosDaemon": {"runtim": "containerd"}},
                         upstream.digest(release.chart.pin)["chart"]) == ["chaosDaemon.runtim"]


def test_rates_are_whole_numbers_with_a_unit_chaos_mesh_parses() -> None:
    # chaos-mesh v2.8.3 api/v1alpha1/networkchaos_webhook.go, isValidRateUnit: an unsigned integer followed by
    # one of kbit, mbit, gbit, tbit, tbps, gbps, mbps, kbps, bps, bit (tc's units: 'mbps' is megaBYTES per second)
    import re

    for mbps, rate in ((0.001, "1kbit"), (2.5, "2500kbit"), (10000, "10000000kbit")):
        [bw] = chaos_objects(cluster_with({"name": "bw", "enabled": True, "bandwidth_mbps": mbps, "pools": ["h100"]}))
        assert bw["spec"]["bandwidth"]["rate"] == rate
        assert re.fullmatch(r"\d+(kbit|mbit|gbit|tbit|tbps|gbps|mbps|kbps|bps|bit)", rate)
