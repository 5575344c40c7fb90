"""Two offline previews (gpufleet.preview/v1) of one stack -> created, deleted, updated and replaced resources.

Resources are matched by ``<type>::<name>`` (a rename is a delete and a create, as the engine sees it without an
Alias). For an update, every changed input path is classified by the sourced table in gpufleet/review/replacements.py;
a path no rule covers makes the change "update (replacement unknown)". Only cloud resources (``custom``) are
compared: gpufleet components register no inputs and are never sent to a cloud.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from gpufleet.engine.capture import Resource
from gpufleet.review.replacements import Effect, PathEffect, classify_all


class Op(StrEnum):
    CREATE = "create"
    DELETE = "delete"
    UPDATE = "update"
    REPLACE = "replace"
    # only from a real `pulumi preview --json` (pulumi/pulumi sdk/go/common/apitype OpType):
    IMPORT = "import"  # an existing cloud resource adopted into the stack (or import-replacement)
    READ = "read"  # an external resource read with .get(): not managed by the stack (or read-replacement)
    DISCARD = "discard"  # a read resource dropped from the state; the cloud resource stays (or discard-replaced)
    REFRESH = "refresh"  # `--refresh` found the cloud state differs from the last deployment (drift)


@dataclass
class Change:
    key: str
    type: str
    name: str
    op: Op
    paths: list[PathEffect] = field(default_factory=list)
    old: Resource | None = None
    new: Resource | None = None
    note: str = ""  # what the engine said beyond the op (e.g. "reverts drift found by --refresh")
    engine: bool = False  # from a real preview: the engine decided replace-or-not; the table only says what rolls

    def effects(self) -> set[Effect]:
        return {p.effect for p in self.paths}

    @property
    def replacement_unknown(self) -> bool:
        return self.op is Op.UPDATE and Effect.UNKNOWN in self.effects()

    @property
    def rolls(self) -> bool:
        return self.op is Op.UPDATE and Effect.ROLL in self.effects()

    @property
    def label(self) -> str:
        if self.replacement_unknown:
            return "update (effect on nodes unknown)" if self.engine else "update (replacement unknown)"
        if self.rolls:
            return "update (rolls nodes)"
        return f"{self.op.value} ({self.note})" if self.note else self.op.value


@dataclass
class StackDiff:
    stack: str
    changes: list[Change]
    base: list[Resource]  # every resource before (for cost and dependency lookups)
    head: list[Resource]
    source: str = "offline"  # or "pulumi-preview"
    problems: list[str] = field(default_factory=list)  # why a side could not be previewed: no diff is shown then
    warnings: list[str] = field(default_factory=list)  # engine warnings (real previews)
    partial: bool = False  # a real preview without --show-sames: unchanged resources are missing
    policy_config: dict[str, Any] | None = None  # the head fleet's policy config (budget, spot pools); None: unknown
    base_policy_config: dict[str, Any] | None = None
    capacity_plan: dict[str, Any] | None = None  # the head's: what the accepted capacity plan costs here a month

    @property
    def failed(self) -> bool:
        return bool(self.problems)

    def counts(self) -> dict[str, int]:
        """Changes by op: the four program ops always, the engine-only ops when present."""
        out = {op.value: 0 for op in (Op.CREATE, Op.DELETE, Op.UPDATE, Op.REPLACE)}
        for c in self.changes:
            out[c.op.value] = out.get(c.op.value, 0) + 1
        return out


PROVIDER_PREFIX = "pulumi:providers:"
PROVIDER_SOURCE = ("https://github.com/pulumi/pulumi/blob/00285a9b6248a4a7606fd8eb3d3485f7c2e5de12/"
                   "pkg/resource/deploy/step_generator.go")
_ORDER = {Op.REPLACE: 0, Op.DELETE: 1, Op.UPDATE: 2, Op.CREATE: 3, Op.IMPORT: 4, Op.READ: 5, Op.DISCARD: 6,
          Op.REFRESH: 7}


def changed_paths(old: Any, new: Any, prefix: str = "") -> list[str]:
    """Dotted input paths whose values differ; lists of equal length are compared item by item (``a[0].b``)."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        out: list[str] = []
        for k in sorted(set(old) | set(new)):
            out += changed_paths(old.get(k), new.get(k), f"{prefix}.{k}" if prefix else str(k))
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new) and old != new:
        out = []
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            out += changed_paths(a, b, f"{prefix}[{i}]")
        return out
    return [] if old == new else [prefix]


