"""addons.operators: validation with clear errors, the pinned releases, Kueue's integrations for exactly the
installed operators (names as Kueue's pinned source spells them, each naming a kind of the operator's CRD digest)
and the Trainer runtimes per GPU pool."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from components.errors import SpecError
from components.k8s import upstream
from components.k8s.inputs import AddonInputs
from components.k8s.model import Rendered
from components.k8s.render import render
from components.k8s.upstream.crd import problems
from components.validate import resolve
from tests.conftest import example_fleet

ALL = ["kuberay", "jobset", "trainer"]
# Kueue's integration names as the chart lists them by default (integrations.frameworks in
# kubernetes-sigs/kueue charts/kueue/values.yaml at v0.14.8, read 2026-12-01)
EXPECTED = {"kuberay": ["ray.io/rayjob", "ray.io/raycluster"], "jobset": ["jobset.x-k8s.io/jobset"],
            "trainer": ["trainer.kubeflow.org/trainjob"]}


def _fleet(operators: list[Any], stack: str = "aws-train") -> dict[str, Any]:
    fleet = example_fleet(stack)
    fleet["clusters"][0]["addons"]["operators"] = operators
    return fleet


def _render(operators: list[str], stack: str = "aws-train") -> Rendered:
    [cluster] = resolve(_fleet(operators, stack)).clusters
    return render(cluster, AddonInputs(kubeconfig="k"))


def _problems(operators: list[Any]) -> list[str]:
    with pytest.raises(SpecError) as err:
        resolve(_fleet(operators))
    return [p.render() for p in err.value.problems]


def test_unknown_operator_is_refused_with_a_guess_and_the_path() -> None:
    [problem] = _problems(["kuberay", "jobsett"])
    assert problem.startswith("clusters[0].addons.operators[1]: 'jobsett' is not a known job operator.")
    assert "Did you mean 'jobset'?" in problem and "Known: jobset, kuberay, trainer." in problem


def test_repeated_operator_is_refused() -> None:
    [problem] = _problems(["jobset", "jobset"])
    assert problem.startswith("clusters[0].addons.operators[1]: 'jobset' is listed twice.")


def test_trainer_without_jobset_is_refused_with_the_fix() -> None:
    [problem] = _problems(["trainer"])
    assert "clusters[0].addons.operators[0]: 'trainer' needs 'jobset'" in problem
    assert "Add 'jobset' to addons.operators." in problem


def test_operators_on_a_cluster_without_gpu_pools_install_nothing() -> None:
    """A draft stack (capacity apply) copies addons before it has pools: valid, and nothing is installed."""
    fleet = _fleet(ALL)
    cluster = fleet["clusters"][0]
    cluster["node_pools"] = []
    cluster["addons"].pop("kueue_teams")
    cluster.pop("network_profiles")
    [resolved] = resolve(fleet).clusters
    releases = {r.name for r in render(resolved, AddonInputs(kubeconfig="k")).releases}
    assert not {"kuberay-operator", "jobset", "kubeflow-trainer", "kueue"} & releases


def test_a_non_string_entry_is_a_spec_error_not_a_traceback() -> None:
    assert any("operators[0]" in p for p in _problems([{"name": "jobset"}]))


def _kueue_config(out: Rendered) -> dict[str, Any]:
    [kueue] = [r for r in out.releases if r.name == "kueue"]
    return dict(yaml.safe_load(kueue.values["managerConfig"]["controllerManagerConfigYaml"]))


@pytest.mark.parametrize("operators", [[], ["kuberay"], ["jobset"], ["jobset", "trainer"], ALL])
def test_kueue_integrates_batch_jobs_and_exactly_the_installed_operators(operators: list[str]) -> None:
    config = _kueue_config(_render(operators))
    assert config["integrations"]["frameworks"] == ["batch/job", *(f for o in operators for f in EXPECTED[o])]


def test_the_rest_of_kueues_configuration_is_the_charts_default() -> None:
    config = _kueue_config(_render(ALL))
    default = yaml.safe_load(upstream.digest("kueue")["chart"]["defaults"]["managerConfig.controllerManagerConfigYaml"])
    ours = ("integrations", "waitForPodsReady", "metrics")  # metrics: one switch added, the rest kept
    assert {k: v for k, v in config.items() if k not in ours} == {k: v for k, v in default.items() if k not in ours}
    assert config["metrics"].items() >= default["metrics"].items()
    # every framework we enable is one the pinned chart knows (its default list names them all)
    assert set(config["integrations"]["frameworks"]) <= set(default["integrations"]["frameworks"])


def test_each_framework_names_a_kind_of_the_operators_crd_digest() -> None:
    """Kueue spells a framework <API group>/<kind, lower case>: each must be a kind the operator's pin serves."""
    kinds = {key.lower(): crd["pin"] for key, crd in upstream.crds().items()}
    pins = {"kuberay": "kuberay-operator", "jobset": "jobset", "trainer": "kubeflow-trainer"}
    for operator, frameworks in EXPECTED.items():
        for framework in frameworks:
            assert kinds.get(framework) == pins[operator], framework


