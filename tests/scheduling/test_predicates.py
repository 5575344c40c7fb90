"""The scheduler's filter predicates (gpufleet/checks/scheduling.py) at each rule's boundary. Expected outcomes are
kube-scheduler's, from k8s.io/api core/v1 toleration.go ToleratesTaint, k8s.io/apimachinery labels/selector.go and
the NodeAffinity / TaintToleration plugins (an empty nodeSelectorTerm matches nothing; PreferNoSchedule does not
filter)."""

from __future__ import annotations

import pytest

from gpufleet.checks.scheduling import (
    DAEMON_TOLERATIONS,
    Node,
    Placement,
    Taint,
    UndecidableError,
    fits,
    term_matches,
    tolerates,
    untolerated,
    why_not,
)

GPU = Taint("nvidia.com/gpu", "true", "NoSchedule")
NODE = Node("n1", {"gpufleet.io/pool": "h100", "kubernetes.io/os": "linux", "rank": "7"}, (GPU,))


@pytest.mark.parametrize(("toleration", "taint", "expected"), [
    ({"key": "nvidia.com/gpu", "operator": "Exists"}, GPU, True),  # Exists: any value, any effect (none given)
    ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}, GPU, False),  # effect given, differs
    ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, GPU, True),
    ({"key": "nvidia.com/gpu", "value": "true"}, GPU, True),  # operator defaults to Equal
    ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "present"}, GPU, False),  # GKE's value is not AWS's
    ({"key": "other", "operator": "Exists"}, GPU, False),
    ({"operator": "Exists"}, GPU, True),  # empty key + Exists: every taint
    ({"operator": "Exists", "effect": "NoExecute"}, Taint("dedicated", "training", "NoExecute"), True),
])
def test_a_toleration_matches_a_taint_as_tolerates_taint_does(toleration: dict, taint: Taint, expected: bool) -> None:
    assert tolerates(toleration, taint) is expected


def test_prefer_no_schedule_never_filters_and_no_execute_does() -> None:
    soft = Taint("x", "", "PreferNoSchedule")
    hard = Taint("dedicated", "training", "NoExecute")
    assert untolerated([], [soft]) == []
    assert untolerated([], [hard]) == [hard]
    assert untolerated([{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}], [hard]) == [hard]


def test_an_unknown_toleration_operator_cannot_be_decided() -> None:
    with pytest.raises(UndecidableError):
        tolerates({"key": "nvidia.com/gpu", "operator": "Matches"}, GPU)


@pytest.mark.parametrize(("expression", "expected"), [
    ({"key": "gpufleet.io/pool", "operator": "In", "values": ["h100", "a100"]}, True),
    ({"key": "gpufleet.io/pool", "operator": "In", "values": ["a100"]}, False),
    ({"key": "gpufleet.io/pool", "operator": "NotIn", "values": ["a100"]}, True),
    ({"key": "absent", "operator": "NotIn", "values": ["x"]}, True),  # NotIn holds where the label is absent
    ({"key": "absent", "operator": "In", "values": ["x"]}, False),
    ({"key": "absent", "operator": "DoesNotExist"}, True),
    ({"key": "gpufleet.io/pool", "operator": "Exists"}, True),
    ({"key": "rank", "operator": "Gt", "values": ["6"]}, True),
    ({"key": "rank", "operator": "Gt", "values": ["7"]}, False),  # strictly greater
    ({"key": "rank", "operator": "Lt", "values": ["8"]}, True),
    ({"key": "gpufleet.io/pool", "operator": "Gt", "values": ["1"]}, False),  # not an integer
])
def test_node_selector_requirements(expression: dict, expected: bool) -> None:
    assert term_matches({"matchExpressions": [expression]}, NODE) is expected


def test_terms_are_ored_requirements_anded_and_an_empty_term_matches_nothing() -> None:
    yes = {"key": "gpufleet.io/pool", "operator": "In", "values": ["h100"]}
    no = {"key": "gpufleet.io/pool", "operator": "In", "values": ["a100"]}
    assert not term_matches({"matchExpressions": [yes, no]}, NODE)
    assert fits(Placement("p", ({"operator": "Exists"},), {}, ({"matchExpressions": [no]},
                                                                {"matchExpressions": [yes]})), NODE)
    assert not term_matches({}, NODE)
    assert term_matches({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}, NODE)


def test_why_not_names_every_reason() -> None:
    placement = Placement("agent", (), {"kubernetes.io/os": "windows"}, ())
    reasons = why_not(placement, NODE)
    assert len(reasons) == 2 and "node selector kubernetes.io/os=windows" in reasons[0]
    assert "nvidia.com/gpu=true:NoSchedule" in reasons[1]


def test_a_daemonsets_pods_get_the_controllers_tolerations() -> None:
    cordoned = NODE.without_taint("nvidia.com/gpu").with_taints(Taint("node.kubernetes.io/unschedulable", "",
                                                                     "NoSchedule"))
    assert not fits(Placement.of("deployment", {}), cordoned)
    assert fits(Placement.of("daemon", {}, daemon=True), cordoned)
    assert len(DAEMON_TOLERATIONS) == 6
