"""What the journeys read from a previewed stack, as a cluster would hold it: the objects `pulumi up` applies (the
captured graph's Kubernetes resources), the GPU nodes the translators' pools become (gpufleet/checks/nodes.py), and
the two controllers' rules the journeys follow, each as its upstream source at the pin defines it:

- Kueue admitting a pod set to a ResourceFlavor: the flavor's nodeLabels join the pod's nodeSelector and its
  tolerations are appended to the pod's (kubernetes-sigs/kueue v0.14.8 pkg/podset/podset.go, FromAssignment /
  Merge);
- a NodeHealthCheck remediating a node: when a node matching its selector has one of its unhealthy conditions (type
  and status, for the duration) and no more than maxUnhealthy nodes are unhealthy, it creates a remediation of the
  template's kind minus ``Template``, named after the node, in the template's namespace, with the template's
  ``spec.template.spec`` as its spec (medik8s/node-healthcheck-operator v0.12.0
  internal/controller/resources/manager.go generateRemediationCR).
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from gpufleet.checks.scheduling import Node, Placement
from gpufleet.engine.capture import Graph

Obj = dict[str, Any]


def objects(graph: Graph, cluster: str, kind: str) -> list[Obj]:
    """The Kubernetes objects of one kind the graph registers for a cluster, as applied."""
    return [dict(r.inputs) for r in graph.resources if r.type.startswith("kubernetes:") and
            r.type.rsplit(":", 1)[-1] == kind and r.name.startswith(f"{cluster}-addons-")]


def admitted(pod: Obj, flavor: Obj) -> Obj:
    """A pod template after Kueue admitted its pod set to ``flavor``."""
    out = copy.deepcopy(pod)
    spec = out["spec"]
    spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **flavor["spec"].get("nodeLabels", {})}
    spec["tolerations"] = [*(spec.get("tolerations") or []), *flavor["spec"].get("tolerations", [])]
    return out


def placement(name: str, pod: Obj) -> Placement:
    return Placement.of(name, pod["spec"])


# ---- node-problem-detector and NodeHealthCheck -------------------------------------------------------------------

def conditions_from_kernel_log(graph: Graph, cluster: str, line: str) -> list[tuple[str, str]]:
    """(condition type, reason) the detector sets from one kernel log line, by its rendered system log monitor
    config: permanent rules' patterns matched with ``\\z`` appended against a one-line log buffer, as
    node-problem-detector's kmsg monitor matches (pkg/systemlogmonitor/log_buffer.go)."""
    [config_map] = [c for c in objects(graph, cluster, "ConfigMap")
                    if c["metadata"]["name"] == "gpu-problem-detector-config"]
    monitor = json.loads(config_map["data"]["gpu-monitor.json"])
    return [(r["condition"], r["reason"]) for r in monitor["rules"]
            if r["type"] == "permanent" and re.search(r["pattern"] + r"\Z", line)]


def selects(selector: Obj, node: Node) -> bool:
    return all(node.labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def remediation(graph: Graph, cluster: str, node: Node, conditions: list[Obj],
                unhealthy_in_pool: int) -> tuple[Obj | None, str]:
    """The remediation object the node's NodeHealthCheck creates, or None and why not."""
    checks = [c for c in objects(graph, cluster, "NodeHealthCheck") if selects(c["spec"]["selector"], node)]
    if len(checks) != 1:
        return None, f"{len(checks)} NodeHealthChecks select {node.name}"
    [check] = checks
    wanted = {(u["type"], u["status"]) for u in check["spec"]["unhealthyConditions"]}
    if not any((c["type"], c["status"]) in wanted for c in conditions):
        return None, "no unhealthy condition"
    if unhealthy_in_pool > int(check["spec"]["maxUnhealthy"]):
        return None, f"{unhealthy_in_pool} unhealthy > maxUnhealthy {check['spec']['maxUnhealthy']}"
    ref = check["spec"]["remediationTemplate"]
    [template] = [t for t in objects(graph, cluster, ref["kind"]) if t["metadata"]["name"] == ref["name"]
                  and t["metadata"]["namespace"] == ref["namespace"]]
    return {"apiVersion": ref["apiVersion"], "kind": ref["kind"].removesuffix("Template"),
            "metadata": {"name": node.name, "namespace": ref["namespace"]},
            "spec": template["spec"]["template"]["spec"]}, ""