def test_releases_are_pinned_ordered_and_jobset_installed_once() -> None:
    out = _render(ALL)
    releases = {r.name: r for r in out.releases}
    assert {"kuberay-operator", "jobset", "kubeflow-trainer"} <= set(releases)
    assert releases["kubeflow-trainer"].after == ("jobset",)
    assert releases["kubeflow-trainer"].values == {"jobset": {"install": False}}  # the jobset row is the one
    assert {"kuberay-operator", "jobset", "kubeflow-trainer"} <= set(releases["kueue"].after)
    namespaces = {m.name for m in out.manifests if m.kind == "Namespace"}
    assert {r.namespace for r in out.releases} <= namespaces | {"kube-system"}


def test_no_operator_no_release_no_runtime() -> None:
    out = _render([])
    assert not {"kuberay-operator", "jobset", "kubeflow-trainer"} & {r.name for r in out.releases}
    assert not [m for m in out.manifests if m.kind == "ClusterTrainingRuntime"]


@pytest.mark.parametrize("stack", ["aws-train", "gcp-train", "azure-train"])
def test_trainer_runtimes_per_pool_validate_and_carry_the_topology_request(stack: str) -> None:
    out = _render(ALL, stack)
    [cluster] = resolve(_fleet(ALL, stack)).clusters
    runtimes = {m.name: m.obj for m in out.manifests if m.kind == "ClusterTrainingRuntime"}
    assert set(runtimes) == {f"{f}-{p.name}" for p in cluster.pools for f in ("torch", "mpi")}
    [topology] = [m.obj for m in out.manifests if m.kind == "Topology"]
    outermost = topology["spec"]["levels"][0]["nodeLabel"]
    for name, runtime in runtimes.items():
        assert problems(runtime) == [], name
        jobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
        for job in jobs:
            annotations = job["template"]["spec"]["template"]["metadata"]["annotations"]
            assert annotations["kueue.x-k8s.io/podset-required-topology"] == outermost
        if name.startswith("mpi-"):  # launcher and nodes: one group, so one domain for both pod sets
            assert [j["name"] for j in jobs] == ["launcher", "node"]
            assert {j["template"]["spec"]["template"]["metadata"]["annotations"]["kueue.x-k8s.io/podset-group-name"]
                    for j in jobs} == {"mpi"}


def test_kueue_configuration_uses_only_fields_of_the_pinned_configuration_type() -> None:
    """Kueue's Configuration has no CRD: its schema is the Go structs (digest ``structs``, JSON field names)."""
    structs = upstream.digest("kueue")["structs"]["apis/config/v1beta2/configuration_types.go"]
    config = _kueue_config(_render(ALL))
    top = {"apiVersion", "kind", *structs["Configuration"]["fields"], *structs["ControllerManager"]["fields"]}
    assert structs["Configuration"]["inline"] == ["TypeMeta", "ControllerManager"]
    assert set(config) <= top
    assert set(config["integrations"]) <= set(structs["Integrations"]["fields"])
    assert set(config["waitForPodsReady"]) <= set(structs["WaitForPodsReady"]["fields"])
    assert set(config["metrics"]) <= set(structs["ControllerMetrics"]["fields"])


def test_a_gang_that_does_not_start_is_evicted_after_a_timeout_long_enough_for_gpu_images() -> None:
    wait = _kueue_config(_render([]))["waitForPodsReady"]
    assert "enable" not in wait  # config v1beta2 has no switch: the section is always defaulted in (defaults.go)
    assert wait["blockAdmission"] is False
    minutes = int(wait["timeout"].removesuffix("m"))
    # DefaultWaitForPodsReadyTimeout = 30 * time.Minute in apis/config/v1beta2/defaults.go (v0.19.2); v1beta1's was 5
    assert minutes >= 30
