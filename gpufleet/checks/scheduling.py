"""Would the scheduler place this pod on this node? The filter predicates kube-scheduler applies before scoring, for
the fields a node agent or a training pod uses to say where it runs (DESIGN.md, the "scheduling" tier):

- TaintToleration: every taint of effect NoSchedule or NoExecute on the node is tolerated (PreferNoSchedule only
  scores); a toleration matches a taint as ``ToleratesTaint`` in k8s.io/api core/v1 toleration.go does: an empty
  effect matches every effect, an empty key with ``Exists`` matches every key, ``Exists`` ignores the value and
  ``Equal`` (the default operator) compares it;
- NodeAffinity: every ``nodeSelector`` label is on the node with that value, and one of the required
  ``nodeSelectorTerms`` matches (terms are ORed, a term's requirements ANDed, an empty term matches nothing);
  ``In`` / ``NotIn`` / ``Exists`` / ``DoesNotExist`` / ``Gt`` / ``Lt`` as k8s.io/apimachinery labels/selector.go
  reads them (``NotIn`` and ``DoesNotExist`` hold where the label is absent) and ``matchFields`` on
  ``metadata.name``.

A DaemonSet's pods also get the tolerations its controller adds (``daemon_tolerations``). An operator this module
does not know fails loudly: a check that cannot decide is no pass.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]
FILTER_EFFECTS = ("NoSchedule", "NoExecute")
# The DaemonSet controller adds these to every DaemonSet pod (pkg/controller/daemon/util
# AddOrUpdateDaemonPodTolerations; https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/
# "Taints and tolerations"): nodes not ready, unreachable, under disk / memory / PID pressure or cordoned still run
# their daemons.
DAEMON_TOLERATIONS: tuple[Obj, ...] = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)


class UndecidableError(ValueError):
    """A selector or toleration this module cannot evaluate (an unknown operator or field)."""


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


@dataclass(frozen=True)
class Node:
    """A node as the scheduler sees it: its name, labels and taints."""

    name: str
    labels: dict[str, str]
    taints: tuple[Taint, ...] = ()
    pool: str = ""  # the gpufleet pool it belongs to ("" for other nodes)

    def with_taints(self, *taints: Taint) -> Node:
        return Node(self.name, self.labels, (*self.taints, *taints), self.pool)

    def without_taint(self, key: str) -> Node:
        return Node(self.name, self.labels, tuple(t for t in self.taints if t.key != key), self.pool)


@dataclass(frozen=True)
class Placement:
    """Where a pod may run: the scheduling fields of its spec."""

    name: str
    tolerations: tuple[Obj, ...] = ()
    node_selector: dict[str, str] = field(default_factory=dict)
    terms: tuple[Obj, ...] = ()  # required node affinity: nodeSelectorTerms (empty: no requirement)

    @staticmethod
    def of(name: str, pod_spec: Obj, daemon: bool = False) -> Placement:
        """The placement of a pod spec (a DaemonSet's pods: with the tolerations its controller adds)."""
        affinity = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {})
        required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
        tolerations = [*(pod_spec.get("tolerations") or []), *(DAEMON_TOLERATIONS if daemon else ())]
        return Placement(name, tuple(tolerations), dict(pod_spec.get("nodeSelector") or {}),
                         tuple(required.get("nodeSelectorTerms") or ()))


def tolerates(toleration: Obj, taint: Taint) -> bool:
    effect, key = toleration.get("effect") or "", toleration.get("key") or ""
    operator = toleration.get("operator") or "Equal"
    if effect and effect != taint.effect:
        return False
    if key and key != taint.key:
        return False
    if operator == "Exists":
        return True
    if operator == "Equal":
        return str(toleration.get("value") or "") == taint.value
    raise UndecidableError(f"toleration operator {operator!r} (known: Exists, Equal)")  # the API refuses others


def untolerated(tolerations: Iterable[Obj], taints: Iterable[Taint]) -> list[Taint]:
    """The taints that keep a pod with these tolerations off the node."""
    tols = list(tolerations)
    return [t for t in taints if t.effect in FILTER_EFFECTS and not any(tolerates(tol, t) for tol in tols)]


def _requirement(req: Obj, value: str | None) -> bool:
    op, values = req.get("operator"), [str(v) for v in req.get("values") or []]
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt"):
        if value is None or not value.lstrip("-").isdigit():
            return False
        [bound] = values
        return int(value) > int(bound) if op == "Gt" else int(value) < int(bound)
    raise UndecidableError(f"node selector operator {op!r} (known: In, NotIn, Exists, DoesNotExist, Gt, Lt)")


def term_matches(term: Obj, node: Node) -> bool:
    expressions, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not expressions and not fields:
        return False  # an empty term matches no node (core/v1 NodeSelectorTerm)
    for f in fields:
        if f.get("key") != "metadata.name":
            raise UndecidableError(f"matchFields key {f.get('key')!r} (known: metadata.name)")
    return (all(_requirement(e, node.labels.get(e["key"])) for e in expressions)
            and all(_requirement(f, node.name) for f in fields))


def why_not(placement: Placement, node: Node) -> list[str]:
    """Why the scheduler would refuse the pod on the node (empty: it fits as far as these predicates go)."""
    out = [f"node selector {k}={v} (node has {node.labels.get(k)!r})"
           for k, v in placement.node_selector.items() if node.labels.get(k) != v]
    if placement.terms and not any(term_matches(t, node) for t in placement.terms):
        out.append(f"no required node affinity term matches ({list(placement.terms)})")
    out += [f"untolerated taint {t}" for t in untolerated(placement.tolerations, node.taints)]
    return out


def fits(placement: Placement, node: Node) -> bool:
    return not why_not(placement, node)
