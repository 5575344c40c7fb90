"""GPU disruption risk: the changes that replace, roll or drain GPU node pools, or replace or delete Lustre file
systems and checkpoint buckets, with the GPUs affected and what happens to running jobs and data.

Ordered most disruptive first: replacements and deletions, then rolls, then drains (scale-downs), then changes
whose replacement behaviour is unknown; within each, GPU pools before Lustre before buckets, most GPUs first.
A launch template change that makes a new version rolls the EKS node groups that use it (they track its latest
version); a replaced launch template replaces them.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet.review.cost import read_pool
from gpufleet.review.diff import Change, Op, StackDiff
from gpufleet.review.replacements import Effect
from policies.props import BUCKETS, LAUNCH_TEMPLATE, LUSTRES, NODE_POOLS, NodePool, node_pool

_ACTIONS = {"replace": 0, "delete": 0, "roll": 1, "drain": 2, "unknown": 3}
_KINDS = {"gpu_pool": 0, "lustre": 1, "bucket": 2}
_IMPACT = {
    ("gpu_pool", "replace"): "every node is terminated at once and a new pool created: running jobs are killed; "
                             "capacity (reservations, capacity blocks) must be available again for the new pool",
    ("gpu_pool", "delete"): "every node is terminated: running jobs are killed and the GPUs are released",
    ("gpu_pool", "roll"): "every node is cordoned, drained and recreated a few at a time: a multi-node job loses "
                          "a rank and fails; with a fully used reservation the surge nodes may not launch",
    ("gpu_pool", "drain"): "the removed nodes are drained: jobs on them are evicted",
    ("gpu_pool", "unknown"): "the change is not in the replacement table: check the provider's docs; it may "
                             "replace the pool and kill running jobs",
    ("lustre", "replace"): "a new, empty file system: data not yet exported to the bucket is lost and every pod "
                           "mounting it fails until remounted",
    ("lustre", "delete"): "the file system and data not yet exported to the bucket are lost",
    ("lustre", "unknown"): "not in the replacement table: may recreate the file system (data loss)",
    ("bucket", "replace"): "a new, empty bucket: checkpoints and datasets stay behind in the old bucket (or are "
                           "lost with it); jobs resume from nothing",
    ("bucket", "delete"): "the checkpoints in this bucket are deleted with it (or the delete fails if not empty)",
    ("bucket", "unknown"): "not in the replacement table: may recreate the bucket",
}


@dataclass(frozen=True)
class Risk:
    stack: str
    resource: str  # type::name
    kind: str  # gpu_pool | lustre | bucket
    action: str  # replace | delete | roll | drain | unknown
    gpus: int
    gpu: str
    cause: str
    impact: str

    @property
    def headline(self) -> str:
        what = {"replace": "replaces", "delete": "deletes", "roll": "rolls", "drain": "drains",
                "unknown": "may replace"}[self.action]
        name = self.resource.split("::", 1)[-1]
        if self.kind == "gpu_pool":
            return f"{self.stack}: {what} {self.gpus:,} {self.gpu} GPUs ({name})"
        return f"{self.stack}: {what} {'Lustre file system' if self.kind == 'lustre' else 'bucket'} {name}"

    def sort_key(self) -> tuple[int, int, int, str, str]:
        return (_ACTIONS[self.action], _KINDS[self.kind], -self.gpus, self.stack, self.resource)


def _pool(change: Change) -> NodePool | None:
    """The GPU pool before the change (after it, for a create); None for CPU pools and unreadable ones."""
    for r in (change.old, change.new):
        pool = read_pool(r.type, r.inputs)[0] if r is not None else None
        if pool is not None:
            return pool if pool.is_gpu else None
    return None


def _kind(type_: str) -> str | None:
    kinds = {**dict.fromkeys(NODE_POOLS, "gpu_pool"), **dict.fromkeys(LUSTRES, "lustre"),
             **dict.fromkeys(BUCKETS, "bucket")}
    return kinds.get(type_)


def _cause(change: Change, effects: tuple[Effect, ...]) -> str:
    paths = [p.path for p in change.paths if p.effect in effects]
    return ", ".join(paths) if paths else change.op.value


def _action(change: Change) -> tuple[str, str] | None:
    if change.op in (Op.REPLACE, Op.DELETE):
        return change.op.value, _cause(change, (Effect.REPLACE,))
    if change.rolls:
        return "roll", _cause(change, (Effect.ROLL,))
    if change.replacement_unknown:
        return "unknown", _cause(change, (Effect.UNKNOWN,))
    return None


def _template_actions(diff: StackDiff) -> dict[str, tuple[str, str]]:
    """Node group key -> (action, cause) implied by a launch template change it depends on."""
    out: dict[str, tuple[str, str]] = {}
    for t in (c for c in diff.changes if c.type == LAUNCH_TEMPLATE and c.op in (Op.UPDATE, Op.REPLACE)):
        action = "replace" if t.op is Op.REPLACE else "roll" if t.rolls else None
        if action is None:
            continue
        cause = f"launch template {t.name}: {_cause(t, (Effect.REPLACE, Effect.ROLL))}"
        for r in diff.head:
            if r.type in NODE_POOLS and t.key in r.dependencies:
                out[r.key] = (action, cause)
    return out


def risks(diff: StackDiff) -> list[Risk]:
    implied = _template_actions(diff)
    found = []
    for change in diff.changes:
        kind = _kind(change.type)
        if kind is None or change.op is Op.CREATE:
            continue
        pool = _pool(change) if kind == "gpu_pool" else None
        if kind == "gpu_pool" and pool is None:
            continue  # CPU system pools are not GPU disruption
        action, via_template = _action(change), implied.pop(change.key, None)
        if via_template and (action is None or _ACTIONS[via_template[0]] < _ACTIONS[action[0]]):
            action = via_template
        if action is None and pool is not None:
            action = _drain(change, pool)
        if action is None:
            continue
        found.append(_risk(diff.stack, change.key, kind, action, pool, change))
    base = {r.key: r for r in diff.base}
    for key, action in implied.items():  # pools whose own inputs did not change
        pool = node_pool(base[key].type, base[key].inputs) if key in base else None
        if pool is not None and pool.is_gpu:
            found.append(_risk(diff.stack, key, "gpu_pool", action, pool, None))
    return sorted(found, key=Risk.sort_key)


def _drain(change: Change, pool: NodePool) -> tuple[str, str] | None:
    new, hidden = read_pool(change.new.type, change.new.inputs) if change.new is not None else (None, "")
    if hidden:
        return "unknown", f"the new machine type or size is {hidden} until apply"
    if new is not None and new.max_nodes < pool.max_nodes:
        return "drain", f"max nodes {pool.max_nodes} -> {new.max_nodes}"
    return None


def _risk(stack: str, key: str, kind: str, action: tuple[str, str], pool: NodePool | None,
          change: Change | None) -> Risk:
    gpus, model = 0, ""
    if pool is not None:
        model = pool.machine.gpu if pool.machine else ""
        gpus = pool.max_nodes * pool.gpus_per_node
        if action[0] == "drain" and change is not None and change.new is not None:
            new = read_pool(change.new.type, change.new.inputs)[0]
            gpus = (pool.max_nodes - (new.max_nodes if new else 0)) * pool.gpus_per_node
    return Risk(stack, key, kind, action[0], gpus, model, action[1], _IMPACT.get((kind, action[0]), ""))
