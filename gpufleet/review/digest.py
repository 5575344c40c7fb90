"""The real engine's `pulumi preview --json` document (a PreviewDigest) -> the same StackDiff as the offline path.

Shape (pulumi/pulumi sdk/go/pkg/display, ``PreviewDigest`` / ``PreviewStep`` / ``PreviewDiagnostic``), checked field
for field against outputs the CLI printed, v3.229.0 and v3.263.0 (robbeverhelst/sluiceway
test/fixtures/pulumi/<version>/{deploy,nested-paths,resource-error,program-exception}/preview.stdout, recorded with
``pulumi preview --json --non-interactive --color never``): ``{"config", "steps": [{"op", "urn", "provider",
"oldState", "newState", "diffReasons", "replaceReasons", "detailedDiff": {path: {"kind", "inputDiff"}}}],
"diagnostics": [{"urn"?, "message", "severity"}], "duration", "changeSummary"}``. States are ``apitype.ResourceV3``
(``urn``, ``custom``, ``id``, ``delete``, ``type``, ``inputs``, ``outputs``, ``parent``, ``provider``,
``dependencies``, ``propertyDependencies``, ``created``, ``modified``, ``sourcePosition``, ``stackTrace``). Observed:
a diagnostic has no ``prefix``; its message starts with ``error: `` (or ``warning: ``) and ends with a newline,
and a failed program's has no ``urn``; secrets (config and inputs) are the string ``[secret]``; by default a
replacement is ONE ``replace`` step carrying ``oldState`` (``delete: true``) and ``newState``, with
``replaceReasons`` / ``detailedDiff`` (``update-replace``); ``--show-replacement-steps`` splits it into
``create-replacement``, ``replace``, ``delete-replaced``. Step ops are apitype.OpType: same, create, update, delete,
replace, create-replacement, delete-replaced, read, read-replacement, refresh, discard, discard-replaced,
remove-pending-replace, import, import-replacement.

The engine is authoritative here: a path it lists in ``replaceReasons`` is a replacement whatever the table says,
and an ``update`` step is never a replacement. The table still tells which in-place updates roll nodes; a path
the table does not know on a GPU pool, Lustre file system, bucket or launch template stays unknown (a risk).
Unknown values (computed at apply) and secrets are masked as ``[unknown]`` / ``[secret]``, never read as values.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from gpufleet.engine.capture import Resource, plain, provider_key, urn_key
from gpufleet.review.diff import Change, Op, StackDiff, changed_paths, sort_changes
from gpufleet.review.replacements import Effect, PathEffect, classify, get_path, normalise
from policies.props import BUCKETS, LAUNCH_TEMPLATE, LUSTRES, NODE_POOLS

# op -> the row it makes (None: no row of its own, e.g. the halves of a replacement)
_ROWS = {"create": Op.CREATE, "delete": Op.DELETE, "update": Op.UPDATE, "replace": Op.REPLACE, "import": Op.IMPORT,
         "import-replacement": None, "read": Op.READ, "read-replacement": Op.READ, "discard": Op.DISCARD,
         "discard-replaced": None, "refresh": Op.REFRESH, "same": None, "create-replacement": None,
         "delete-replaced": None, "remove-pending-replace": None}
_IN_BASE = {"same", "update", "replace", "delete", "delete-replaced", "import", "import-replacement", "refresh"}
_IN_HEAD = {"same", "create", "update", "replace", "create-replacement", "import", "import-replacement"}
_RISKY = {*NODE_POOLS, *LUSTRES, *BUCKETS, LAUNCH_TEMPLATE}
_ANSI = re.compile(r"\x1b\[[0-9;]*m|<\{%[a-z]+%\}>")  # terminal colours, and the CLI's own colour tags
ENGINE = "pulumi preview (the provider's diff)"


def _resource(state: Mapping[str, Any]) -> Resource:
    parent = state.get("parent") or None
    parent_key = urn_key(parent) if parent else None
    if parent_key and parent_key.startswith("pulumi:pulumi:Stack::"):
        parent_key = None
    return Resource(type=state["type"], name=state["urn"].rsplit("::", 1)[-1], parent=parent_key,
                    custom=bool(state.get("custom", False)), inputs=plain(dict(state.get("inputs") or {})),
                    dependencies=sorted(urn_key(u) for u in state.get("dependencies") or []),
                    provider=provider_key(str(state.get("provider") or "")), protect=bool(state.get("protect")))


def stack_of(digest: Mapping[str, Any]) -> str:
    for step in digest.get("steps") or []:
        return str(step["urn"]).split("::", 1)[0].removeprefix("urn:pulumi:")
    for d in digest.get("diagnostics") or []:
        if d.get("urn"):
            return str(d["urn"]).split("::", 1)[0].removeprefix("urn:pulumi:")
    return "unknown"


def _paths(step: Mapping[str, Any], op: Op, old: Resource | None, new: Resource | None) -> list[PathEffect]:
    replace = set(step.get("replaceReasons") or []) if op is Op.REPLACE else set()
    keys = list(step.get("detailedDiff") or {}) or list(step.get("diffReasons") or []) or sorted(replace)
    type_ = step_type(step)
    out = []
    for path in keys:
        kind = str((step.get("detailedDiff") or {}).get(path, {}).get("kind", ""))
        if path in replace or path.split(".")[0].split("[")[0] in replace or kind.endswith("-replace"):
            out.append(PathEffect(path, Effect.REPLACE, ENGINE))
            continue
        found = classify(type_, path, get_path(old.inputs if old else {}, path),
                         get_path(new.inputs if new else {}, path))
        if found.effect is Effect.UNKNOWN and type_ in _RISKY:
            out.append(found)  # not a replacement (the engine said so), but nodes or data may still be recreated
        elif found.effect not in (Effect.ROLL, Effect.IN_PLACE):
            out.append(PathEffect(path, Effect.IN_PLACE, ENGINE))
        else:
            out.append(found)
    return out


def step_type(step: Mapping[str, Any]) -> str:
    state = step.get("newState") or step.get("oldState") or {}
    return str(state.get("type") or urn_key(step["urn"]).split("::")[0])


def _diagnostics(digest: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(errors, warnings) the engine reported, one line each, with the resource name when there is one."""
    found: dict[str, list[str]] = {"error": [], "warning": []}
    for d in digest.get("diagnostics") or []:
        severity = str(d.get("severity", ""))
        if severity not in found:
            continue
        text = " ".join(_ANSI.sub("", str(d.get("message", ""))).split())
        text = text.removeprefix(f"{severity}: ")  # the CLI (v3.229, v3.263) starts the message with it already
        where = str(d["urn"]).rsplit("::", 1)[-1] if d.get("urn") else ""
        found[severity].append(f"{severity}: {where + ': ' if where else ''}{text}")
    return found["error"], found["warning"]


