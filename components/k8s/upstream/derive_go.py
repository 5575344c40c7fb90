"""Facts from Go sources that are neither constants nor structs: Kubernetes-style versioned feature gates."""

from __future__ import annotations

import re
from typing import Any

_GATE = re.compile(r"^\t(\w+): \{\n(.*?)\n\t\},", re.S | re.M)
_SPEC = re.compile(r'\{Version: version\.MustParse\("([^"]+)"\), Default: (true|false), PreRelease: featuregate\.(\w+)'
                   r'(?:, LockToDefault: (true|false))?\}')


def feature_gates(text: str, wanted: list[str]) -> dict[str, list[dict[str, Any]]]:
    """``{gate: [{version, default, stage, locked}]}`` from a ``map[featuregate.Feature]featuregate.VersionedSpecs``
    literal (k8s.io/component-base's versioned gates): the history of each wanted gate, oldest first."""
    gates = {m[1]: [{"version": v, "default": d == "true", "stage": stage, "locked": lock == "true"}
                    for v, d, stage, lock in _SPEC.findall(m[2])] for m in _GATE.finditer(text)}
    missing = [g for g in wanted if not gates.get(g)]
    if missing:
        raise KeyError(f"no versioned feature gate {', '.join(missing)} in the Go file")
    return {g: gates[g] for g in wanted}


def gate_at(history: list[dict[str, Any]], release: str) -> dict[str, Any]:
    """The spec in force at ``release`` (major.minor): the newest entry whose version is not after it."""
    def key(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in v.lstrip("v").split(".")[:2])
    return max((h for h in history if key(h["version"]) <= key(release)), key=lambda h: key(h["version"]))


# controller-runtime client calls a MultiKueue adapter makes on the worker, as RBAC verbs
_REMOTE_CALL = re.compile(r"\bremoteClient\.(Get|Create|Delete|Update|Patch|List)\(")
_WATCHER = re.compile(r"\bjobframework\.MultiKueueWatcher\b")


def remote_verbs(text: str, frameworks: list[str]) -> dict[str, Any]:
    """``{frameworks, verbs}`` of one MultiKueue adapter (pkg/controller/jobs/*/..._multikueue_adapter.go): the
    calls it makes through the worker's client (``remoteClient.Get`` -> get, ...), plus list and watch when it is a
    ``jobframework.MultiKueueWatcher`` (the manager watches that kind on every worker)."""
    verbs = {call.lower() for call in _REMOTE_CALL.findall(text)}
    if _WATCHER.search(text):
        verbs |= {"list", "watch"}
    if not verbs:
        raise KeyError(f"{', '.join(frameworks)}: no remoteClient call in the adapter source")
    return {"frameworks": list(frameworks), "verbs": sorted(verbs)}
