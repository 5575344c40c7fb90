"""Validate a custom resource against its CRD digest, the way the API server would: the apiVersion must be a
served version; structural schemas prune (drop) fields they do not declare unless a level preserves unknown
fields, so an unknown field here is an error (it would be silently lost); types, enums, bounds and required
fields as declared."""

from __future__ import annotations

import re
from typing import Any

from components.k8s import upstream

_TYPES: dict[str, tuple[type, ...]] = {"object": (dict,), "array": (list,), "string": (str,),
                                        "integer": (int,), "number": (int, float), "boolean": (bool,)}


def _type_ok(value: Any, node: dict[str, Any]) -> bool:
    if node.get("intOrString"):
        return isinstance(value, (int, str)) and not isinstance(value, bool)
    wanted = node.get("type")
    if wanted is None:
        return True
    if isinstance(value, bool) and wanted != "boolean":
        return False
    return isinstance(value, _TYPES[wanted])


def _python_pattern(pattern: str) -> str:
    """A CRD pattern (Go RE2) for Python's re, which wants global flags such as RE2's ``^(?i)...`` first."""
    found = re.match(r"^\^(\(\?[a-zA-Z]+\))", pattern)
    return found[1] + "^" + pattern[found.end():] if found else pattern


def _bounds(value: Any, node: dict[str, Any], where: str) -> list[str]:
    out = []
    if "enum" in node and value not in node["enum"]:
        out.append(f"{where}: {value!r} is not one of {node['enum']}")
    if isinstance(value, str):
        if "pattern" in node and not re.search(_python_pattern(node["pattern"]), value):
            out.append(f"{where}: {value!r} does not match {node['pattern']}")
        if len(value) > node.get("maxLength", len(value)) or len(value) < node.get("minLength", 0):
            out.append(f"{where}: length {len(value)} outside [{node.get('minLength', 0)}, {node.get('maxLength')}]")
    if isinstance(value, list) and not node.get("minItems", 0) <= len(value) <= node.get("maxItems", len(value)):
        out.append(f"{where}: {len(value)} items outside [{node.get('minItems', 0)}, {node.get('maxItems')}]")
    if isinstance(value, dict) and len(value) > node.get("maxProperties", len(value)):
        out.append(f"{where}: {len(value)} entries, at most {node['maxProperties']}")
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if number and (value > node.get("maximum", value) or value < node.get("minimum", value)):
        out.append(f"{where}: {value} outside [{node.get('minimum')}, {node.get('maximum')}]")
    return out


class _Walker:
    def __init__(self, fields: dict[str, dict[str, Any]], opaque: frozenset[str]):
        self.fields = fields
        self.opaque = opaque

    def walk(self, value: Any, path: str, where: str) -> list[str]:
        node = self.fields.get(path, {}) if path else {"type": "object"}
        if isinstance(value, str) and value in self.opaque:
            return []  # a value Pulumi only knows at apply time
        if value is None:
            return [] if node.get("nullable") else [f"{where}: null is not allowed"]
        if not _type_ok(value, node):
            return [f"{where}: {type(value).__name__} where the CRD wants {node.get('type', 'int-or-string')}"]
        out = _bounds(value, node, where)
        if isinstance(value, dict) and not node.get("intOrString"):
            out += [f"{where}: required field {r!r} missing" for r in node.get("required", []) if r not in value]
            for key, child in value.items():
                sub = f"{path}.{key}" if path else key
                if sub in self.fields:
                    out += self.walk(child, sub, f"{where}.{key}" if where else key)
                elif f"{path}{{}}" in self.fields:
                    out += self.walk(child, f"{path}{{}}", f"{where}.{key}")
                elif not (node.get("preserve") or node.get("embedded")):
                    out.append(f"{where + '.' if where else ''}{key}: unknown field (the CRD declares "
                               f"{sorted(k.rsplit('.', 1)[-1] for k in self._children(path)) or 'no fields'} here;"
                               " the API server would drop it)")
        if isinstance(value, list) and f"{path}[]" in self.fields:
            for i, item in enumerate(value):
                out += self.walk(item, f"{path}[]", f"{where}[{i}]")
        return out

    def _children(self, path: str) -> list[str]:
        prefix = f"{path}." if path else ""
        return [k for k in self.fields if k.startswith(prefix) and "." not in k[len(prefix):]
                and "[" not in k[len(prefix):] and "{" not in k[len(prefix):]]


def problems(obj: dict[str, Any], opaque: frozenset[str] = frozenset()) -> list[str]:
    """What the API server would refuse or drop in ``obj`` (empty when it is valid for its CRD digest)."""
    group, _, version = obj.get("apiVersion", "").rpartition("/")
    key = f"{group}/{obj.get('kind')}"
    crd = upstream.crds().get(key)
    name = (obj.get("metadata") or {}).get("name")
    if crd is None:
        return [f"{key}: no CRD digest for this kind: add its CRD file to a pin in {upstream.PINS.name} and run "
                "scripts/refresh_upstream.py"]
    if version not in crd["served"]:
        return [f"{key} {name}: apiVersion {obj['apiVersion']} is not served by {crd['pin']} "
                f"(served: {', '.join(f'{group}/{v}' for v in crd['served'])})"]
    out = [] if name else [f"{key}: metadata.name is required"]
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    return out + [f"{key} {name}: {p}" for p in _Walker(crd["fields"][version], opaque).walk(body, "", "")]
