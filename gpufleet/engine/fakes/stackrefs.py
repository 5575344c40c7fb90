"""FAKE answers to StackReference reads for the offline preview (see gpufleet/engine/fakes/__init__.py).

A MultiKueue manager reads its workers' exports, and a worker its manager's issuer (components/fleetlinks.py). No
other stack's state exists offline, so the referenced stack's file (in the folder the preview was pointed at) says
which outputs it would export, and each value is FAKE, in the shape that stack's translator exports, marked so that
nobody mistakes it for a recorded one."""

from __future__ import annotations

import base64
from typing import Any

from pulumi.runtime import MockResourceArgs

from components import checkpoint_peers, fleetlinks
from components.catalog import Cloud
from components.fleet import Cluster, Fleet
from components.gcp.replica import pool_id
from components.k8s.fleetqueue import subject
from gpufleet.engine.fakes import aws, azure, gcp
from gpufleet.engine.fakes.base import Invoke, Outputs, hex_id

FAKE_CA = base64.b64encode(b"FAKE-CA-FOR-THE-OFFLINE-PREVIEW").decode()


def _issuer(fleet: Fleet, c: Cluster) -> str:
    token = "FAKE" + hex_id(c.name, 28).upper()
    if fleet.cloud is Cloud.AWS:
        return f"https://oidc.eks.{c.spec.region}.amazonaws.com/id/{token}"
    if fleet.cloud is Cloud.GCP:
        return (f"https://container.googleapis.com/v1/projects/{fleet.spec.account}/locations/{c.spec.region}/"
                f"clusters/{c.name}")
    return f"https://{c.spec.region}.oic.prod-aks.azure.com/{azure.TENANT}/{token.lower()}/"


def _access(fleet: Fleet, c: Cluster) -> dict[str, Any]:
    token = "fake" + hex_id(fleet.spec.cloud.value + c.name, 12)
    if fleet.cloud is Cloud.AWS:
        return {"server": f"https://{token.upper()}.gr7.{c.spec.region}.eks.amazonaws.com", "ca_data": FAKE_CA,
                "cluster": c.name, "region": c.spec.region, "audience": "sts.amazonaws.com",
                "role_arn": f"arn:aws:iam::{aws.ACCOUNT}:role/{c.name}-multikueue-role-{token}"}
    if fleet.cloud is Cloud.GCP:
        project = fleet.spec.account
        return {"server": f"https://gke-{token}-{gcp.PROJECT_NUMBER}.{c.spec.region}.gke.goog", "ca_data": "",
                "provider": f"projects/{gcp.PROJECT_NUMBER}/locations/global/workloadIdentityPools/"
                            f"gpufleet-mk-{c.name}/providers/multikueue-manager",
                "service_account": f"{c.name}-multikueue@{project}.iam.gserviceaccount.com",
                "audience": f"gpufleet-multikueue:{project}:{c.name}"}
    return {"server": f"https://{c.name}-{token}.privatelink.{c.spec.region}.azmk8s.io:443", "ca_data": FAKE_CA,
            "tenant_id": azure.TENANT, "client_id": f"00000000-fake-4000-8000-{hex_id(c.name, 12)}",
            "audience": "api://AzureADTokenExchange"}


def _replica(stack: str, fleet: Fleet, c: Cluster, sources: list[str]) -> dict[str, Any]:
    """A worker's checkpoint bucket and, per peer, the identity the peer becomes there (components/replicas.py)."""
    name = c.spec.storage.lustre.bucket  # type: ignore[union-attr]
    # S3: the name the AWS fakes give that stack's own bucket (components/aws/storage.py), so both sides agree
    bucket = (aws.bucket_name(f"{name}-", f"{c.name}-{name}-bucket") if fleet.cloud is Cloud.AWS
              else f"{c.name}-{name}-fake{hex_id(c.name, 8)}")
    out: dict[str, Any] = {"bucket": bucket, "region": c.spec.region, "fake": "FAKE offline-preview answer"}
    if fleet.cloud is Cloud.AWS:
        out["sources"] = {s: {"role_arn": f"arn:aws:iam::{aws.ACCOUNT}:role/{c.name}-checkpoint-peer-{s}"}
                          for s in sources}
    elif fleet.cloud is Cloud.GCP:
        out["sources"] = {s: {"provider": f"projects/{gcp.PROJECT_NUMBER}/locations/global/workloadIdentityPools/"
                                          f"{pool_id(f'{stack}-{c.name}', s)}/providers/checkpoint-tools"}
                          for s in sources}
    else:
        out.update({"account": f"fake{hex_id(c.name, 12)}", "tenant_id": azure.TENANT,
                    "client_id": f"00000000-fake-4000-8000-{hex_id('peers' + c.name, 12)}",
                    "sources": {s: {"federated": True} for s in sources}})
    return out


def outputs_of(fleet: Fleet, stack: str | None = None, fleets: dict[str, Fleet] | None = None) -> dict[str, Any]:
    """What the stack's program would export for the other side: a manager's issuer, each worker's access and,
    with its peers (``fleets``), the checkpoint bucket it opens to them and its own issuer."""
    out: dict[str, Any] = {}
    for c in fleet.clusters:
        if c.spec.is_manager:
            out[fleetlinks.issuer_output(c.name)] = _issuer(fleet, c)
        elif c.spec.multikueue is not None:
            out[fleetlinks.access_output(c.name)] = {**_access(fleet, c), "fake": f"FAKE offline-preview answer "
                                                     f"(the manager's minter subject: {subject()})"}
            found = checkpoint_peers.peers(stack, c.spec, fleets) if stack and fleets else []
            if checkpoint_peers.replicates(c.spec, found):
                out[checkpoint_peers.issuer_output(c.name)] = _issuer(fleet, c)
                out[checkpoint_peers.replica_output(c.name)] = _replica(stack, fleet, c, [p.name for p in found])
    return out


def _stack_reference(a: MockResourceArgs, rid: str) -> dict[str, Any]:
    from stacks.config import PEERS_DIR, load_stack_file, peers, stack_file  # the engine's own import of stacks

    stack = str(a.inputs.get("name", "")).rsplit("/", 1)[-1]
    fleet = load_stack_file(stack_file(stack, PEERS_DIR.get()))
    return {"outputs": outputs_of(fleet, stack, peers(fleet)), "secretOutputNames": []}


OUTPUTS: dict[str, Outputs] = {"pulumi:pulumi:StackReference": _stack_reference}
INVOKES: dict[str, Invoke] = {}


def physical_id(a: MockResourceArgs) -> str | None:
    return str(a.inputs.get("name")) if a.typ == "pulumi:pulumi:StackReference" else None
