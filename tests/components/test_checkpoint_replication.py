"""Checkpoints across the fleet queue (docs/fleet-queue.md "Recovery across clusters"), as the stacks build them: in
each worker's bucket, per peer, an identity its cloud trusts for the peer's checkpoint-tools ServiceAccount alone,
limited to the export prefix (an IAM policy's s3:prefix and object ARNs, an IAM condition on resource.name, an
ABAC condition on the blob path and list prefix); in each worker's checkpoint sync, a replicate container with one
projected token per peer, whose variables are the ones each cloud's SDK reads."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import google.auth
import pytest

from components.k8s import upstream
from gpufleet.engine.capture import Graph
from tests.components.k8s.validation import validate
from tests.components.replica_fleet import previews, three_cloud_fleet
from tests.conftest import of_type, one

TOOLS = "system:serviceaccount:gpufleet-probe:checkpoint-tools"  # checkpoint_tools.subject(), spelt out
CONSTANTS = upstream.digest("azure-workload-identity")["constants"]["pkg/webhook/consts.go"]


@pytest.fixture(scope="module")
def graphs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Graph]:
    return previews(three_cloud_fleet(tmp_path_factory.mktemp("stacks")))


def cronjob(graph: Graph) -> dict[str, Any]:
    return one(graph, ":CronJob", "train-addons-cronjob-gpufleet-probe-checkpoint-sync").inputs


def pod(graph: Graph) -> dict[str, Any]:
    return cronjob(graph)["spec"]["jobTemplate"]["spec"]["template"]["spec"]


def peers_file(graph: Graph) -> list[dict[str, Any]]:
    data = one(graph, ":ConfigMap", "train-addons-configmap-gpufleet-probe-checkpoint-replicas").inputs["data"]
    return json.loads(data["peers.json"])


def test_each_worker_replicates_to_every_other_worker(graphs: dict[str, Graph]) -> None:
    workers = {"gcp-train": "gcp-train-train", "azure-train": "azure-train-train", "aws-train": "aws-train-train"}
    for stack, me in workers.items():
        assert sorted(p["name"] for p in peers_file(graphs[stack])) == sorted(set(workers.values()) - {me})
        assert all(p["target"].endswith("/checkpoints") for p in peers_file(graphs[stack]))
    assert not [r for r in of_type(graphs["fleet"], ":CronJob") if "checkpoint-sync" in r.name]  # the manager


def test_aws_trusts_each_peers_issuer_for_its_tools_alone_under_the_prefix(graphs: dict[str, Graph]) -> None:
    graph = graphs["aws-train"]
    for peer in ("gcp-train-train", "azure-train-train"):
        issuer = one(graph, "OpenIdConnectProvider", f"train-checkpoint-peer-{peer}-issuer").inputs["url"]
        host = issuer.removeprefix("https://")
        [statement] = json.loads(one(graph, "iam/role:Role", f"train-checkpoint-peer-{peer}").inputs[
            "assumeRolePolicy"])["Statement"]
        assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
        assert statement["Condition"] == {"StringEquals": {f"{host}:sub": TOOLS, f"{host}:aud": "sts.amazonaws.com"}}
        doc = json.loads(one(graph, "RolePolicy", f"train-checkpoint-peer-{peer}-prefix").inputs["policy"])
        by_sid = {s["Sid"]: s for s in doc["Statement"]}
        assert by_sid["ListUnderPrefix"]["Condition"] == {"StringLike": {"s3:prefix": ["checkpoints/*"]}}
        assert all(r.endswith("/checkpoints/*") for r in by_sid["PrefixObjects"]["Resource"])
        assert "s3:DeleteObject" not in by_sid["PrefixObjects"]["Action"]  # the copy never deletes
    gke = one(graph, "OpenIdConnectProvider", "train-checkpoint-peer-gcp-train-train-issuer").inputs["url"]
    assert gke.startswith("https://container.googleapis.com/v1/projects/ml-train-prod/")  # gcp-train's cluster


def test_gcp_pools_trust_each_peers_tools_and_the_grant_is_conditioned_on_the_prefix(graphs: dict[str, Graph]) -> None:
    graph = graphs["gcp-train"]
    for peer in ("azure-train-train", "aws-train-train"):
        provider = one(graph, "WorkloadIdentityPoolProvider", f"train-checkpoint-peer-{peer}").inputs
        assert provider["attributeCondition"] == f"assertion.sub == '{TOOLS}'"
        assert provider["oidc"]["allowedAudiences"] == ["gpufleet-checkpoints:ml-train-prod:train"]
        pool = one(graph, "WorkloadIdentityPool", f"train-checkpoint-peer-{peer}").inputs["workloadIdentityPoolId"]
        assert len(pool) <= 32 and pool.endswith(f"-{peer}")  # one pool per peer: each peer's subject is the same
        member = one(graph, "BucketIAMMember", f"train-checkpoint-peer-{peer}").inputs
        assert member["member"].startswith("principal://iam.googleapis.com/projects/")
        assert member["member"].endswith(f"/workloadIdentityPools/{pool}/subject/{TOOLS}")
        assert member["role"] == "roles/storage.objectUser"
        expression = member["condition"]["expression"]
        assert 'resource.name.startsWith("projects/_/buckets/' in expression
        assert expression.endswith('/objects/checkpoints/")')


def test_azure_federates_each_peer_on_one_identity_conditioned_on_the_prefix(graphs: dict[str, Graph]) -> None:
    graph = graphs["azure-train"]
    for peer in ("gcp-train-train", "aws-train-train"):
        credential = one(graph, "FederatedIdentityCredential", f"train-checkpoint-peers-{peer}").inputs
        assert credential["subject"] == TOOLS and credential["audiences"] == [CONSTANTS["DefaultAudience"]]
    grant = one(graph, "RoleAssignment", "train-checkpoint-peers-blob-data").inputs
    assert grant["scope"].endswith("/blobServices/default/containers/checkpoints")  # the checkpoint container
    assert grant["conditionVersion"] == "2.0"
    condition = grant["condition"]
    blobs = "Microsoft.Storage/storageAccounts/blobServices/containers/blobs"
    # as "Read or list blobs in named containers with a path" and "Write blobs ... with a path" spell it
    # (learn.microsoft.com/azure/storage/blobs/storage-auth-abac-examples), for every blob action of the role
    assert f"@Resource[{blobs}:path] StringStartsWith 'checkpoints/'" in condition
    assert f"@Request[{blobs}:prefix] StringStartsWith 'checkpoints/'" in condition
    for action in ("write", "add/action", "delete", "move/action"):
        assert f"!(ActionMatches{{'{blobs}/{action}'}})" in condition
    assert f"!(ActionMatches{{'{blobs}/read'}} AND NOT SubOperationMatches{{'Blob.List'}})" in condition
    assert f"!(ActionMatches{{'{blobs}/read'}} AND SubOperationMatches{{'Blob.List'}})" in condition
    depth = 0
    for ch in condition:  # balanced, and the two halves joined by AND at the top level
        depth += {"(": 1, ")": -1}.get(ch, 0)
        assert depth >= 0
    assert depth == 0 and ") AND ((!" in condition


def test_one_projected_token_per_peer_with_the_audience_that_peers_identity_accepts(graphs: dict[str, Graph]) -> None:
    spec = pod(graphs["gcp-train"])
    tokens = {v["name"]: v["projected"]["sources"][0]["serviceAccountToken"] for v in spec["volumes"]
              if "projected" in v}
    audiences = sorted(t["audience"] for t in tokens.values())
    assert audiences == sorted([CONSTANTS["DefaultAudience"], "sts.amazonaws.com"])
    assert all(t["expirationSeconds"] <= 3600 for t in tokens.values())
    [replicate] = [c for c in spec["containers"] if c["name"] == "replicate"]
    assert replicate["securityContext"]["runAsUser"] == 65534
    assert spec["serviceAccountName"] == "checkpoint-tools" and spec["automountServiceAccountToken"] is False


def test_each_peers_variables_are_what_its_sdk_reads(graphs: dict[str, Graph], tmp_path: Path) -> None:
    by_name = {p["name"]: p for p in peers_file(graphs["aws-train"])}
    azure = by_name["azure-train-train"]["env"]
    for name in ("AzureClientIDEnvVar", "AzureTenantIDEnvVar", "AzureFederatedTokenFileEnvVar"):
        assert CONSTANTS[name] in azure  # the names the workload identity webhook gives azidentity
    # the Google credential configuration, loaded by Google's own auth library
    config = json.loads(by_name["gcp-train-train"]["files"]["GOOGLE_APPLICATION_CREDENTIALS"])
    token = Path(config["credential_source"]["file"])
    config["credential_source"]["file"] = str(tmp_path / token.name)
    credentials, _ = google.auth.load_credentials_from_dict(config)
    assert type(credentials).__module__ == "google.auth.identity_pool"
    assert credentials._audience.startswith("//iam.googleapis.com/projects/")
    # gcp-train's pool for aws-train: "ckpt-", 8 hex of sha256("<worker><<peer>"), "-", the peer's name
    digest = hashlib.sha256(b"gcp-train-train<aws-train-train").hexdigest()[:8]
    assert credentials._audience.endswith(f"/workloadIdentityPools/ckpt-{digest}-aws-train-train/providers/"
                                          "checkpoint-tools")
    aws = by_name["gcp-train-train"]  # gcp-train as aws-train's peer: the GCP remote, no AWS variable
    assert not any(k.startswith("AWS_") for k in aws["env"])
    s3 = {p["name"]: p for p in peers_file(graphs["gcp-train"])}["aws-train-train"]["env"]
    assert s3["AWS_WEB_IDENTITY_TOKEN_FILE"] == "/var/run/secrets/gpufleet/peers/aws-train-train/token"
    assert s3["AWS_ROLE_ARN"].endswith(":role/train-checkpoint-peer-gcp-train-train")


def test_the_sync_with_its_peers_is_a_valid_cronjob_on_every_worker(graphs: dict[str, Graph]) -> None:
    for stack in ("gcp-train", "azure-train", "aws-train"):
        job = cronjob(graphs[stack])
        validate({"apiVersion": "batch/v1", "kind": "CronJob", **{k: job[k] for k in ("metadata", "spec")}}, "1.33")
        names = [c["name"] for c in pod(graphs[stack])["containers"]]
        # AWS: no sync container (its data repository association exports), the replicate and restore only
        assert names == (["replicate", "restore"] if stack == "aws-train" else ["rclone", "replicate", "restore"])


def test_only_the_restore_writes_to_lustre(graphs: dict[str, Graph]) -> None:
    spec = pod(graphs["gcp-train"])
    [claim] = [v for v in spec["volumes"] if "persistentVolumeClaim" in v]
    assert claim["persistentVolumeClaim"]["readOnly"] is False  # one volume, mounted read-only by all but one
    mounts = {c["name"]: next(m["readOnly"] for m in c["volumeMounts"] if m["name"] == claim["name"])
              for c in spec["containers"]}
    assert mounts == {"rclone": True, "replicate": True, "restore": False}
    [restore] = [c for c in spec["containers"] if c["name"] == "restore"]
    assert restore["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["DAC_OVERRIDE"]}
