"""An EKS cluster as a worker of the fleet queue (docs/fleet-queue.md): the example fleet with aws-train as a third
worker, previewed offline from a copy of the stacks folder. The manager (GKE) reaches the private EKS API server from
a connected network; it signs in as an IAM role only its token minter can assume, mapped to a Kubernetes group."""

from __future__ import annotations

import json

import pytest

from gpufleet.engine.capture import Graph
from tests.components import replica_fleet
from tests.components.replica_fleet import MANAGER_NET, three_cloud_fleet
from tests.conftest import of_type, one

MINTER = "system:serviceaccount:kueue-system:multikueue-token-minter"


@pytest.fixture(scope="module")
def previews(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Graph]:
    order = ("aws-train-train", "gcp-train-train", "azure-train-train")
    return replica_fleet.previews(three_cloud_fleet(tmp_path_factory.mktemp("stacks"), order), ("fleet", "aws-train"))


def test_the_role_trusts_the_managers_issuer_for_the_minter_alone(previews: dict[str, Graph]) -> None:
    graph = previews["aws-train"]
    provider = one(graph, "OpenIdConnectProvider", "train-multikueue-issuer").inputs
    issuer = provider["url"]
    assert issuer.startswith("https://container.googleapis.com/v1/projects/ml-fleet-prod/")  # the GKE manager's
    assert provider["clientIdLists"] == ["sts.amazonaws.com"]
    role = one(graph, "iam/role:Role", "train-multikueue-role").inputs
    [statement] = json.loads(role["assumeRolePolicy"])["Statement"]
    host = issuer.removeprefix("https://")
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    assert statement["Condition"] == {"StringEquals": {f"{host}:sub": MINTER, f"{host}:aud": "sts.amazonaws.com"}}
    assert not [p for p in of_type(graph, "RolePolicyAttachment") if "multikueue" in p.name]  # no IAM permission


def test_the_access_entry_maps_the_role_to_the_group_the_cluster_role_binds(previews: dict[str, Graph]) -> None:
    graph = previews["aws-train"]
    entry = one(graph, "AccessEntry", "train-multikueue-entry").inputs
    assert entry["kubernetesGroups"] == ["gpufleet:multikueue-manager"] and entry["type"] == "STANDARD"
    binding = one(graph, ":ClusterRoleBinding", "train-addons-clusterrolebinding-gpufleet-multikueue-manager")
    assert binding.inputs["subjects"] == [{"kind": "Group", "name": "gpufleet:multikueue-manager",
                                           "apiGroup": "rbac.authorization.k8s.io"}]


def test_the_managers_network_gets_https_to_the_private_api_server_and_nothing_else(previews: dict[str, Graph]) -> None:
    rule = one(previews["aws-train"], "SecurityGroupIngressRule", "train-multikueue-manager-0").inputs
    assert (rule["cidrIpv4"], rule["ipProtocol"], rule["fromPort"], rule["toPort"]) == (MANAGER_NET, "tcp", 443, 443)


def test_the_manager_lists_three_clouds_in_the_order_given(previews: dict[str, Graph]) -> None:
    graph = previews["fleet"]
    configs = {r.inputs["metadata"]["name"]: r.inputs["spec"]["clusters"] for r in of_type(graph, ":MultiKueueConfig")}
    assert configs["pretrain"] == ["aws-train-train", "gcp-train-train", "azure-train-train"]
    workers = json.loads(one(graph, "core/v1:ConfigMap", "queue-addons-configmap-kueue-system-multikueue-token-minter-"
                                                          "workers").inputs["data"]["workers.json"])
    aws = next(w for w in workers if w["cloud"] == "aws")
    assert (aws["region"], aws["cluster"], aws["audience"]) == ("us-east-1", "train", "sts.amazonaws.com")
    assert aws["role_arn"].startswith("arn:aws:iam::") and aws["server"].startswith("https://")
