"""What a change cannot apply as written, said before the diff (gpufleet.review.gate blocks on it, exit 3).

- A replacement or deletion of a resource with the ``protect`` option: the engine stops ``pulumi up`` there.
- A replacement of a resource the cloud never deletes (GCP KMS key rings and keys): even unprotected, the old one
  stays and the new name must differ.
- A pool whose machine type changes while it keeps its reservation or capacity block: a Capacity Block, an
  On-Demand Capacity Reservation, a GCP specific reservation and an Azure capacity reservation each hold one
  machine type, so the new nodes would find no capacity there.
Each reason names the resource and the way out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gpufleet.engine.capture import Resource
from gpufleet.review.diff import Op, StackDiff
from gpufleet.review.replacements import Effect
from policies.props import (
    AKS_AGENT_POOL,
    AKS_RESERVATION_GROUP,
    EKS_NODE_GROUP,
    GKE_NODE_POOL,
    LAUNCH_TEMPLATE,
    get,
    node_pool,
)

# https://cloud.google.com/kms/docs/faq#cannot_delete: key rings and keys cannot be deleted (only key versions)
NEVER_DELETED = {"gcp:kms/keyRing:KeyRing": "GCP never deletes a KMS key ring",
                 "gcp:kms/cryptoKey:CryptoKey": "GCP never deletes a KMS key (only its versions are destroyed)"}
KMS_FAQ = "https://cloud.google.com/kms/docs/faq#cannot_delete"


def _replaced(op: Op, effects: set[Effect]) -> str:
    """"replace", "may replace" or "" for a change."""
    if op is Op.REPLACE or (op is Op.UPDATE and Effect.REPLACE in effects):
        return "replace"
    return "may replace" if op is Op.UPDATE and Effect.UNKNOWN in effects else ""


def protected(diff: StackDiff) -> list[str]:
    out = []
    for c in diff.changes:
        old = c.old or c.new
        verb = "delete" if c.op is Op.DELETE else _replaced(c.op, c.effects())
        if not verb or old is None:
            continue
        if old.protect:
            out.append(f"{c.name} ({c.type}) is protected, and this change would {verb} it: `pulumi up` stops "
                       "there. Keep the inputs that replace it (location, name), or unprotect it deliberately first")
        elif c.type in NEVER_DELETED and verb != "delete":
            out.append(f"{c.name} ({c.type}): this change would {verb} it, but {NEVER_DELETED[c.type]} ({KMS_FAQ}): "
                       "keep its location and name, or give the new one a new name and drop the old one from the "
                       "stack's state (`pulumi state delete`)")
    return out


def _capacity_id(r: Resource, by_key: Mapping[str, Resource]) -> str:
    if r.type == EKS_NODE_GROUP:
        for d in r.dependencies:
            t = by_key.get(d)
            if t is not None and t.type == LAUNCH_TEMPLATE:
                found = get(t.inputs, "capacityReservationSpecification.capacityReservationTarget."
                                      "capacityReservationId")
                if found:
                    return str(found)
        return ""
    if r.type == AKS_AGENT_POOL:
        return str(get(r.inputs, AKS_RESERVATION_GROUP) or "")
    if r.type == GKE_NODE_POOL:
        values = get(r.inputs, "nodeConfig.reservationAffinity.values") or []
        return ",".join(map(str, values)) if isinstance(values, list) else str(values)
    return ""


def _pools(resources: Sequence[Resource]) -> dict[str, tuple[str, str]]:
    """Pool key -> (machine type, reservation or capacity block id) for pools on a reservation or block."""
    by_key = {r.key: r for r in resources}
    out = {}
    for r in resources:
        pool = node_pool(r.type, r.inputs)
        held = _capacity_id(r, by_key) if pool and pool.machine_types else ""
        if pool and held:
            out[r.key] = (pool.machine_types[0], held)
    return out


def mismatched_capacity(diff: StackDiff) -> list[str]:
    before, after = _pools(diff.base), _pools(diff.head)
    out = []
    for key, (machine, held) in sorted(after.items()):
        old = before.get(key)
        if old and old[1] == held and old[0] != machine:
            out.append(f"{key.split('::')[-1]} changes its machine type {old[0]} -> {machine} but keeps the "
                       f"reservation or capacity block {held}, which holds {old[0]}: buy capacity for {machine} and "
                       f"set its id (capacity.id), or keep {old[0]}")
    return out


def cannot_apply(diff: StackDiff) -> list[str]:
    return [] if diff.failed else protected(diff) + mismatched_capacity(diff)
