"""The deploy path each cluster's `pulumi up` takes to its API server, and the refusals, each at its config path.

Expected outcomes come from the clouds' documents: a private EKS endpoint is reachable only from the VPC or a
connected network, a private AKS API server only from its VNet (or peered networks linked to its private DNS zone),
a private GKE control plane from anywhere over its DNS-based endpoint with IAM; a public endpoint only from the
addresses it lists.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.catalog import Cloud
from components.deploy_path import deploy_path
from components.errors import SpecError
from components.reach import Origin, Route, Where, covered, reach
from components.spec import ClusterSpec
from components.validate import resolve
from tests.conftest import example_fleet

STACKS = {"aws-train": Cloud.AWS, "dev": Cloud.AWS, "gcp-train": Cloud.GCP, "azure-train": Cloud.AZURE}


def problems(fleet: dict[str, Any]) -> list[tuple[str, str]]:
    try:
        resolve(fleet)
    except SpecError as err:
        return [(p.path, p.render()) for p in err.problems]
    return []


def with_deploy(stack: str, **cluster: Any) -> dict[str, Any]:
    fleet = copy.deepcopy(example_fleet(stack))
    fleet["clusters"][0].update(cluster)
    return fleet


@pytest.mark.parametrize("stack", ["aws-train", "dev", "azure-train"])
def test_private_aws_and_azure_clusters_deploy_in_two_stages(stack: str) -> None:
    fleet = example_fleet(stack)
    spec = ClusterSpec.model_validate(fleet["clusters"][0])
    found = deploy_path(STACKS[stack], spec)
    assert found.route is Route.IN_NETWORK and found.two_stage
    cloud, cluster = found.stages
    assert (cloud.name, cloud.runs_on) == ("cloud", ("ubuntu-latest",))
    assert cluster.name == "cluster" and cluster.runs_on == tuple(fleet["clusters"][0]["deploy"]["runner_labels"])


def test_private_gke_deploys_in_one_stage_over_the_dns_endpoint() -> None:
    spec = ClusterSpec.model_validate(example_fleet("gcp-train")["clusters"][0])
    found = deploy_path(Cloud.GCP, spec)
    assert found.route is Route.DNS_ENDPOINT and not found.two_stage
    assert found.document()["stages"] == [{"name": "all", "runs_on": ["ubuntu-latest"],
                                           "what": "cloud and in-cluster layers"}]


@pytest.mark.parametrize(("stack", "service"), [("aws-train", "EKS"), ("azure-train", "AKS")])
def test_a_deployer_outside_a_private_network_is_refused_at_its_config_path(stack: str, service: str) -> None:
    fleet = with_deploy(stack, deploy={"deployer": "outside"})
    [(path, message)] = problems(fleet)
    assert path == "clusters[0].deploy.deployer"
    assert "cannot reach the API server" in message and "deployer: network" in message and service not in path


def test_the_default_deployer_of_a_private_cluster_is_the_clouds() -> None:
    """No deploy section: AWS and Azure deploy from the network with the default runner labels, GCP from anywhere."""
    for stack, cloud in STACKS.items():
        cluster = copy.deepcopy(example_fleet(stack)["clusters"][0])
        cluster.pop("deploy")
        found = deploy_path(cloud, ClusterSpec.model_validate(cluster))
        if cloud is Cloud.GCP:
            assert found.route is Route.DNS_ENDPOINT
        else:
            assert found.stages[1].runs_on == ("self-hosted", f"gpufleet-{cloud.value}-{cluster['name']}")


@pytest.mark.parametrize(("egress", "ok"), [
    (["203.0.113.7/32"], True),            # inside 203.0.113.0/24
    (["203.0.113.0/24"], True),            # the whole listed range: still inside (boundary)
    (["203.0.113.0/23"], False),           # one bit wider: half of it is outside
    (["203.0.114.1/32"], False),           # the next /24
    (["203.0.113.7/32", "198.51.100.1/32"], False),  # one of two outside
    ([], False),                           # no fixed egress declared
])
def test_a_public_endpoint_must_list_the_deployers_egress(egress: list[str], ok: bool) -> None:
    fleet = with_deploy("dev", endpoint="public", public_access_cidrs=["203.0.113.0/24"],
                        deploy={"deployer": "outside", "egress_cidrs": egress})
    found = problems(fleet)
    assert (found == []) is ok
    if not ok:
        assert [p for p, _ in found] == ["clusters[0].deploy.egress_cidrs"]


def test_hosted_runner_labels_are_refused_for_a_runner_in_the_network() -> None:
    fleet = with_deploy("dev", deploy={"deployer": "network", "runner_labels": ["self-hosted", "ubuntu-latest"]})
    [(path, message)] = problems(fleet)
    assert path == "clusters[0].deploy.runner_labels[1]" and "GitHub-hosted" in message


@pytest.mark.parametrize(("deploy", "path"), [
    ({"deployer": "outside", "runner_labels": ["self-hosted"]}, "clusters[0].deploy.runner_labels"),
    ({"deployer": "network", "egress_cidrs": ["203.0.113.7/32"]}, "clusters[0].deploy.egress_cidrs"),
    ({"deployer": "network", "runner_cidrs": ["10.0.0.0/33"]}, "clusters[0].deploy.runner_cidrs[0]"),
    ({"deployer": "network", "runner_cidrs": ["0.0.0.0/0"]}, "clusters[0].deploy.runner_cidrs[0]"),
])
def test_settings_the_path_does_not_use_are_refused(deploy: dict[str, Any], path: str) -> None:
    fleet = with_deploy("gcp-train", deploy=deploy)
    assert path in [p for p, _ in problems(fleet)]


def test_azure_refuses_runner_cidrs_it_cannot_apply() -> None:
    fleet = with_deploy("azure-train", deploy={"deployer": "network", "runner_cidrs": ["10.200.0.0/24"]})
    [(path, message)] = problems(fleet)
    assert path == "clusters[0].deploy.runner_cidrs" and "no IP allow list" in message


def test_reach_is_reusable_for_another_cluster_as_the_client() -> None:
    """A manager cluster reaching a worker's API server is an Origin too (MultiKueue): from outside the worker's
    network a private EKS worker is refused, a public one only from the manager's listed egress."""
    worker = ClusterSpec.model_validate(example_fleet("dev")["clusters"][0])
    manager = Origin(Where.OUTSIDE, ("198.51.100.9/32",), "the manager cluster")
    refused = reach(Cloud.AWS, worker, manager)
    assert refused.route is None and "the manager cluster" in refused.refused
    public = worker.model_copy(update={"endpoint": "public", "public_access_cidrs": ["198.51.100.0/24"]})
    assert reach(Cloud.AWS, public, manager).route is Route.PUBLIC_ENDPOINT


def test_covered_is_subnet_containment() -> None:
    assert covered("10.1.2.3/32", ["10.0.0.0/8"]) and covered("10.0.0.0/8", ["10.0.0.0/8"])
    assert not covered("10.0.0.0/7", ["10.0.0.0/8"]) and not covered("bad", ["10.0.0.0/8"])
    assert not covered("::1/128", ["0.0.0.0/1"])  # another family never covers
