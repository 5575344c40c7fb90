"""Provider-schema conformance of every captured cloud resource (gpufleet/checks/conformance.py).

The expected wire names and enum values below are read from the installed SDK sources
(pulumi_aws/ec2/_inputs.py LaunchTemplateNetworkInterfaceArgs, pulumi_azure_native/containerservice/_enums.py
AgentPoolMode, pulumi_kubernetes/core/v1/ConfigMap.py), not from the module under test.
"""

from __future__ import annotations

import copy
import dataclasses

import pytest

from gpufleet.checks.conformance import args_class, check_graph, check_resource
from gpufleet.engine.capture import Resource
from stacks.config import stack_names
from tests.conftest import example_fleet, one
from tests.readme_fleets import NAMES as README_FLEETS
from tests.readme_fleets import readme_fleet

CLOUD_PACKAGES = ("aws:", "gcp:", "azure-native:", "azuread:", "pulumi:providers:")


@pytest.fixture(scope="module")
def example_graphs(capture):
    return {stack: capture(example_fleet(stack)) for stack in stack_names()}


@pytest.fixture(scope="module")
def capture():  # module-scoped twin of the conftest fixture, so the example graphs are captured once
    from gpufleet.engine.capture import run_program
    from stacks.config import CONFIG_KEY

    return lambda fleet: run_program("test", {CONFIG_KEY: fleet})


def _with(resource: Resource, inputs: dict) -> Resource:
    return dataclasses.replace(resource, inputs=inputs)


@pytest.mark.parametrize("stack", stack_names())
def test_every_example_stack_conforms(example_graphs, stack):
    report = check_graph(example_graphs[stack])
    assert report.findings == []
    # every cloud resource was held to an SDK type; only CRD objects and components go unchecked
    assert not [key for key in report.unchecked if key.startswith(CLOUD_PACKAGES)]
    assert len(report.checked) > 30


def test_a_misspelled_nested_key_is_found(example_graphs):
    template = one(example_graphs["aws-train"], "LaunchTemplate", "train-h100-lt")
    inputs = copy.deepcopy(template.inputs)
    inputs["networkInterfaces"][1]["interfaceTyp"] = inputs["networkInterfaces"][1].pop("interfaceType")
    findings = check_resource(_with(template, inputs))
    assert [(f.path, "interfaceType" in f.problem) for f in findings] == [("networkInterfaces[1].interfaceTyp", True)]


def test_a_misspelled_top_level_key_and_a_missing_required_input(example_graphs):
    group = one(example_graphs["aws-train"], "NodeGroup", "train-h100-ng")
    inputs = copy.deepcopy(group.inputs)
    inputs["subnetIDs"] = inputs.pop("subnetIds")  # subnetIds is required on aws.eks.NodeGroup
    paths = sorted(f.path for f in check_resource(_with(group, inputs)))
    assert paths == ["subnetIDs", "subnetIds"]


def test_an_enum_value_outside_the_sdk_enum_is_found(example_graphs):
    pool = one(example_graphs["azure-train"], "containerservice:AgentPool", "train-h100-pool")
    assert pool.inputs["mode"] == "User"  # AgentPoolMode: System | User | Gateway
    findings = check_resource(_with(pool, {**pool.inputs, "mode": "Users"}))
    assert [f.path for f in findings] == ["mode"]
    assert "AgentPoolMode" in findings[0].problem


def test_a_literal_is_held_to_its_value(example_graphs):
    config_map = next(r for r in example_graphs["dev"].resources if r.type == "kubernetes:core/v1:ConfigMap")
    assert check_resource(config_map) == []
    assert [f.path for f in check_resource(_with(config_map, {**config_map.inputs, "apiVersion": "v2"}))] == [
        "apiVersion"]


def test_masked_values_are_not_judged(example_graphs):
    group = one(example_graphs["aws-train"], "NodeGroup", "train-h100-ng")
    assert check_resource(_with(group, {**group.inputs, "scalingConfig": "[unknown]", "labels": "[secret]"})) == []


def test_a_resource_no_sdk_declares_is_reported_unchecked():
    assert args_class("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue") is None
    assert args_class("aws:eks/nodeGroupp:NodeGroupp") is None
    assert args_class("aws:eks/nodeGroup:NodeGroup").__name__ == "NodeGroupArgs"
    # a nested input type of the same name must not be mistaken for the resource's inputs
    assert args_class("azure-native:network:Subnet").__name__ == "SubnetInitArgs"


def test_a_misspelling_in_the_program_fails_the_graph(monkeypatch, capture):
    """End to end: the real program with a misspelled raw-dict key, captured and checked."""
    from components.aws import nodegroup

    real = nodegroup.network_interfaces

    def misspelled(machine, groups):
        cards = real(machine, groups)
        cards[0]["interface_typ"] = cards[0].pop("interface_type")
        return cards

    monkeypatch.setattr(nodegroup, "network_interfaces", misspelled)
    report = check_graph(capture(example_fleet("aws-train")))
    assert {f.path for f in report.findings} == {"networkInterfaces[0].interface_typ"}
    assert {f.resource.split("::")[1] for f in report.findings} == {"train-h100-lt", "train-a100-eval-lt"}


@pytest.mark.parametrize("name", README_FLEETS)
def test_stacks_written_from_the_readme_conform(capture, name):
    """p5en / p6-b200 (reservation, capacity block, spot), a3-highgpu-8g / a4-highgpu-8g, ND H200 v5 with a spot
    pool, NoExecute taints: tests/readme_fleets.py."""
    report = check_graph(capture(readme_fleet(name)))
    assert report.findings == []
    assert not [key for key in report.unchecked if key.startswith(CLOUD_PACKAGES)]
