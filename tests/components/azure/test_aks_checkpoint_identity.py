"""The checkpoint tools' Azure identity under the mock runtime: a user-assigned identity federated with the AKS OIDC
issuer for exactly the tools' ServiceAccount, holding Storage Blob Data Contributor on the checkpoint container only
(not the account, not the logs container, not another bucket); the probe prefix's old versions expire."""

from __future__ import annotations

import pytest

from components.azure.roles import STORAGE_BLOB_DATA_CONTRIBUTOR
from gpufleet.engine.capture import Graph, run_program
from stacks.config import CONFIG_KEY
from tests.conftest import Capture, example_fleet, of_type, one


@pytest.fixture(scope="module")
def graph() -> Graph:
    fleet = example_fleet("azure-train")
    fleet["clusters"][0]["storage"]["buckets"].append({"name": "scratch"})
    return run_program("test", {CONFIG_KEY: fleet})


def test_the_identity_trusts_the_clusters_issuer_for_the_tools_service_account(graph: Graph) -> None:
    federation = one(graph, "FederatedIdentityCredential", "train-checkpoint-tools-federation").inputs
    issuer = one(graph, "ManagedCluster", "train-aks").inputs  # the fake AKS serves its issuer URL as an output
    assert federation["subject"] == "system:serviceaccount:gpufleet-probe:checkpoint-tools"
    # api://AzureADTokenExchange: the audience azure-workload-identity's webhook projects (pkg/webhook/consts.go)
    assert federation["audiences"] == ["api://AzureADTokenExchange"]
    assert issuer["oidcIssuerProfile"] == {"enabled": True}
    assert federation["issuer"].startswith("https://eastus2.oic.prod-aks.azure.com/")  # the fake cluster's issuer
    assert federation["resourceName"].startswith("train-checkpoint-tools-identity")


def test_blob_data_access_on_the_checkpoint_container_only(graph: Graph) -> None:
    grants = [r.inputs for r in of_type(graph, "RoleAssignment") if r.name.startswith("train-checkpoint-tools")]
    [grant] = grants
    assert grant["roleDefinitionId"].endswith(f"/roleDefinitions/{STORAGE_BLOB_DATA_CONTRIBUTOR}")
    linked = one(graph, "AmlFilesystem", "train-lustre-amlfs").inputs["hsm"]["settings"]["container"]
    assert grant["scope"] == linked and grant["scope"].endswith("/containers/checkpoints")
    assert "scratch" not in grant["scope"]


def test_service_account_and_pod_carry_the_webhooks_names(graph: Graph) -> None:
    [sa] = [r.inputs for r in of_type(graph, "core/v1:ServiceAccount")
            if r.inputs["metadata"]["name"] == "checkpoint-tools"]
    # azure-workload-identity pkg/webhook/consts.go: ClientIDAnnotation, UseWorkloadIdentityLabel
    assert set(sa["metadata"]["annotations"]) == {"azure.workload.identity/client-id"}
    [probe] = [r.inputs for r in of_type(graph, "apps/v1:Deployment") if r.inputs["metadata"]["name"] ==
               "checkpoint-probe"]
    assert probe["spec"]["template"]["metadata"]["labels"]["azure.workload.identity/use"] == "true"
    assert probe["spec"]["template"]["spec"]["serviceAccountName"] == "checkpoint-tools"


def test_probe_blobs_expire_their_old_versions_after_a_day(graph: Graph) -> None:
    rules = one(graph, "ManagementPolicy", "train-checkpoints-lifecycle").inputs["policy"]["rules"]
    [probe] = [r for r in rules if r["name"] == "probe-objects"]
    assert probe["definition"]["filters"]["prefixMatch"] == ["checkpoints/.gpufleet-probe/"]  # container first
    assert probe["definition"]["actions"] == {"version": {"delete": {"daysAfterCreationGreaterThan": 1}}}


def test_no_lustre_no_checkpoint_identity(capture: Capture) -> None:
    fleet = example_fleet("azure-train")
    fleet["clusters"][0]["storage"].pop("lustre")
    graph = capture(fleet)
    assert not [r for r in of_type(graph, "FederatedIdentityCredential") if "multikueue" not in r.name]  # manager's
    assert not [r for r in of_type(graph, "RoleAssignment") if r.name.startswith("train-checkpoint-tools")]
