"""Every custom resource the add-on layer emits is one the pinned upstream CRD accepts: a served apiVersion, no
field the structural schema would prune, enums, bounds and required fields (components/k8s/upstream/crd.py over
the CRD digests scripts/refresh_upstream.py derived). Run over every example stack's preview graph and over the
fleets a user would write from the README (tests/components/k8s/upstream_cases.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.catalog import Fabric
from components.k8s import upstream
from components.k8s.upstream.crd import problems
from gpufleet.engine.capture import SECRET_MASK, UNKNOWN_MASK, Graph
from tests.components.k8s.conftest import STACKS, as_object, kubernetes_objects
from tests.components.k8s.upstream_cases import rendered
from tests.components.k8s.validation import CORE_GROUPS as CORE

MASKS = frozenset({UNKNOWN_MASK, SECRET_MASK})
RENDERED = rendered()


def custom(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o["apiVersion"] not in CORE]


@pytest.mark.parametrize("stack", STACKS)
def test_every_custom_resource_in_the_preview_matches_its_crd(graphs: dict[str, Graph], stack: str) -> None:
    objects = custom([as_object(r) for r in kubernetes_objects(graphs[stack]) if "apiVersion" in r.inputs])
    assert objects, f"{stack}: no custom resource captured"
    assert [p for o in objects for p in problems(o, MASKS)] == []


@pytest.mark.parametrize("case", sorted(RENDERED))
def test_every_rendered_custom_resource_matches_its_crd(case: str) -> None:
    _, out = RENDERED[case]
    objects = custom([m.obj for m in out.manifests])
    assert [p for o in objects for p in problems(o)] == []


def test_every_kind_we_emit_has_a_digest() -> None:
    emitted = {f"{o['apiVersion'].rpartition('/')[0]}/{o['kind']}"
               for _, out in RENDERED.values() for o in custom([m.obj for m in out.manifests])}
    assert emitted >= {"kueue.x-k8s.io/Topology", "kueue.x-k8s.io/ResourceFlavor", "kueue.x-k8s.io/ClusterQueue",
                       "kueue.x-k8s.io/LocalQueue", "mellanox.com/NicClusterPolicy",
                       "monitoring.coreos.com/PrometheusRule", "networking.gke.io/GKENetworkParamSet",
                       "networking.gke.io/Network", "trainer.kubeflow.org/ClusterTrainingRuntime"}
    assert emitted <= set(upstream.crds())


def test_generated_fleets_cover_every_fabric_and_most_machine_types() -> None:
    generated = [cluster for case, (cluster, _) in RENDERED.items() if case.startswith("catalogue-")]
    assert {p.fabric for c, _ in RENDERED.values() for p in c.pools} == set(Fabric)
    assert len(generated) >= 40  # of 51 GPU machine types; the rest are not offered in the example regions


def test_every_kueue_object_is_at_its_kinds_storage_version() -> None:
    # an object at a served but not stored version is converted by the webhook on every write, and is the first
    # to break when the old version stops being served (Kueue 0.16 moved storage to v1beta2)
    crds = upstream.crds()
    objects = [m.obj for _, out in RENDERED.values() for m in out.manifests
               if m.obj["apiVersion"].startswith("kueue.x-k8s.io/")]
    assert {o["kind"] for o in objects} >= {"Topology", "ResourceFlavor", "ClusterQueue", "LocalQueue"}
    for o in objects:
        assert o["apiVersion"] == f"kueue.x-k8s.io/{crds['kueue.x-k8s.io/' + o['kind']]['storage']}", o["kind"]
    assert crds["kueue.x-k8s.io/ClusterQueue"]["storage"] == "v1beta2"


def _one(kind: str) -> dict[str, Any]:
    return copy.deepcopy(next(m.obj for _, out in RENDERED.values() for m in out.manifests if m.kind == kind))


def test_the_validator_refuses_what_the_api_server_would() -> None:
    topology = _one("Topology")
    assert problems(topology) == []
    old = {**topology, "apiVersion": "kueue.x-k8s.io/v1alpha1"}
    [served] = problems(old)
    assert "not served" in served and "kueue.x-k8s.io/v1beta2" in served
    flavor = _one("ResourceFlavor")
    flavor["spec"]["nodeSelector"] = {"a": "b"}  # the CRD calls it nodeLabels
    assert any("spec.nodeSelector: unknown field" in p for p in problems(flavor))
    queue = _one("ClusterQueue")
    queue["spec"]["queueingStrategy"] = "FIFO"  # enum: StrictFIFO, BestEffortFIFO
    assert any("queueingStrategy: 'FIFO' is not one of" in p for p in problems(queue))
    del queue["spec"]["queueingStrategy"]
    del queue["spec"]["resourceGroups"][0]["coveredResources"]
    assert any("required field 'coveredResources' missing" in p for p in problems(queue))
    rule = _one("PrometheusRule")
    rule["spec"]["groups"][0]["rules"][0]["for"] = 5  # a duration string
    assert any("for: int where the CRD wants string" in p for p in problems(rule))
    assert "no CRD digest" in problems({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {}})[0]


def test_preserved_and_map_fields_accept_any_keys() -> None:
    flavor = _one("ResourceFlavor")
    flavor["spec"]["nodeLabels"] = {"any.example.com/key": "v"}  # a map: any key
    assert problems(flavor) == []
    policy = _one("NicClusterPolicy")
    fields = upstream.crds()["mellanox.com/NicClusterPolicy"]["fields"]["v1alpha1"]
    preserved = sorted(p for p, f in fields.items() if f.get("preserve") and "[]" not in p and "{}" not in p)
    if preserved:  # a field the CRD preserves unknown fields under takes anything
        target = policy
        for key in preserved[0].split("."):
            target = target.setdefault(key, {})
        target["anything"] = {"at": "all"}
        assert not [p for p in problems(policy) if "anything" in p]