def policy_config_of(digest: Mapping[str, Any]) -> dict[str, Any] | None:
    """The fleet's policy config from the digest's stack config (``gpufleet:fleet``); None when absent or secret."""
    from components.errors import SpecError
    from components.validate import resolve
    from gpufleet.checks.analyzer import fleet_config

    raw = (digest.get("config") or {}).get("gpufleet:fleet")
    try:
        fleet = json.loads(raw) if isinstance(raw, str) else raw
        return fleet_config(resolve(fleet, "the preview's gpufleet:fleet")) if isinstance(fleet, dict) else None
    except (ValueError, SpecError):
        return None


def _drift(old: Resource, new: Resource) -> set[str]:
    return {normalise(p) for p in changed_paths(old.inputs, new.inputs)}


def diff_digest(digest: Any) -> StackDiff:
    if not isinstance(digest, Mapping) or "steps" not in digest or not isinstance(digest["steps"], list | None):
        raise ValueError("not a `pulumi preview --json` document (a PreviewDigest with a 'steps' list); other JSON "
                         "(`pulumi stack output --json`, `pulumi stack export`, a gpufleet preview) is refused. Make "
                         "one with `pulumi preview --json --diff --show-sames > preview.json`")
    stack = stack_of(digest)
    problems, warnings = _diagnostics(digest)
    if problems:  # a failed preview: its steps stop where the engine stopped, so they are no diff
        return StackDiff(stack, [], [], [], source="pulumi-preview", problems=problems, warnings=warnings,
                         policy_config=policy_config_of(digest))
    base: dict[str, Resource] = {}
    head: dict[str, Resource] = {}
    drifted: dict[str, set[str]] = {}
    changes = []
    steps = digest.get("steps") or []
    for step in steps:
        name = step["op"]
        old = _resource(step["oldState"]) if step.get("oldState") else None
        new = _resource(step["newState"]) if step.get("newState") else None
        if name == "refresh":
            if new is not None:
                base[new.key] = new  # the cloud as it is now
        elif old is not None and name in _IN_BASE:
            base[old.key] = old
        if name in ("import", "import-replacement") and new is not None and old is None:
            base[new.key] = new  # it existed (unmanaged) before: importing moves no cost
        if new is not None and name in _IN_HEAD:
            head[new.key] = new
        op = _ROWS.get(name)
        either = new or old
        if op is None or either is None or not either.custom or either.type.startswith("pulumi:pulumi:"):
            continue
        if op is Op.REFRESH:
            paths = _drift(old, new) if old and new else set()
            if not paths:
                continue
            drifted[either.key] = paths
            changes.append(Change(either.key, either.type, either.name, op,
                                  [PathEffect(p, Effect.IN_PLACE, ENGINE, "changed in the cloud since the last "
                                              "deployment") for p in sorted(paths)], old, new, "cloud drift", True))
            continue
        paths = _paths(step, op, old, new) if op in (Op.UPDATE, Op.REPLACE) else []
        note = ""
        if op is Op.UPDATE and either.key in drifted and paths and \
                {normalise(p.path) for p in paths} <= drifted[either.key]:
            note = "reverts drift found by --refresh"
        changes.append(Change(either.key, either.type, either.name, op, paths, old, new, note, True))
    # Without --show-sames the CLI lists no unchanged resource but the root stack (ShowPreviewDigest: a step is listed
    # when shouldShow or isRootStack), while changeSummary still counts them all; `refresh` steps of unchanged
    # resources count as `same` there too.
    listed = sum(s.get("op") in ("same", "refresh") for s in steps)
    partial = int((digest.get("changeSummary") or {}).get("same") or 0) > listed
    return StackDiff(stack, sort_changes(changes), list(base.values()), list(head.values()), source="pulumi-preview",
                     warnings=warnings, partial=partial, policy_config=policy_config_of(digest))
