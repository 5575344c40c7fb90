"""Validation of rendered objects: core kinds with kubernetes-validate (strict, the cluster's version), custom
resources against the minimal CRD schemas in data/crd_schemas.yaml."""

from __future__ import annotations

from functools import cache
from typing import Any

import jsonschema
import kubernetes_validate

from tests.components.k8s.conftest import crd_schemas

CORE_GROUPS = ("v1", "apps/v1", "batch/v1", "storage.k8s.io/v1", "scheduling.k8s.io/v1")


@cache
def _validator(key: str) -> jsonschema.Draft7Validator:
    schemas = crd_schemas()
    kind = schemas["kinds"][key]
    schema = {"definitions": schemas["definitions"], "type": "object", "required": ["apiVersion", "kind", "metadata"],
              "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                             "metadata": {"$ref": "#/definitions/metadata"}, **kind["properties"]},
              "additionalProperties": False}
    return jsonschema.Draft7Validator(schema)


def validate(obj: dict[str, Any], kubernetes_version: str) -> None:
    """Raise if the object is not valid for its kind."""
    if obj["apiVersion"] in CORE_GROUPS:
        kubernetes_validate.validate(obj, f"{kubernetes_version}.0", strict=True)
        return
    key = f"{obj['apiVersion']}/{obj['kind']}"
    assert key in crd_schemas()["kinds"], f"no CRD schema for {key}: add one to data/crd_schemas.yaml"
    errors = sorted(_validator(key).iter_errors(obj), key=str)
    assert not errors, f"{key} {obj['metadata']['name']}: " + "; ".join(
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors)
