"""Helpers for the policy tests: judging a graph with the running pack, and mutating captured resources."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from gpufleet.checks.analyzer import PolicyConfig, PolicyPack, Verdict, merge_config
from gpufleet.engine.capture import Graph

DROP = object()  # a mutation value: delete the key (or, as the whole mutation, the resource)


@dataclass(frozen=True)
class Base:
    graph: Graph
    config: PolicyConfig


def judge(pack: PolicyPack, graph: Graph, config: PolicyConfig) -> list[Verdict]:
    pack.configure(config)
    return pack.analyze(graph)


def _set(inputs: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    node: Any = inputs
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    if isinstance(node, list):
        node[int(last)] = value
    elif value is DROP:
        node.pop(last, None)
    else:
        node[last] = value


Mutation = dict[str, Any] | Callable[[dict[str, Any]], None] | object


def mutate(graph: Graph, key: str, change: Mutation) -> Graph:
    """A copy of ``graph`` with resource ``key`` ("type::name") changed: paths set (or DROPped), a function
    applied to its inputs, or the resource dropped."""
    found = [r for r in graph.resources if r.key == key]
    assert found, f"no resource {key}; have {[r.key for r in graph.resources]}"
    resources = []
    for r in graph.resources:
        if r.key != key:
            resources.append(r)
        elif change is not DROP:
            inputs = copy.deepcopy(r.inputs)
            if callable(change):
                change(inputs)
            else:
                for path, value in change.items():  # type: ignore[union-attr]
                    _set(inputs, path, value)
            resources.append(replace(r, inputs=inputs))
    return replace(graph, resources=resources)


@dataclass(frozen=True)
class Case:
    """A crafted violation: ``changes`` applied to base ``base`` make ``policy`` report exactly ``expected``
    ((resource key or None for the stack, message) pairs). ``config`` is merged over the base's config."""

    policy: str
    base: str
    changes: tuple[tuple[str, Mutation], ...]
    expected: list[tuple[str | None, str]]
    config: dict[str, dict[str, Any]] = field(default_factory=dict)
    label: str = ""

    def graph(self, base: Base) -> Graph:
        graph = base.graph
        for key, change in self.changes:
            graph = mutate(graph, key, change)
        return graph


SAME = "same"  # ``on`` default: the verdicts are about the mutated resource


def case(policy: str, base: str, key: str, change: Mutation, *messages: str, on: str | None = SAME,
         config: dict[str, dict[str, Any]] | None = None, label: str = "") -> Case:
    """One mutation of one resource; the verdicts are about that resource unless ``on`` names another (or None)."""
    about = key if on == SAME else on
    return Case(policy, base, ((key, change),), [(about, m) for m in messages], config or {}, label)


def case_verdicts(pack: PolicyPack, base: Base, case: Case) -> list[Verdict]:
    """Judge a case the way the engine would: a resource policy sees each mutated resource (Analyze), a stack
    policy the whole mutated graph (AnalyzeStack); only the case's policy's verdicts."""
    pack.configure(merge_config(base.config, case.config))
    graph = case.graph(base)
    if pack.policies[case.policy].kind == "stack":
        verdicts = pack.analyze_stack(graph)
    else:
        verdicts = pack.analyze_resources(graph, {key for key, _ in case.changes})
    return [v for v in verdicts if v.policy == case.policy]
