"""The real engine's `pulumi preview --json` document (a PreviewDigest) -> the same StackDiff as the offline path.

Shape (pulumi/pulumi pkg/display/json.go, ``PreviewDigest`` / ``PreviewStep``): ``{"config", "steps": [{"op",
"urn", "provider", "oldState", "newState", "diffReasons", "replaceReasons", "detailedDiff": {path: {"kind",
"inputDiff"}}}], "diagnostics", "changeSummary", "duration"}``; states are ``apitype.ResourceV3`` (``urn``,
``type``, ``custom``, ``inputs``, ``outputs``, ``parent``, ``dependencies``). A replacement appears as three steps
(``create-replacement``, ``replace``, ``delete-replaced``); the ``replace`` step carries the reasons.

The engine is authoritative here: a path it lists in ``replaceReasons`` is a replacement whatever the table says,
and an ``update`` step is never a replacement. The table still tells which in-place updates roll nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpufleet.capture import Resource, urn_key
from gpufleet.diff import Change, Op, StackDiff, sort_changes
from gpufleet.replacements import Effect, PathEffect, classify, get_path

_OPS = {"create": Op.CREATE, "delete": Op.DELETE, "update": Op.UPDATE, "replace": Op.REPLACE}
ENGINE = "pulumi preview (the provider's diff)"


def _resource(state: Mapping[str, Any]) -> Resource:
    parent = state.get("parent") or None
    parent_key = urn_key(parent) if parent else None
    if parent_key and parent_key.startswith("pulumi:pulumi:Stack::"):
        parent_key = None
    return Resource(type=state["type"], name=state["urn"].rsplit("::", 1)[-1], parent=parent_key,
                    custom=bool(state.get("custom", False)), inputs=dict(state.get("inputs") or {}),
                    dependencies=sorted(urn_key(u) for u in state.get("dependencies") or []))


def stack_of(digest: Mapping[str, Any]) -> str:
    for step in digest.get("steps") or []:
        return str(step["urn"]).split("::", 1)[0].removeprefix("urn:pulumi:")
    return "unknown"


def _paths(step: Mapping[str, Any], op: Op, old: Resource | None, new: Resource | None) -> list[PathEffect]:
    replace = set(step.get("replaceReasons") or []) if op is Op.REPLACE else set()
    keys = list(step.get("detailedDiff") or {}) or list(step.get("diffReasons") or []) or sorted(replace)
    out = []
    for path in keys:
        kind = str((step.get("detailedDiff") or {}).get(path, {}).get("kind", ""))
        if path in replace or path.split(".")[0].split("[")[0] in replace or kind.endswith("-replace"):
            out.append(PathEffect(path, Effect.REPLACE, ENGINE))
            continue
        found = classify(step_type(step), path, get_path(old.inputs if old else {}, path),
                         get_path(new.inputs if new else {}, path))
        if found.effect not in (Effect.ROLL, Effect.IN_PLACE):  # the engine said: no replacement
            found = PathEffect(path, Effect.IN_PLACE, ENGINE)
        out.append(found)
    return out


def step_type(step: Mapping[str, Any]) -> str:
    state = step.get("newState") or step.get("oldState") or {}
    return str(state.get("type") or urn_key(step["urn"]).split("::")[0])


def diff_digest(digest: Mapping[str, Any]) -> StackDiff:
    if not isinstance(digest, Mapping) or not isinstance(digest.get("steps", []), list):
        raise ValueError("not a `pulumi preview --json` document: expected an object with a 'steps' list")
    base: dict[str, Resource] = {}
    head: dict[str, Resource] = {}
    changes = []
    for step in digest.get("steps") or []:
        old = _resource(step["oldState"]) if step.get("oldState") else None
        new = _resource(step["newState"]) if step.get("newState") else None
        if old and not step["op"].startswith("create"):
            base[old.key] = old
        if new and step["op"] not in ("delete", "delete-replaced", "discard"):
            head[new.key] = new
        op = _OPS.get(step["op"])
        either = new or old
        if op is None or either is None or not either.custom or either.type.startswith("pulumi:pulumi:"):
            continue
        changes.append(Change(either.key, either.type, either.name, op, _paths(step, op, old, new), old, new))
    return StackDiff(stack_of(digest), sort_changes(changes), list(base.values()), list(head.values()),
                     source="pulumi-preview")
