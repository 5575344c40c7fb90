"""Provider-schema conformance: every captured resource input is one the installed Pulumi SDK declares.

The offline preview records each resource's inputs as the engine would receive them (wire names, camelCase).
A resource built through the SDK gets its top-level names right, but a raw dict (``vpc_config={...}``), a
nested key, an enum value or a missing required input is only checked by the provider at ``pulumi up``.
This module holds the captured graph to the SDK's own input types instead of a schema written here:

- the resource class comes from the SDK's resource-module registration (``pulumi.runtime.rpc``), its
  input type is the ``@pulumi.input_type`` class ``<Name>Args`` (``<Name>InitArgs`` when a nested type took
  that name) defined beside it;
- each input type's wire names are its ``@pulumi.getter(name=...)`` properties, followed recursively through
  the nested input types of their type hints (sequences, maps, unions);
- a string given where the hint is an SDK ``Enum`` (or a ``Literal``) must be one of its values;
- the ``__init__`` parameters without a default are required and must be present.

Resources whose type no installed SDK registers (custom resources of a CRD, components) are returned as
``unchecked``; the CRD digests of the in-cluster layer check those.
"""

from __future__ import annotations

import difflib
import enum
import functools
import importlib
import inspect
import json
import sys
import types
import typing
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi.runtime import rpc

from gpufleet.engine.capture import SECRET_MASK, UNKNOWN_MASK, Graph, Resource

_OPAQUE = {SECRET_MASK, UNKNOWN_MASK}  # values the preview cannot see: nothing to check inside them


@dataclass(frozen=True)
class Finding:
    resource: str  # `<type>::<name>`
    path: str  # the input path, e.g. networkInterfaces[0].interfaceType
    problem: str

    def __str__(self) -> str:
        return f"{self.resource}: {self.path}: {self.problem}"


@dataclass(frozen=True)
class Report:
    findings: list[Finding]
    checked: list[str]  # keys of resources held to an SDK input type
    unchecked: list[str]  # keys of resources no installed SDK declares (CRDs, components)

    @property
    def ok(self) -> bool:
        return not self.findings


# -- the SDK's shapes ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """What a hint admits: input-type classes, enums, literals, element shapes of sequences and maps."""

    objects: tuple[type, ...] = ()
    enums: tuple[type[enum.Enum], ...] = ()
    literals: tuple[Any, ...] = ()
    items: tuple[Any, ...] = ()  # hints of sequence elements
    values: tuple[Any, ...] = ()  # hints of map values
    scalar: bool = False  # str / bool / number / Any: anything goes at this level


