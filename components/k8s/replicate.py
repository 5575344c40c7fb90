"""Checkpoints across the fleet queue, in the cluster (docs/fleet-queue.md "Recovery across clusters"): the parts the
checkpoint sync's pod gains on a worker with peers (``components.checkpoint_peers``).

- a ``replicate`` container (``data/replicate_checkpoints.py`` with the pinned rclone): the Lustre export path to each
  peer's bucket, as the checkpoint tools' ServiceAccount, through each peer cloud's federated identity: a projected
  token of that ServiceAccount per peer, with the audience the peer's identity accepts, and the variables each
  cloud's SDK reads (rclone's env_auth: the AWS SDK's web identity variables, a Google external account credential
  configuration, azidentity's workload identity variables); nothing secret, every token short-lived;
- a ``restore`` container: the newest complete checkpoint of each run in this worker's bucket onto Lustre, where a
  job dispatched here after an eviction elsewhere resumes (GCP's and Azure's Lustre do not import the export prefix
  by themselves; on AWS the data repository association's auto-import usually has, and the restore finds the
  marker there and copies nothing).

Each peer's bucket and identity come from the peer stack's export (``checkpoint_peers.replica_output``), read by
StackReference; a peer that has not exported yet, or has not yet trusted this worker, is ``pending`` and skipped."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi

from components import checkpoint_tools
from components.catalog import Cloud
from components.checkpoint_peers import Peer
from components.fleet import Cluster
from components.k8s import checkpoints
from components.k8s.checkpoints import CheckpointBucket, webhook_constant
from components.k8s.model import Manifest, Obj, as_nobody, config_map
from components.k8s.training import LUSTRE_MOUNT

SCRIPT = Path(__file__).parent / "data" / "replicate_checkpoints.py"
IMAGE = "python:3.12-slim"  # the probe's: Docker Official Image, the script is stdlib only
CONFIG = "checkpoint-replicas"
SCRIPTS = "/replica"
TOKENS = "/var/run/secrets/gpufleet/peers"
TOKEN_S = 3600
REMOTE = "peer"  # each rclone call sees one peer's remote only
MARKER = ".metadata"  # PyTorch Distributed Checkpoint writes it once every shard is written
# IAM OIDC providers list it as their client id; EKS's own IRSA tokens carry it
# (https://docs.aws.amazon.com/eks/latest/userguide/enable-iam-roles-for-service-accounts.html)
STS_AUDIENCE = "sts.amazonaws.com"
# The AWS SDKs' web identity variables (https://docs.aws.amazon.com/sdkref/latest/guide/feature-assume-role-credentials.html,
# "Assume role with web identity"); rclone's s3 env_auth loads the Go SDK's default chain, which reads them before
# the container (Pod Identity) provider
AWS_WEB_IDENTITY = ("AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_SESSION_NAME")
# Google's external account credential configuration (https://google.aip.dev/auth/4117), which
# google.DefaultClient (rclone's gcs env_auth) reads from GOOGLE_APPLICATION_CREDENTIALS
GOOGLE_CREDENTIALS = "GOOGLE_APPLICATION_CREDENTIALS"
GOOGLE_STS = "https://sts.googleapis.com/v1/token"
JWT = "urn:ietf:params:oauth:token-type:jwt"


@dataclass(frozen=True)
class PeerLink:
    """A peer as this worker's program sees it: the peer, this worker's name (its key in the peer's export), and
    what the peer's stack exported (None until that stack is up)."""

    peer: Peer
    source: str
    access: pulumi.Input[Any] | None

    @property
    def token_dir(self) -> str:
        return f"{TOKENS}/{self.peer.name}"


def audience(cloud: Cloud, account: str | None, cluster: str) -> str:
    """The audience of the token a peer's cloud accepts from the checkpoint tools: STS's for an IAM role, the
    peer's own for its workload identity pool provider, Entra's token exchange for a managed identity."""
    if cloud is Cloud.AWS:
        return STS_AUDIENCE
    if cloud is Cloud.GCP:
        return f"gpufleet-checkpoints:{account}:{cluster}"
    return webhook_constant("DefaultAudience")


def _identity(link: PeerLink, access: dict[str, Any]) -> tuple[dict[str, str], dict[str, str]] | None:
    """The peer cloud's variables (and files) for this worker's identity there; None while the peer does not
    trust this worker yet."""
    mine = access.get("sources", {}).get(link.source)
    if mine is None:
        return None
    token = f"{link.token_dir}/token"
    if link.peer.cloud is Cloud.AWS:
        return dict(zip(AWS_WEB_IDENTITY, (mine["role_arn"], token, f"gpufleet-checkpoints-{link.source}"),
                        strict=True)), {}
    if link.peer.cloud is Cloud.GCP:
        config = {"type": "external_account", "audience": f"//iam.googleapis.com/{mine['provider']}",
                  "subject_token_type": JWT, "token_url": GOOGLE_STS,
                  "credential_source": {"file": token, "format": {"type": "text"}}}
        return {}, {GOOGLE_CREDENTIALS: json.dumps(config)}
    return {webhook_constant("AzureClientIDEnvVar"): access["client_id"],
            webhook_constant("AzureTenantIDEnvVar"): access["tenant_id"],
            webhook_constant("AzureFederatedTokenFileEnvVar"): token}, {}


def peer_entry(link: PeerLink, access: dict[str, Any] | None, prefix: str) -> dict[str, Any]:
    """One line of the replicate script's peers file."""
    found = _identity(link, access) if access else None
    if access is None or found is None:
        return {"name": link.peer.name, "pending": True}
    env, files = found
    bucket = CheckpointBucket(link.peer.cloud, access["bucket"], access["region"], account=access.get("account"))
    remote = {e["name"]: e["value"] for e in checkpoints.env(bucket, REMOTE)}
    return {"name": link.peer.name, "target": checkpoints.remote_path(bucket, prefix, REMOTE),
            "env": {**remote, **env}, "files": files}


def peers_file(links: list[PeerLink], prefix: str) -> pulumi.Output[str]:
    accesses = [pulumi.Output.from_input(link.access) for link in links]
    return pulumi.Output.all(*accesses).apply(lambda got: json.dumps(
        [peer_entry(link, a, prefix) for link, a in zip(links, got, strict=True)], indent=1, sort_keys=True))


def config(links: list[PeerLink], prefix: str) -> Manifest:
    return config_map(CONFIG, checkpoint_tools.NAMESPACE, {SCRIPT.name: SCRIPT.read_text(),
                                                           "peers.json": peers_file(links, prefix)})


def _script_env(extra: dict[str, pulumi.Input[str]]) -> list[Obj]:
    base = {"REPLICA_RCLONE": checkpoints.RCLONE, "REPLICA_MARKER": MARKER,
            "REPLICA_FLAGS": json.dumps(["--transfers=8", "--stats=1m", "--stats-one-line", "--verbose"])}
    return [{"name": k, "value": v} for k, v in {**base, **extra}.items()]


def _mounts(read_only: bool) -> list[Obj]:
    return [{"name": "tools", "mountPath": checkpoints.TOOLS_MOUNT, "readOnly": True},
            {"name": "replica", "mountPath": SCRIPTS, "readOnly": True},
            {"name": "scratch", "mountPath": "/tmp"},
            {"name": "lustre", "mountPath": LUSTRE_MOUNT, "readOnly": read_only}]


def replicate_container(links: list[PeerLink], prefix: str, min_age_s: int) -> Obj:
    tokens = [{"name": f"peer-token-{i}", "mountPath": link.token_dir, "readOnly": True}
              for i, link in enumerate(links)]
    return {"name": "replicate", "image": IMAGE, "command": ["python", f"{SCRIPTS}/{SCRIPT.name}"],
            "env": _script_env({"REPLICA_SOURCE": f"{LUSTRE_MOUNT}/{prefix}", "REPLICA_PEERS": f"{SCRIPTS}/peers.json",
                                "REPLICA_MIN_AGE_S": str(min_age_s)}),
            "resources": checkpoints.copy_resources(),
            "securityContext": as_nobody(), "volumeMounts": _mounts(True) + tokens}


def restore_container(bucket: CheckpointBucket, prefix: str) -> Obj:
    """Writes onto Lustre under directories the training pods made: root, with only the capability to pass their
    permissions (DAC_OVERRIDE, allowed by the namespace's baseline Pod Security level)."""
    return {"name": "restore", "image": IMAGE, "command": ["python", f"{SCRIPTS}/{SCRIPT.name}", "restore"],
            "env": _script_env({"REPLICA_REMOTE": checkpoints.remote_path(bucket, prefix),
                                "REPLICA_TARGET": f"{LUSTRE_MOUNT}/{prefix}"}) + checkpoints.env(bucket),
            "resources": checkpoints.copy_resources(),
            "securityContext": {"runAsUser": 0, "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                "capabilities": {"drop": ["ALL"], "add": ["DAC_OVERRIDE"]}},
            "volumeMounts": _mounts(False)}


def volumes(links: list[PeerLink]) -> list[Obj]:
    tokens = [{"name": f"peer-token-{i}", "projected": {"sources": [{"serviceAccountToken": {
        "audience": audience(link.peer.cloud, link.peer.account, link.peer.cluster.name),
        "expirationSeconds": TOKEN_S, "path": "token"}}]}} for i, link in enumerate(links)]
    return [{"name": "tools", "emptyDir": {}}, {"name": "scratch", "emptyDir": {}},
            {"name": "replica", "configMap": {"name": CONFIG}}, *tokens]


def pod_parts(cluster: Cluster, bucket: CheckpointBucket, links: list[PeerLink],
              min_age_s: int) -> tuple[list[Obj], list[Obj], list[Obj]]:
    """(init containers, containers, volumes) the sync's pod gains on a worker with peers."""
    lustre = cluster.spec.storage.lustre
    assert lustre is not None
    prefix = lustre.export_path.strip("/")
    # beside the copies, not before them: a failed restore fails the run (and its alert), never blocks the sync
    return ([checkpoints.install_rclone()], [replicate_container(links, prefix, min_age_s),
            restore_container(bucket, prefix)], volumes(links))
