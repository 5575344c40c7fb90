"""Checkpoints across the fleet queue (docs/fleet-queue.md "Recovery across clusters"): each worker of a MultiKueue
manager replicates its checkpoints to the buckets of the manager's other workers (its peers), so that a job evicted
on one worker and dispatched to another finds its last checkpoint there. Pure data and functions: no cloud SDK.

A worker's peers are read from the stack files: its manager's ``multikueue.workers``, less itself
(``stacks.config.peers`` also reads the peers' own files). ``check`` refuses, from each worker's side, what cannot
work: a worker without a checkpoint bucket in a fleet queue whose other workers have one (a job evicted elsewhere
could not resume there, nor could its checkpoints leave it), a sync turned off (the replication runs in it), an
export path that differs between workers (a job reads its checkpoints at one path, wherever it runs), and two EKS
workers in one AWS account (each peer's issuer gets one IAM OIDC provider per account)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from components import multikueue
from components.catalog import Cloud
from components.errors import SpecProblem
from components.fleet import Cluster, Fleet
from components.multikueue import stack_file
from components.spec import ClusterSpec


@dataclass(frozen=True)
class Peer:
    """Another worker of this worker's fleet queue, where its checkpoints are replicated."""

    stack: str
    cluster: Cluster
    cloud: Cloud
    account: str | None  # the peer stack's account (GCP: its project, in the token audience)

    @property
    def name(self) -> str:
        return f"{self.stack}-{self.cluster.name}"


def issuer_output(cluster: str) -> str:
    """A worker's export: its cluster's OIDC issuer, which each peer's cloud trusts for the checkpoint tools."""
    return f"checkpoints-{cluster}-issuer"


def replica_output(cluster: str) -> str:
    """A worker's export: its checkpoint bucket and, per peer, the identity that peer's checkpoint tools become."""
    return f"checkpoints-{cluster}-replica"


def _manager(spec: ClusterSpec, fleets: Mapping[str, Fleet]) -> Cluster | None:
    ref = spec.multikueue.manager if spec.multikueue else None
    found = multikueue.find_cluster(fleets, ref.stack, ref.cluster) if ref else None
    return found if found is not None and found.spec.is_manager else None


def peers(stack: str, spec: ClusterSpec, fleets: Mapping[str, Fleet]) -> list[Peer]:
    """The other workers of this worker's manager whose stack files were read, in the manager's order."""
    manager = _manager(spec, fleets)
    if manager is None:
        return []
    return [Peer(w.ref.stack, w.cluster, w.cloud, fleets[w.ref.stack].spec.account)
            for w in multikueue.resolve_workers(manager.spec, fleets)
            if (w.ref.stack, w.ref.cluster) != (stack, spec.name)]


def sibling_stacks(fleets: Mapping[str, Fleet]) -> set[str]:
    """The stacks of the workers of the managers among ``fleets`` (a worker reads its peers' files through them)."""
    return {w.stack for fleet in fleets.values() for c in fleet.clusters if c.spec.is_manager
            for w in c.spec.multikueue.workers}  # type: ignore[union-attr]


def replicates(spec: ClusterSpec, found: list[Peer]) -> bool:
    """This worker copies its checkpoints to its peers (``check`` refuses a peer without a checkpoint bucket)."""
    return spec.storage.lustre is not None and bool(found)


def _problems(stack: str, spec: ClusterSpec, path: str, found: list[Peer]) -> Iterator[SpecProblem]:
    mine, theirs = spec.storage.lustre, [p for p in found if p.cluster.spec.storage.lustre is not None]
    if mine is None:
        if not theirs:
            return  # no worker of the fleet queue keeps checkpoints: nothing to replicate
        yield SpecProblem(f"{path}.storage.lustre", f"is not set, but the other workers of this fleet queue "
                          f"({', '.join(p.name for p in theirs)}) keep checkpoints: a job evicted there and "
                          "dispatched here could not resume, and this worker's checkpoints could not reach them.",
                          "Give this worker Lustre linked to a checkpoint bucket (docs/fleet-queue.md "
                          "\"Recovery across clusters\").")
        return
    if not mine.checkpoint_sync.enabled and found:
        yield SpecProblem(f"{path}.storage.lustre.checkpoint_sync.enabled", "is false, but this worker's checkpoints "
                          f"are replicated to its fleet queue's other workers ({', '.join(p.name for p in found)}) "
                          "by the checkpoint sync.", "Set it to true (or take this cluster out of the fleet queue).")
    for peer in found:
        other = peer.cluster.spec.storage.lustre
        at = f"{path}.multikueue.manager"
        if other is None:
            yield SpecProblem(at, f"the fleet queue's worker {peer.name} has no checkpoint bucket "
                              f"(storage.lustre in {stack_file(peer.stack)}) to replicate this worker's "
                              "checkpoints to.", f"Give {peer.cluster.name} in {stack_file(peer.stack)} Lustre "
                              "linked to a checkpoint bucket.")
        elif other.export_path.strip("/") != mine.export_path.strip("/"):
            yield SpecProblem(f"{path}.storage.lustre.export_path", f"is {mine.export_path!r}, but worker "
                              f"{peer.name}'s is {other.export_path!r}: a job dispatched there would not find its "
                              "checkpoints at its path.", f"Use one export path on every worker of the fleet queue "
                              f"(this one and {stack_file(peer.stack)}).")


def _shared_account(cloud: Cloud, account: str | None, path: str, found: list[Peer]) -> Iterator[SpecProblem]:
    """AWS: IAM has one OIDC provider per issuer URL per account, and each worker creates one for every peer's
    issuer, so two EKS workers of one account with a third peer would both create the third's."""
    same = [p for p in found if cloud is Cloud.AWS and p.cloud is Cloud.AWS and account and p.account == account]
    if same and len(found) > 1:
        yield SpecProblem(f"{path}.multikueue.manager", f"the fleet queue's worker {same[0].name} is in this "
                          f"worker's AWS account ({account}): both would create the IAM OIDC provider of their "
                          "other peers' issuers, which IAM allows once per account.",
                          "Put the EKS workers of one fleet queue in different AWS accounts.")


def check(stack: str, fleet: Fleet, fleets: Mapping[str, Fleet]) -> list[SpecProblem]:
    """Every problem of this stack's workers with replicating checkpoints to their peers (``fleets``: the stacks
    they name and their peers', by name)."""
    out = []
    for i, c in enumerate(fleet.clusters):
        if multikueue.is_worker(c.spec):
            found = peers(stack, c.spec, fleets)
            out += [*_problems(stack, c.spec, f"clusters[{i}]", found),
                    *_shared_account(fleet.cloud, fleet.spec.account, f"clusters[{i}]", found)]
    return out
