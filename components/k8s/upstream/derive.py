"""Facts derived from upstream files (pure functions; ``scripts/refresh_upstream.py`` feeds them the files).

What is kept is what the add-on layer is checked against, never the upstream text itself:

- a CRD: its group, kind, served versions and, per served version, the structural schema flattened to field
  paths (``spec.levels[].nodeLabel``; ``[]`` an array's items, ``{}`` a map's values) with each path's type,
  enum, required children, bounds and whether unknown fields are preserved there;
- a Helm chart: its name and version, every key its values.yaml declares, every ``.Values.x.y`` its templates
  read, and the keys that take free-form content (a map / list default, or read whole by a template);
- workload manifests: components/k8s/upstream/derive_manifests.py;
- Go source: the value of each named string constant (a framework name, a label or annotation key), and the JSON
  field names of named structs (a configuration file's schema: ``{fields, inline}``, inline = embedded types).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from typing import Any

import yaml

_SCHEMA_KEYS = ("enum", "pattern", "format", "maxItems", "minItems", "maxLength", "minLength", "maximum", "minimum",
                "maxProperties", "nullable")
_SKIP_ROOT = ("apiVersion", "kind", "metadata")


# ---- CRDs -------------------------------------------------------------------------------------------------------

def _flatten(schema: dict[str, Any], path: str, out: dict[str, dict[str, Any]]) -> None:
    node: dict[str, Any] = {}
    if "type" in schema:
        node["type"] = schema["type"]
    if schema.get("x-kubernetes-int-or-string"):
        node["intOrString"] = True
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        node["preserve"] = True
    if schema.get("x-kubernetes-embedded-resource"):
        node["embedded"] = True
    if schema.get("required"):
        node["required"] = sorted(schema["required"])
    node.update({k: schema[k] for k in _SCHEMA_KEYS if k in schema})
    if path:
        out[path] = node
    for name, child in (schema.get("properties") or {}).items():
        if not path and name in _SKIP_ROOT:
            continue
        _flatten(child, f"{path}.{name}" if path else name, out)
    if isinstance(schema.get("items"), dict):
        _flatten(schema["items"], f"{path}[]", out)
    if isinstance(schema.get("additionalProperties"), dict):
        _flatten(schema["additionalProperties"], f"{path}{{}}", out)
    elif schema.get("additionalProperties") is True:
        node["preserve"] = True


def crd_facts(document: dict[str, Any]) -> dict[str, Any]:
    """``{group, kind, scope, served: [...], storage, fields: {version: {path: facts}}}`` of one CRD."""
    spec = document["spec"]
    versions = [v for v in spec["versions"] if v.get("served")]
    root = {v["name"]: v["schema"]["openAPIV3Schema"] for v in versions}
    fields: dict[str, dict[str, Any]] = {}
    for name, schema in root.items():
        flat: dict[str, dict[str, Any]] = {}
        _flatten(schema, "", flat)
        fields[name] = dict(sorted(flat.items()))
    return {"group": spec["group"], "kind": spec["names"]["kind"], "scope": spec["scope"],
            "served": [v["name"] for v in versions],
            "storage": next(v["name"] for v in spec["versions"] if v.get("storage")), "fields": fields}


def crds_in(text: str) -> list[dict[str, Any]]:
    """Every CustomResourceDefinition in a (multi-document) YAML file."""
    return [d for d in yaml.safe_load_all(text) if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"]


# ---- Helm charts ------------------------------------------------------------------------------------------------

_VALUES_REF = re.compile(r"\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)")
_INDEX_REF = re.compile(r'index\s+\.Values((?:\s+"[^"]+")+)')


def values_keys(values: Any, prefix: str = "") -> tuple[set[str], set[str]]:
    """(every key path values.yaml declares, the free-form ones: an empty map, a list or null by default)."""
    keys: set[str] = set()
    free: set[str] = set()
    if not isinstance(values, dict):
        return keys, free
    for key, value in values.items():
        path = f"{prefix}{key}"
        keys.add(path)
        if value is None or isinstance(value, list) or value == {}:
            free.add(path)
        elif isinstance(value, dict):
            sub_keys, sub_free = values_keys(value, path + ".")
            keys |= sub_keys
            free |= sub_free
    return keys, free


def template_refs(templates: Iterable[str]) -> set[str]:
    """Every ``.Values.a.b`` (and ``index .Values "a" "b"``) path the templates read."""
    refs: set[str] = set()
    for text in templates:
        refs |= {m.group(1)[1:] for m in _VALUES_REF.finditer(text)}
        refs |= {".".join(re.findall(r'"([^"]+)"', m.group(1))) for m in _INDEX_REF.finditer(text)}
    return refs


def chart_facts(chart_yaml: str, values_yaml: str, templates: Iterable[str],
                subcharts: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Name, version, dependencies and the values keys a chart reads; subcharts' facts nest under their name."""
    chart = yaml.safe_load(chart_yaml)
    keys, free = values_keys(yaml.safe_load(values_yaml) or {})
    refs = template_refs(templates)
    # a template ref nothing deeper extends reads the whole value (toYaml .Values.nodeSelector): free-form
    whole = {r for r in refs if not any(o.startswith(r + ".") for o in refs)}
    free |= whole
    for name, sub in (subcharts or {}).items():
        keys |= {name} | {f"{name}.{k}" for k in sub["keys"]}
        free |= {f"{name}.{k}" for k in sub["free"]}
    return {"name": chart["name"], "version": str(chart["version"]), "appVersion": str(chart.get("appVersion", "")),
            "dependencies": {d["name"]: str(d["version"]) for d in chart.get("dependencies") or []},
            "keys": sorted(outside(keys | refs, free)), "free": sorted(outside(free, free))}


