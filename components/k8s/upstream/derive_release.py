"""Facts of what a release publishes when its installable files are built by CI rather than kept in git (pure
functions; ``scripts/refresh_upstream.py`` feeds them the files at the tag).

OLM is the case: its release assets ``crds.yaml`` and ``olm.yaml`` are rendered by CI (``make release``:
``helm template`` of ``deploy/chart`` with ``deploy/upstream/values.yaml``, image references stamped to the release
image) and uploaded to the GitHub release, while ``deploy/upstream/quickstart/`` in git still holds OLM 0.18.3's
files. So the facts come from the generator's inputs at the tag: the chart's templates rendered with the release
values (only the few simple templates whose objects the layer relies on), the chart's CRDs, the install script's
asset URL and the workflow's image repository.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

_ACTION = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}")


class TemplateError(ValueError):
    """A template action outside the small subset ``render_simple`` evaluates: derive the fact another way."""


def _value(values: dict[str, Any], ref: str) -> Any:
    if not ref.startswith(".Values."):
        raise TemplateError(f"not a values reference: {ref!r}")
    node: Any = values
    for key in ref.removeprefix(".Values.").split("."):
        node = node.get(key) if isinstance(node, dict) else None
    return node


def _condition(values: dict[str, Any], expr: str) -> bool:
    """``.Values.x`` (truthy), ``eq .Values.x "s"`` and ``and A (B)`` of those: what the OLM templates use."""
    expr = expr.strip()
    if expr.startswith("and "):
        parts = re.findall(r"\([^()]*\)|\S+", expr[4:])
        return all(_condition(values, p.strip("()")) for p in parts)
    if m := re.fullmatch(r'eq (\.Values\.[\w.]+) "([^"]*)"', expr):
        return bool(_value(values, m[1]) == m[2])
    if re.fullmatch(r"\.Values\.[\w.]+", expr):
        return bool(_value(values, expr))
    raise TemplateError(f"condition {expr!r} is outside the subset rendered here")


def render_simple(template: str, values: dict[str, Any]) -> list[dict[str, Any]]:
    """The objects of a Helm template that uses only ``{{ .Values.x }}``, ``{{- if <condition> }}`` and
    ``{{- end }}`` (as ``helm template`` renders them: a missing value renders empty); TemplateError otherwise."""
    out: list[str] = []
    live = [True]
    for line in template.splitlines():
        actions = _ACTION.findall(line)
        if actions and not _ACTION.sub("", line).strip():  # a line of control actions only
            for action in actions:
                if action.startswith("if "):
                    live.append(live[-1] and _condition(values, action[3:]))
                elif action == "end":
                    live.pop()
                else:
                    raise TemplateError(f"action {{{{ {action} }}}} is outside the subset rendered here")
            continue
        if live[-1]:
            def substitute(m: re.Match[str]) -> str:
                value = _value(values, m[1])
                return "" if value is None else str(value)
            out.append(_ACTION.sub(substitute, line))
    return [d for d in yaml.safe_load_all("\n".join(out)) if isinstance(d, dict)]


def release_objects(templates: list[str], values_yaml: str) -> list[dict[str, Any]]:
    """{kind, name, namespace, labels, spec} of every object the named templates render with the release values."""
    values = yaml.safe_load(values_yaml)
    return [{"kind": d["kind"], "apiVersion": d["apiVersion"], "name": d["metadata"]["name"],
             "namespace": d["metadata"].get("namespace", ""), "labels": d["metadata"].get("labels") or {},
             "spec": d.get("spec") or {}}
            for template in templates for d in render_simple(template, values)]


def asset_url(install_script: str, tag: str) -> tuple[str, list[str]]:
    """(the release's asset URL, the assets the install script applies in order), from the quickstart
    install.sh (``default_base_url``, ``url="${base_url}/${release}"``, ``kubectl apply -f "${url}/<file>"``)."""
    base = re.search(r"^default_base_url=(\S+)$", install_script, re.MULTILINE)
    if base is None or 'url="${base_url}/${release}"' not in install_script:
        raise ValueError("install.sh no longer builds its URL as default_base_url/<release>: re-read it")
    applied = re.findall(r'kubectl apply -f "\$\{url\}/([^"]+)"', install_script)
    return f"{base[1]}/{tag}/", applied


def workflow_image(workflow: str, tag: str) -> str:
    """The release image: the workflow's IMAGE_REPO at the release tag (goreleaser pushes <repo>:<tag>)."""
    repos = set(re.findall(r"IMAGE_REPO[:=]\s*(\S+)", workflow))
    if len(repos) != 1:
        raise ValueError(f"expected one IMAGE_REPO in the release workflow, found {sorted(repos)}")
    return f"{repos.pop()}:{tag}"


def crd_names(texts: list[str]) -> list[str]:
    return sorted(d["metadata"]["name"] for text in texts for d in yaml.safe_load_all(text)
                  if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition")
