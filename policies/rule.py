"""The small frame every policy uses: a plain check function yields messages; this wraps it as a CrossGuard
policy, filters resource types, and fills config from the schema's defaults.

A resource check is ``check(subject, config) -> Iterable[str]``; a stack check is
``check(stack, config) -> Iterable[tuple[str, Node | None]]`` (the message and the resource it is about,
None for the stack as a whole). ``types=None`` applies a resource check to every resource type.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

MANDATORY = EnforcementLevel.MANDATORY
ADVISORY = EnforcementLevel.ADVISORY

Config = Mapping[str, Any]
Schema = dict[str, dict[str, Any]]  # property -> JSON schema with a "default"


@dataclass(frozen=True)
class Node:
    """One resource as a check sees it."""

    type: str
    name: str
    urn: str
    props: Mapping[str, Any]
    parent: str | None = None
    dependencies: tuple[str, ...] = ()
    provider: str | None = None  # URN of the resource's explicit provider (stack policies only)


@dataclass
class Stack:
    """Every resource of the stack, with lookups along dependencies (how gpufleet resources reference others)."""

    nodes: list[Node]
    by_urn: dict[str, Node] = field(init=False)

    def __post_init__(self) -> None:
        self.by_urn = {n.urn: n for n in self.nodes}

    def of_type(self, *types: str) -> list[Node]:
        return [n for n in self.nodes if n.type in types]

    def depends_on(self, node: Node, *types: str) -> list[Node]:
        """Resources of these types that ``node`` depends on."""
        found = (self.by_urn.get(u) for u in node.dependencies)
        return [n for n in found if n is not None and n.type in types]

    def dependents(self, node: Node, *types: str) -> list[Node]:
        """Resources of these types that depend on ``node``."""
        return [n for n in self.of_type(*types) if node.urn in n.dependencies]


ResourceCheck = Callable[[Node, Config], Iterable[str]]
StackCheck = Callable[[Stack, Config], Iterable[tuple[str, Node | None]]]  # None: about the whole stack


def _schema(config: Schema | None) -> PolicyConfigSchema | None:
    return PolicyConfigSchema(properties=config) if config else None


def _merged(config: Schema | None, given: Config) -> dict[str, Any]:
    """The schema's defaults, overridden by what the user (or gpufleet) configured."""
    merged = {k: spec.get("default") for k, spec in (config or {}).items()}
    merged.update(given or {})
    return merged


def resource_policy(name: str, description: str, level: EnforcementLevel, types: tuple[str, ...] | None,
                    check: ResourceCheck, config: Schema | None = None) -> ResourceValidationPolicy:
    def validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
        if types is not None and args.resource_type not in types:
            return
        node = Node(args.resource_type, args.name, args.urn, args.props)
        for message in check(node, _merged(config, args.get_config())):
            report(message)

    return ResourceValidationPolicy(name=name, description=description, validate=validate, enforcement_level=level,
                                    config_schema=_schema(config))


def _stack(args: StackValidationArgs) -> Stack:
    return Stack([Node(r.resource_type, r.name, r.urn, r.props, r.parent.urn if r.parent else None,
                       tuple(d.urn for d in r.dependencies), r.provider.urn if r.provider else None)
                  for r in args.resources])


def stack_policy(name: str, description: str, level: EnforcementLevel, check: StackCheck,
                 config: Schema | None = None) -> StackValidationPolicy:
    def validate(args: StackValidationArgs, report: ReportViolation) -> None:
        for message, node in check(_stack(args), _merged(config, args.get_config())):
            report(message, node.urn if node else None)

    return StackValidationPolicy(name=name, description=description, validate=validate, enforcement_level=level,
                                 config_schema=_schema(config))


def resource_checks(types: tuple[str, ...], check: ResourceCheck) -> StackCheck:
    """Run a resource check over every resource of these types in a stack (for stack policies that combine a
    per-resource rule on one cloud with a cross-resource rule on another)."""
    def run(stack: Stack, config: Config) -> Iterable[tuple[str, Node | None]]:
        for node in stack.of_type(*types):
            for message in check(node, config):
                yield message, node
    return run


def combine(*checks: StackCheck) -> StackCheck:
    def run(stack: Stack, config: Config) -> Iterable[tuple[str, Node | None]]:
        for check in checks:
            yield from check(stack, config)
    return run
