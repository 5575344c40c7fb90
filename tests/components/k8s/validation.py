"""Validation of rendered objects: core kinds with kubernetes-validate (strict, the cluster's version), custom
resources against the CRD digests derived from the pinned upstream releases (components/k8s/upstream)."""

from __future__ import annotations

from typing import Any

import kubernetes_validate

from components.k8s.upstream.crd import problems
from gpufleet.engine.capture import SECRET_MASK, UNKNOWN_MASK

CORE_GROUPS = ("v1", "apps/v1", "batch/v1", "storage.k8s.io/v1", "scheduling.k8s.io/v1", "rbac.authorization.k8s.io/v1")


def validate(obj: dict[str, Any], kubernetes_version: str) -> None:
    """Raise if the object is not valid for its kind."""
    if obj["kind"] == "Secret":  # pulumi_kubernetes wraps a Secret's data and stringData in Output.secret (its
        # core/v1/secret.py), so the preview masks each map whole: validate the rest
        obj = {k: v for k, v in obj.items() if not (k in ("data", "stringData") and v == SECRET_MASK)}
    if obj["apiVersion"] in CORE_GROUPS:
        kubernetes_validate.validate(obj, f"{kubernetes_version}.0", strict=True)
        return
    found = problems(obj, frozenset({UNKNOWN_MASK, SECRET_MASK}))
    assert not found, "; ".join(found)