def _flatten(hint: Any) -> Iterable[Any]:
    """The alternatives of a hint, with pulumi.Input's Awaitable/Output wrappers and Optional taken off."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(hint):
            yield from _flatten(arg)
    elif origin is Awaitable or (isinstance(origin, type) and issubclass(origin, pulumi.Output)):
        yield from _flatten(typing.get_args(hint)[0])
    elif hint is type(None) or hint is pulumi.Output:
        return
    else:
        yield hint


@functools.cache
def shape_of(hint: Any) -> Shape:
    objects, enums, literals, items, values, scalar = [], [], [], [], [], False
    for alt in _flatten(hint):
        origin = typing.get_origin(alt)
        if origin is typing.Literal:
            literals.extend(typing.get_args(alt))
        elif isinstance(origin, type) and issubclass(origin, Mapping):
            values.append(typing.get_args(alt)[1] if typing.get_args(alt) else Any)
        elif isinstance(origin, type) and issubclass(origin, Sequence) and origin is not str:
            items.append(typing.get_args(alt)[0] if typing.get_args(alt) else Any)
        elif isinstance(alt, type) and issubclass(alt, enum.Enum):
            enums.append(alt)
        elif isinstance(alt, type) and pulumi._types.is_input_type(alt):
            objects.append(alt)
        else:  # str, int, float, bool, Any, plain dict/list, archives and assets
            scalar = True
    return Shape(tuple(objects), tuple(enums), tuple(literals), tuple(items), tuple(values), scalar)


def _globals(cls: type) -> dict[str, Any]:
    """The module namespaces a class's forward references resolve in (its module and its bases')."""
    namespace: dict[str, Any] = {}
    for base in reversed(cls.__mro__):
        module = sys.modules.get(base.__module__)
        if module is not None:
            namespace.update(vars(module))
    return namespace


@dataclass(frozen=True)
class InputType:
    cls: type
    hints: dict[str, Any]  # wire name -> type hint
    required: frozenset[str]  # wire names

    @property
    def name(self) -> str:
        return self.cls.__name__


@functools.cache
def input_type(cls: type) -> InputType:
    """Wire names, hints and required inputs of one ``@pulumi.input_type`` class, from the SDK itself."""
    py_to_wire = pulumi._types.input_type_py_to_pulumi_names(cls)
    namespace = _globals(cls)
    localns = {"Output": pulumi.Output, "T": type(None)}
    hints = {}
    for py_name, wire in py_to_wire.items():
        getter = inspect.getattr_static(cls, py_name).fget
        hints[wire] = typing.get_type_hints(getter, globalns=namespace, localns=localns).get("return", Any)
    parameters = inspect.signature(cls.__init__).parameters.values()
    required = frozenset(py_to_wire[p.name] for p in parameters
                         if p.default is inspect.Parameter.empty and p.name in py_to_wire)
    return InputType(cls, hints, required)


def _sdk_module(package: str) -> str:
    return "pulumi_" + package.replace("-", "_")


@functools.cache
def args_class(type_token: str) -> type | None:
    """The SDK input type of a resource type token; None when no installed SDK registers the type."""
    package, module, name = type_token.split(":", 2)
    if package == "pulumi" and module == "providers":
        package, module, name = name, "", "Provider"
    try:
        sdk = importlib.import_module(_sdk_module(package))
    except ImportError:
        return None
    if module:
        registered = rpc.get_resource_module(package, module, "")
        info = getattr(registered, "mod_info", None) if registered else None
        if not info or type_token not in info["classes"]:
            return None
        resource_cls = getattr(importlib.import_module(info["fqn"]), info["classes"][type_token])
    else:
        resource_cls = sdk.Provider
    # `<Name>InitArgs` where a nested input type already took `<Name>Args`; defined beside the resource class
    namespace = sys.modules[resource_cls.__module__]
    for candidate in (f"{name}InitArgs", f"{name}Args"):
        cls = getattr(namespace, candidate, None)
        if cls is not None and cls.__module__ == resource_cls.__module__ and pulumi._types.is_input_type(cls):
            return cls
    return None


# -- checking values against shapes ---------------------------------------------------------------------------


class _Checker:
    def __init__(self, resource: Resource, provider: bool):
        self.resource = resource
        self.provider = provider  # provider inputs carry nested objects as JSON strings
        self.findings: list[Finding] = []

    def fail(self, path: str, problem: str) -> None:
        self.findings.append(Finding(self.resource.key, path or "<inputs>", problem))

    def object(self, value: dict[str, Any], kind: InputType, path: str) -> None:
        for key, item in value.items():
            where = f"{path}.{key}" if path else key
            if key not in kind.hints:
                close = _close(key, kind.hints)
                hint = f" Did you mean {close!r}?" if close else ""
                known = ", ".join(sorted(kind.hints))
                self.fail(where, f"{key!r} is not an input of {kind.name}.{hint} Known: {known}")
            else:
                self.value(item, shape_of(kind.hints[key]), where)
        for key in sorted(kind.required - set(value)):
            self.fail(f"{path}.{key}" if path else key, f"required input of {kind.name} is missing")

    def value(self, value: Any, shape: Shape, path: str) -> None:
        if value is None or (isinstance(value, str) and value in _OPAQUE):
            return
        if isinstance(value, str) and self.provider and (shape.objects or shape.items or shape.values):
            try:
                value = json.loads(value)
            except ValueError:
                return
        if isinstance(value, dict):
            self._dict(value, shape, path)
        elif isinstance(value, list):
            if shape.items:
                for i, item in enumerate(value):
                    self.value(item, shape_of(shape.items[0]), f"{path}[{i}]")
            elif not shape.scalar:
                self.fail(path, "a list where the SDK expects no sequence")
        elif isinstance(value, str):
            self._string(value, shape, path)

    def _dict(self, value: dict[str, Any], shape: Shape, path: str) -> None:
        if shape.objects:
            # a union of input types (discriminated in azure-native): hold the value to the closest member
            attempts = []
            for cls in shape.objects:
                trial = _Checker(self.resource, self.provider)
                trial.object(value, input_type(cls), path)
                attempts.append(trial.findings)
            self.findings.extend(min(attempts, key=len))
        elif shape.values:
            for key, item in value.items():
                self.value(item, shape_of(shape.values[0]), f"{path}[{key!r}]")
        elif not shape.scalar:
            self.fail(path, "an object where the SDK expects no object")

    def _string(self, value: str, shape: Shape, path: str) -> None:
        allowed = [member.value for kind in shape.enums for member in kind] + list(shape.literals)
        if allowed and value not in allowed:
            kinds = ", ".join(k.__name__ for k in shape.enums) or "Literal"
            self.fail(path, f"{value!r} is not a value of {kinds}. Allowed: {', '.join(map(str, allowed))}")


def _close(word: str, known: Iterable[str]) -> str | None:
    matches = difflib.get_close_matches(word, list(known), n=1, cutoff=0.75)
    return matches[0] if matches else None


def check_resource(resource: Resource) -> list[Finding] | None:
    """Findings for one captured resource; None when no installed SDK declares its type."""
    if not resource.custom:
        return None
    cls = args_class(resource.type)
    if cls is None:
        return None
    checker = _Checker(resource, provider=resource.type.startswith("pulumi:providers:"))
    checker.object(resource.inputs, input_type(cls), "")
    return checker.findings


def check_graph(graph: Graph | Iterable[Resource]) -> Report:
    """Hold every resource of a captured graph to the installed SDKs' input types."""
    resources = graph.resources if isinstance(graph, Graph) else list(graph)
    findings: list[Finding] = []
    checked: list[str] = []
    unchecked: list[str] = []
    for resource in resources:
        result = check_resource(resource)
        if result is None:
            unchecked.append(resource.key)
        else:
            checked.append(resource.key)
            findings.extend(result)
    return Report(findings, checked, unchecked)
