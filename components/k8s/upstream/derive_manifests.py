"""Facts derived from upstream manifest files (pure functions; ``scripts/refresh_upstream.py`` feeds them the files):
per workload (DaemonSet, Deployment, Job, Pod) its host settings, containers (image, command, args, privilege,
capabilities, mounts, env), host paths, annotations and where it may run (node selector, required node affinity,
tolerations: what the scheduling check evaluates); per file its objects and images; a JSON config's keys; Services.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

# ---- workload manifests -----------------------------------------------------------------------------------------

def _container(c: dict[str, Any]) -> dict[str, Any]:
    security = c.get("securityContext") or {}
    return {"name": c["name"], "image": c.get("image", ""), "command": c.get("command", []), "args": c.get("args", []),
            "privileged": bool(security.get("privileged", False)),
            "capabilities": sorted((security.get("capabilities") or {}).get("add", [])),
            "mounts": {m["name"]: m["mountPath"] for m in c.get("volumeMounts", [])},
            "env": {e["name"]: e.get("value", "") for e in c.get("env", [])},
            "resources": c.get("resources", {})}


def _required_terms(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return list((((pod.get("affinity") or {}).get("nodeAffinity") or {})
                 .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms", []))


def _node_in(pod: dict[str, Any]) -> dict[str, list[str]]:
    """Label key -> the values a node must have (nodeSelector and required ``In`` affinity terms)."""
    terms = _required_terms(pod)
    out: dict[str, set[str]] = {k: {v} for k, v in (pod.get("nodeSelector") or {}).items()}
    for term in terms:
        for e in term.get("matchExpressions", []):
            if e.get("operator") == "In":
                out.setdefault(e["key"], set()).update(e.get("values", []))
    return {k: sorted(v) for k, v in sorted(out.items())}


def workload_facts(document: dict[str, Any]) -> dict[str, Any]:
    """The facts of a DaemonSet / Job / Pod a GKE installer or test manifest declares."""
    pod = document["spec"]["template"] if document["kind"] != "Pod" else document
    spec = pod["spec"]
    volumes = spec.get("volumes", [])
    return {
        "kind": document["kind"], "name": document["metadata"]["name"],
        "namespace": document["metadata"].get("namespace", ""),
        "annotations": (pod.get("metadata") or {}).get("annotations", {}),
        "hostNetwork": bool(spec.get("hostNetwork", False)), "hostPID": bool(spec.get("hostPID", False)),
        "priorityClassName": spec.get("priorityClassName", ""),
        "accelerators": _node_in(spec).get("cloud.google.com/gke-accelerator", []),
        "nodeIn": _node_in(spec),
        "initContainers": [_container(c) for c in spec.get("initContainers", [])],
        "containers": [_container(c) for c in spec.get("containers", [])],
        "hostPaths": {v["name"]: v["hostPath"] for v in volumes if "hostPath" in v},
        "volumes": {v["name"]: {k: val for k, val in v.items() if k != "name"} for v in volumes},
        # where it may run, as the scheduler reads it (gpufleet/checks/scheduling.py)
        "nodeSelector": spec.get("nodeSelector") or {},
        "nodeSelectorTerms": _required_terms(spec),
        "tolerations": spec.get("tolerations") or [],
    }


def untemplated(text: str) -> str:
    """A manifest an operator renders with Go's text/template (``{{.Namespace}}``), made parseable YAML: each plain
    field reference becomes the string ``<Field>``; any other action is left for the YAML parser to refuse."""
    return re.sub(r"\{\{\s*\.(\w+)\s*\}\}", r"<\1>", text)


def workloads_in(text: str) -> list[dict[str, Any]]:
    return [workload_facts(d) for d in yaml.safe_load_all(untemplated(text))
            if isinstance(d, dict) and d.get("kind") in ("DaemonSet", "Pod", "Job", "Deployment")]


def config_keys(config: Any, prefix: str = "") -> list[str]:
    """Every key path of a JSON config (``rules[].pattern``: ``[]`` for list items)."""
    out: set[str] = set()
    if isinstance(config, dict):
        for key, value in config.items():
            out.add(f"{prefix}{key}")
            out.update(config_keys(value, f"{prefix}{key}."))
    elif isinstance(config, list):
        for item in config:
            out.update(config_keys(item, f"{prefix.rstrip('.')}[]."))
    return sorted(out)


def manifest_kinds(text: str) -> list[dict[str, str]]:
    """(apiVersion, kind, name, namespace) of every object in a manifest file, and each container image."""
    out = []
    for d in yaml.safe_load_all(untemplated(text)):
        if isinstance(d, dict) and "kind" in d:
            images = []
            if d["kind"] in ("DaemonSet", "Deployment", "StatefulSet"):
                spec = d["spec"]["template"]["spec"]
                images = [c["image"] for c in spec.get("initContainers", []) + spec.get("containers", [])]
            out.append({"apiVersion": d["apiVersion"], "kind": d["kind"], "name": d["metadata"]["name"],
                        "namespace": d["metadata"].get("namespace", ""), "images": images})
    return out


def services_in(text: str) -> list[dict[str, Any]]:
    """Per Service of a manifest file: its name, ports (name, port, protocol) and internalTrafficPolicy."""
    return [{"name": d["metadata"]["name"], "internalTrafficPolicy": d["spec"].get("internalTrafficPolicy", ""),
             "ports": [{k: p[k] for k in ("name", "port", "protocol") if k in p} for p in d["spec"].get("ports", [])]}
            for d in yaml.safe_load_all(text) if isinstance(d, dict) and d.get("kind") == "Service"]


def images_in(text: str) -> list[str]:
    """Every container image of every object in a manifest file, however deep its pod templates sit (a RayJob's
    head and worker groups, a JobSet's jobs), in order, each once."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("containers", "initContainers") and isinstance(value, list):
                    found.extend(c["image"] for c in value if isinstance(c, dict) and "image" in c)
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    for document in yaml.safe_load_all(text):
        walk(document)
    return list(dict.fromkeys(found))


def ray_versions_in(text: str) -> list[str]:
    """Every ``rayVersion`` a manifest's RayJobs / RayClusters declare (KubeRay's CRD: the Ray version of the
    cluster's image), in order, each once."""
    found: list[str] = []
    for document in yaml.safe_load_all(text):
        if not isinstance(document, dict):
            continue
        spec = document.get("spec") or {}
        for cluster in (spec, spec.get("rayClusterSpec") or {}):
            if "rayVersion" in cluster:
                found.append(str(cluster["rayVersion"]))
    return list(dict.fromkeys(found))


def mpirun_env(text: str) -> dict[str, str]:
    """The environment a ConfigMap's scripts pass to every rank with ``mpirun -x NAME=VALUE`` (upstream's NCCL test
    settings for a fabric), values unquoted; variables built from the shell's own (``${...}``) are left out."""
    out: dict[str, str] = {}
    for d in yaml.safe_load_all(untemplated(text)):
        if isinstance(d, dict) and d.get("kind") == "ConfigMap":
            for script in (d.get("data") or {}).values():
                for name, value in re.findall(r"-x\s+([A-Z_][A-Z0-9_]*)=(\"[^\"]*\"|\S+)", str(script)):
                    if "${" not in value:
                        out[name] = value.strip('"')
    return out


_HEREDOC = re.compile(r"<<\s*'?(\w+)'?\n(.*?)\n\1\n", re.S)


def cluster_roles(text: str) -> dict[str, list[dict[str, Any]]]:
    """``{name: rules}`` of every ClusterRole in a manifest, or in the YAML heredocs a shell script pipes to
    ``kubectl apply -f -`` (shell variables in names are kept as written, e.g. ``${MULTIKUEUE_SA}-role``)."""
    bodies = [m[2] for m in _HEREDOC.finditer(text)] if text.startswith("#!") else [text]
    out: dict[str, list[dict[str, Any]]] = {}
    for body in bodies:
        for document in yaml.safe_load_all(body):
            if isinstance(document, dict) and document.get("kind") == "ClusterRole":
                out[document["metadata"]["name"]] = [
                    {key: sorted(rule[key]) for key in ("apiGroups", "resources", "verbs") if key in rule}
                    for rule in document.get("rules") or []]
    if not out:
        raise KeyError("no ClusterRole in the file")
    return out
