"""Upstream truth for the in-cluster layer: the pins table (``pins.yaml``) and the facts
``scripts/refresh_upstream.py`` derived from each pinned upstream release (``digests/<pin>.json``).

The charts module builds its Helm charts from the pins; tests hold every rendered custom resource, Helm values
tree and GKE installer to the digests. docs/addons.md ("Upstream pins and digests") says how to add or bump one.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).parent
PINS = HERE / "pins.yaml"
DIGESTS = HERE / "digests"


@cache
def pins() -> dict[str, dict[str, Any]]:
    """Every pin row by name, as written in pins.yaml."""
    return dict(yaml.safe_load(PINS.read_text()))


def pin(name: str) -> dict[str, Any]:
    rows = pins()
    if name not in rows:
        raise KeyError(f"no upstream pin named {name!r} in {PINS}; known: {', '.join(sorted(rows))}")
    return rows[name]


def digest_path(name: str) -> Path:
    return DIGESTS / f"{name}.json"


@cache
def digest(name: str) -> dict[str, Any]:
    """The facts derived from pin ``name``'s upstream files (run scripts/refresh_upstream.py when missing)."""
    path = digest_path(name)
    if not path.exists():
        raise FileNotFoundError(f"no digest for upstream pin {name!r} ({path}): run "
                                f"`python scripts/refresh_upstream.py {name}`")
    return dict(json.loads(path.read_text()))


@cache
def crds() -> dict[str, dict[str, Any]]:
    """``group/Kind`` -> CRD facts (served versions, flattened schema per version), over every digest."""
    out: dict[str, dict[str, Any]] = {}
    for name in pins():
        if digest_path(name).exists():
            for key, facts in digest(name).get("crds", {}).items():
                out[key] = {**facts, "pin": name}
    return out


def manifest(pin_name: str, key: str) -> dict[str, Any]:
    """The digested facts of one manifest file of a pin (its objects, workloads or the files a script applies)."""
    manifests = digest(pin_name).get("manifests", {})
    if key not in manifests:
        raise KeyError(f"upstream pin {pin_name!r} digests no manifest {key!r}; known: {', '.join(sorted(manifests))}")
    return dict(manifests[key])