def outside(paths: set[str], free: set[str]) -> set[str]:
    """Drop the paths under a free-form key: anything goes there, so they add nothing."""
    return {p for p in paths if not any(p.startswith(f + ".") for f in free)}


def value_at(values: Any, path: str) -> Any:
    """The value at a dotted path of a values tree; KeyError naming the path when it is absent."""
    for key in path.split("."):
        if not isinstance(values, dict) or key not in values:
            raise KeyError(f"values.yaml has no {path!r} (stopped at {key!r})")
        values = values[key]
    return values


class _JoinLoader(yaml.SafeLoader):
    """Safe YAML plus what the AWS Deep Learning Containers buildspecs use: ``!join [a, b]`` (their concatenation
    tag) and anchors defined again (YAML lets an alias name the latest definition; PyYAML refuses by default)."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if not isinstance(event, yaml.AliasEvent) and getattr(event, "anchor", None) is not None:
            self.anchors.pop(event.anchor, None)
        return super().compose_node(parent, index)


_JoinLoader.add_constructor("!join", lambda loader, node: "".join(
    str(part) for part in loader.construct_sequence(node, deep=True)))


def yaml_document(text: str) -> Any:
    """A YAML file whose values the digest keeps (``values`` rows), ``!join`` resolved."""
    return yaml.load(text, Loader=_JoinLoader)  # a SafeLoader subclass: safe


def markdown_table(text: str, columns: list[str]) -> list[dict[str, str]]:
    """The rows of the first markdown table whose header names every one of ``columns``, those cells only
    (stripped, HTML entities decoded); ValueError when no table has them."""
    lines = [line.strip() for line in text.splitlines()]
    for i, line in enumerate(lines[:-1]):
        header = [cell.strip() for cell in line.strip("|").split("|")] if line.startswith("|") else []
        if not set(columns) <= set(header) or not re.fullmatch(r"\|?[\s|:-]+\|?", lines[i + 1]):
            continue
        rows = []
        for row in lines[i + 2:]:
            if not row.startswith("|"):
                break
            cells = [html.unescape(cell.strip()) for cell in row.strip("|").split("|")]
            rows.append({c: cells[header.index(c)] for c in columns})
        return rows
    raise ValueError(f"no markdown table with the columns {columns}")


def unread_values(values: dict[str, Any], facts: dict[str, Any]) -> list[str]:
    """The key paths of ``values`` that the chart does not read (empty when every key is one it reads)."""
    keys, free = set(facts["keys"]), set(facts["free"])

    def walk(value: Any, path: str) -> Iterable[str]:
        if path and (path in free or any(path.startswith(f + ".") for f in free)):
            return
        if isinstance(value, dict) and value:
            for key, child in value.items():
                yield from walk(child, f"{path}.{key}" if path else str(key))
        elif path and path not in keys:  # (no values at all reads nothing)
            yield path

    return sorted(walk(values, ""))


# ---- Go source ----------------------------------------------------------------------------------------------------

def go_constants(text: str, names: Iterable[str]) -> dict[str, str]:
    """The value of each named string constant / variable (``Name = "v"``, ``Name string = "v"`` or of a named string
    type, ``Name Phase = "v"``) of a Go file; KeyError naming the missing ones."""
    found: dict[str, str] = {}
    for m in re.finditer(r'^\s*([A-Za-z_]\w*)(?:\s+[A-Za-z_][\w.]*)?\s*=\s*"([^"]*)"', text, re.MULTILINE):
        found.setdefault(m.group(1), m.group(2))
    wanted = list(names)
    missing = [n for n in wanted if n not in found]
    if missing:
        raise KeyError(f"no string constant {', '.join(missing)} in the Go file")
    return {n: found[n] for n in wanted}


def go_structs(text: str, names: Iterable[str]) -> dict[str, dict[str, list[str]]]:
    """Per named struct of a Go file: its field names (``yaml:"name"`` if tagged, e.g. Alertmanager's, else ``json:``)
    and the types it embeds inline (``,inline``: their fields are its own); KeyError naming structs not found."""
    out: dict[str, dict[str, list[str]]] = {}
    for m in re.finditer(r"^type (\w+) struct \{\n(.*?)^\}", text, re.MULTILINE | re.DOTALL):
        fields, inline = [], []
        for f in re.finditer(r'^\s*(?:\w+\s+)?([\w.*\[\]]+)\s+`([^`]*(?:json|yaml):"[^`]*)`', m.group(2),
                             re.MULTILINE):
            tag = re.search(r'yaml:"([^",]*)', f.group(2)) or re.search(r'json:"([^",]*)', f.group(2))
            if tag is None or tag.group(1) == "-":  # "-": never read
                continue
            if tag.group(1):
                fields.append(tag.group(1))
            else:
                inline.append(f.group(1).rsplit(".", 1)[-1])
        out[m.group(1)] = {"fields": fields, "inline": inline}
    wanted = list(names)
    missing = [n for n in wanted if n not in out]
    if missing:
        raise KeyError(f"no struct {', '.join(missing)} in the Go file")
    return {n: out[n] for n in wanted}


def go_flags(text: str) -> list[str]:
    """The command-line flags a Go file declares with kingpin (``kingpin.Flag("collector.x", ...)``), without
    their ``--``."""
    return sorted(set(re.findall(r'kingpin\.Flag\(\s*"([^"]+)"', text)))


# ---- exporter metric names ----------------------------------------------------------------------------------------

_GO_METRIC = re.compile(r"prometheus\.New(Counter|Gauge|Histogram|Summary)(?:Vec)?\(\s*prometheus\.\w+Opts\{"
                        r"(?:(?!prometheus\.New).)*?Name:\s*\"([a-z_:][a-z0-9_:]*)\"", re.DOTALL)
_SERIES = {"Histogram": ("_bucket", "_sum", "_count"), "Summary": ("", "_sum", "_count")}


def go_metrics(text: str, prefix: str) -> list[str]:
    """Series names of the client_golang metrics a Go file defines (``prometheus.NewXxxVec(prometheus.XxxOpts{...
    Name: "n"``), ``prefix`` + name (the file's Namespace / Subsystem, joined with ``_``); histograms give their
    ``_bucket``, ``_sum`` and ``_count`` series."""
    out: set[str] = set()
    for kind, name in _GO_METRIC.findall(text):
        out.update(f"{prefix}{name}{suffix}" for suffix in _SERIES.get(kind, ("",)))
    return sorted(out)


def csv_metrics(text: str) -> list[str]:
    """The first column of a DCGM exporter counters CSV (field name == metric name), comments skipped."""
    return sorted({line.split(",")[0].strip() for line in text.splitlines()
                   if line.strip() and not line.lstrip().startswith("#")})


def markdown_metrics(text: str) -> list[str]:
    """Metric names in the first column of a markdown metrics table (kube-state-metrics docs/metrics)."""
    return sorted(set(re.findall(r"^\|\s*([a-z][a-z0-9_]*)\s*\|", text, re.MULTILINE)) - {"metric_name"})


def go_map_keys(text: str, prefix: str) -> list[str]:
    """String keys starting with ``prefix`` of a Go map literal (``"DCGM_FI_DEV_GPU_TEMP": ...``)."""
    return sorted(set(re.findall(rf'^\s*"({re.escape(prefix)}[A-Za-z0-9_]*)"\s*:', text, re.MULTILINE)))


# ---- a CLI tool's interface (rclone) ------------------------------------------------------------------------------

_REGISTER = re.compile(r'fs\.Register\((?:\w+\()?&fs\.RegInfo\{\s*Name:\s*"([^"]+)"')


def go_backend(text: str) -> dict[str, Any]:
    """An rclone backend source file: the name it registers (``fs.Register(&fs.RegInfo{Name: "s3"``, what a
    remote's ``type`` is) and the config option names its ``fs.Option`` literals declare (``Name: "env_auth"``)."""
    registered = _REGISTER.search(text)
    options = set(re.findall(r'\bName:\s*"([a-z0-9_]+)"', text))
    name = registered.group(1) if registered else ""
    return {"registers": name, "options": sorted(options - {name})}


def markdown_flags(text: str) -> list[str]:
    """Long flags a flags reference page lists (``      --config string   Config file``), without their ``--``."""
    return sorted(set(re.findall(r"^\s+(?:-\w, )?--([a-z0-9][a-z0-9-]*)\b", text, re.MULTILINE)))


def docker_image(install_doc: str, workflow: str, dockerfile: str, ref: str) -> dict[str, str]:
    """The image the maintainers document (``docker pull owner/name:latest``), the tag their release workflow gives a
    ``vX.Y.Z`` git tag (docker/metadata-action ``type=semver,pattern={{version}}``: ``X.Y.Z``) and the directory the
    Dockerfile's final stage copies the binary to; ValueError when any is missing, so a changed release process
    stops the refresh."""
    pulled = re.search(r"docker pull ([a-z0-9][\w.-]*/[\w.-]+):", install_doc)
    copied = re.search(r"^COPY --from=\S+ \S+/(\w+) (/\S+?)/?$", dockerfile, re.MULTILINE)
    if pulled is None or copied is None or "type=semver,pattern={{version}}" not in workflow:
        raise ValueError("no documented `docker pull` image, no semver {{version}} tag in the release workflow or no "
                         "binary copied in the Dockerfile")
    return {"image": pulled.group(1), "tag": ref.removeprefix("v"), "binary": f"{copied.group(2)}/{copied.group(1)}"}
