"""The checkpoint tools' GCP identity under the mock runtime: the tools' Kubernetes ServiceAccount, as a Workload
Identity principal, holds object access on the Lustre-linked bucket and on nothing else; the probe prefix's old
versions expire."""

from __future__ import annotations

import pytest

from gpufleet.engine.capture import Graph, run_program
from stacks.config import CONFIG_KEY
from tests.conftest import Capture, example_fleet, of_type, one

# https://cloud.google.com/kubernetes-engine/docs/how-to/workload-identity: a Kubernetes ServiceAccount as a principal
PRINCIPAL = ("principal://iam.googleapis.com/projects/{number}/locations/global/workloadIdentityPools/"
             "{project}.svc.id.goog/subject/ns/gpufleet-probe/sa/checkpoint-tools")


@pytest.fixture(scope="module")
def graph() -> Graph:
    fleet = example_fleet("gcp-train")
    fleet["clusters"][0]["storage"]["buckets"].append({"name": "scratch"})
    return run_program("test", {CONFIG_KEY: fleet})


def _tools_members(graph: Graph) -> list:
    return [r for r in graph.resources if "IAMMember" in r.type and "sa/checkpoint-tools" in str(r.inputs["member"])]


def test_the_tools_principal_has_object_access_on_the_linked_bucket_only(graph: Graph) -> None:
    from gpufleet.engine.fakes.gcp import PROJECT_NUMBER

    [member] = _tools_members(graph)  # no project-level or key grant, none on the second bucket
    pool = one(graph, "container/cluster:Cluster", "train-gke").inputs["workloadIdentityConfig"]["workloadPool"]
    assert member.type == "gcp:storage/bucketIAMMember:BucketIAMMember"
    # the bucket Lustre is linked to (the Lustre service agent's grant names it)
    assert member.inputs["bucket"] == one(graph, "BucketIAMMember", "train-lustre-agent-bucket").inputs["bucket"]
    assert member.inputs["role"] == "roles/storage.objectUser"
    assert member.inputs["member"] == PRINCIPAL.format(number=PROJECT_NUMBER, project=pool.removesuffix(".svc.id.goog"))


def test_the_tools_use_the_metadata_server_of_every_node_pool(graph: Graph) -> None:
    """env_auth on GKE reads the metadata server, which only GKE_METADATA node pools serve to pods."""
    for pool in of_type(graph, "container/nodePool:NodePool"):
        assert pool.inputs["nodeConfig"]["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}, pool.name


def test_probe_objects_expire_their_old_versions_after_a_day(graph: Graph) -> None:
    rules = one(graph, "storage/bucket:Bucket", "train-checkpoints-bucket").inputs["lifecycleRules"]
    probe = [r for r in rules if r["condition"].get("matchesPrefixes") == [".gpufleet-probe/"]]
    assert probe == [{"action": {"type": "Delete"}, "condition": {
        "daysSinceNoncurrentTime": 1, "withState": "ARCHIVED", "matchesPrefixes": [".gpufleet-probe/"]}}]


def test_no_lustre_no_tools_grant(capture: Capture) -> None:
    fleet = example_fleet("gcp-train")
    fleet["clusters"][0]["storage"].pop("lustre")
    assert _tools_members(capture(fleet)) == []
