"""The wiring of one queue for the fleet across stacks (docs/fleet-queue.md): each side exports what the other needs,
and reads the other side's exports by StackReference. No cloud SDK; the translators build the identities.

- The manager stack exports ``multikueue-<cluster>-issuer``: its cluster's OIDC issuer URL, which every worker's
  cloud trusts for the manager's token minter alone (``fleetqueue.subject()`` is the only subject it accepts).
- A worker stack exports ``multikueue-<cluster>``: its API server (and CA), and the identity the manager becomes
  there (an IAM role, a Google service account behind a workload identity pool, an Entra client id): addresses and
  names, never a credential.

A worker stack needs its manager's issuer (``require_output``: its `pulumi up` fails, naming the output, until the
manager stack is up); the manager lists a worker whose stack has not exported yet as pending, and its minter skips
it. So a new fleet goes up manager, workers, manager again (docs/fleet-queue.md "Bring-up").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi

from components import checkpoint_peers, multikueue
from components.fleet import Cluster, Fleet
from components.k8s.fleetqueue import WorkerLink
from components.k8s.replicate import PeerLink
from components.replicas import Source
from components.spec import ClusterSpec


def issuer_output(cluster: str) -> str:
    return f"multikueue-{cluster}-issuer"


def access_output(cluster: str) -> str:
    return f"multikueue-{cluster}"


def reference(stack: str, cluster: str) -> pulumi.StackReference:
    """The stack <organization>/<project>/<stack>, read for one of its clusters (one reference per cluster pair)."""
    name = f"{pulumi.get_organization()}/{pulumi.get_project()}/{stack}"
    return pulumi.StackReference(f"multikueue-{stack}-{cluster}", stack_name=name)


def manager_issuer(spec: ClusterSpec) -> pulumi.Output[str]:
    """On a worker: the OIDC issuer of its manager's cluster, from the manager stack's export."""
    assert spec.multikueue is not None and spec.multikueue.manager is not None
    ref = spec.multikueue.manager
    return reference(ref.stack, ref.cluster).require_output(issuer_output(ref.cluster))


def worker_links(cluster: Cluster, peers: Mapping[str, Fleet]) -> list[WorkerLink]:
    """On the manager: each worker with what its stack exported (None while that stack has not exported it)."""
    if not cluster.spec.is_manager:
        return []
    return [WorkerLink(w, reference(w.ref.stack, w.ref.cluster).get_output(access_output(w.ref.cluster)))
            for w in multikueue.resolve_workers(cluster.spec, peers)]


def export(cluster: Cluster, built: Any) -> None:
    """The manager's issuer; a worker's access (its translator built it as ``multikueue_access``)."""
    if cluster.spec.is_manager:
        pulumi.export(issuer_output(cluster.name), built.oidc_issuer)
    elif getattr(built, "multikueue_access", None) is not None:
        pulumi.export(access_output(cluster.name), built.multikueue_access)


def peer_links(stack: str, cluster: Cluster, fleets: Mapping[str, Fleet]) -> tuple[tuple[PeerLink, ...], list[Source]]:
    """On a worker (docs/fleet-queue.md "Recovery across clusters"): each peer as its stack exported it for this
    worker's checkpoint sync (its bucket and the identity this worker becomes there), and each peer's issuer, which
    this worker's cloud trusts for the peer's checkpoint tools (None while that stack has not exported them)."""
    found = checkpoint_peers.peers(stack, cluster.spec, fleets)
    if not checkpoint_peers.replicates(cluster.spec, found):
        return (), []
    me = f"{stack}-{cluster.name}"
    refs = {p.name: reference(p.stack, p.cluster.name) for p in found if p.cluster.spec.storage.lustre is not None}
    links = tuple(PeerLink(p, me, refs[p.name].get_output(checkpoint_peers.replica_output(p.cluster.name)))
                  for p in found if p.name in refs)
    sources = [Source(p.name, refs[p.name].get_output(checkpoint_peers.issuer_output(p.cluster.name)))
               for p in found if p.name in refs]
    return links, sources


def export_replica(cluster: Cluster, built: Any, replica: pulumi.Output[Any] | None) -> None:
    """A worker that replicates: its issuer (its peers' clouds trust it) and its bucket with each peer's identity."""
    if replica is not None:
        pulumi.export(checkpoint_peers.issuer_output(cluster.name), built.oidc_issuer)
        pulumi.export(checkpoint_peers.replica_output(cluster.name), replica)