def resources_of(document: Mapping[str, Any]) -> list[Resource]:
    return [Resource(type=r["type"], name=r["name"], parent=r.get("parent"), custom=bool(r.get("custom", True)),
                     inputs=r.get("inputs") or {}, dependencies=list(r.get("dependencies") or []),
                     provider=r.get("provider"), protect=bool(r.get("protect", False)))
            for r in document.get("resources", [])]


def sort_changes(changes: Iterable[Change]) -> list[Change]:
    return sorted(changes, key=lambda c: (_ORDER[c.op], c.key))


def diff_resources(stack: str, base: list[Resource], head: list[Resource]) -> StackDiff:
    before = {r.key: r for r in base if r.custom}
    after = {r.key: r for r in head if r.custom}
    changes = [Change(k, r.type, r.name, Op.CREATE, new=r) for k, r in after.items() if k not in before]
    changes += [Change(k, r.type, r.name, Op.DELETE, old=r) for k, r in before.items() if k not in after]
    for key in before.keys() & after.keys():
        old, new = before[key], after[key]
        paths = changed_paths(old.inputs, new.inputs)
        if not paths:
            continue
        effects = classify_all(old.type, paths, old.inputs, new.inputs)
        op = Op.REPLACE if any(e.effect is Effect.REPLACE for e in effects) else Op.UPDATE
        changes.append(Change(key, old.type, old.name, op, effects, old, new))
    return StackDiff(stack, sort_changes(_cascade(changes, before, after)), base, head)


def _cascade(changes: list[Change], before: Mapping[str, Resource], after: Mapping[str, Resource]) -> list[Change]:
    """A replaced provider replaces every resource it manages: the engine's providerChanged / requiresReplacement
    (pulumi/pulumi pkg/resource/deploy/step_generator.go, PROVIDER_SOURCE). A resource moved to another provider
    is left to its own diff."""
    replaced = {c.key for c in changes if c.op is Op.REPLACE and c.type.startswith(PROVIDER_PREFIX)}
    if not replaced:
        return changes
    by_key = {c.key: c for c in changes}
    why = PathEffect("provider", Effect.REPLACE, PROVIDER_SOURCE, "its provider is replaced, and the engine "
                     "replaces every resource a replaced provider manages")
    for key in before.keys() & after.keys():
        old, new = before[key], after[key]
        if new.provider not in replaced or old.provider != new.provider:
            continue
        change = by_key.get(key)
        if change is None:
            changes.append(Change(key, old.type, old.name, Op.REPLACE, [why], old, new))
        elif change.op is Op.UPDATE:
            change.op = Op.REPLACE
            change.paths.append(why)
    return changes


def problems_of(base: Mapping[str, Any], head: Mapping[str, Any]) -> list[str]:
    """Each side's errors (invalid fleet, failed program), labelled with the side."""
    return [f"{side}: {e}" for side, doc in (("head", head), ("base", base)) for e in doc.get("errors") or []]


def diff_documents(base: Mapping[str, Any], head: Mapping[str, Any]) -> StackDiff:
    """Two gpufleet.preview/v1 documents of the same stack. When either side has errors, no change is listed:
    an invalid side has no resources, and comparing against nothing would read as a teardown (or a rebuild)."""
    stack = str(head.get("stack") or base.get("stack"))
    problems = problems_of(base, head)
    if problems:
        found = StackDiff(stack, [], [], [], problems=problems)
    else:
        found = diff_resources(stack, resources_of(base), resources_of(head))
    found.policy_config = head.get("policy_config")
    found.base_policy_config = base.get("policy_config")
    found.capacity_plan = head.get("capacity_plan")
    return found


def documents_by_stack(payload: Any) -> dict[str, dict[str, Any]]:
    """A preview file holds one document or a JSON array of them (``gpufleet preview --all``)."""
    docs = payload if isinstance(payload, list) else [payload]
    bad = [d for d in docs if not isinstance(d, dict) or d.get("schema") != "gpufleet.preview/v1"]
    if bad:
        raise ValueError("not a gpufleet.preview/v1 document (make one with `gpufleet preview --format json`)")
    return {d["stack"]: d for d in docs}


def diff_payloads(base: Any, head: Any) -> list[StackDiff]:
    """Stacks only in one of the files are all-create or all-delete."""
    before, after = documents_by_stack(base), documents_by_stack(head)
    empty: dict[str, Any] = {"resources": []}
    return [diff_documents(before.get(s, {**empty, "stack": s}), after.get(s, {**empty, "stack": s}))
            for s in sorted(before.keys() | after.keys())]
