"""What the offline preview turns off around the SDK's runtime for speed, without changing what it records.

Each lever has an environment switch that puts the SDK's default back, for the other side of the comparisons in
benchmarks/preview_bench.py (GPUFLEET_GC_DEFAULTS=1, GPUFLEET_SDK_DIAGNOSTICS=1, GPUFLEET_SDK_URNS=1,
GPUFLEET_SDK_THREADS=1, GPUFLEET_SDK_TYPES=1, GPUFLEET_SDK_READER=1).
"""

from __future__ import annotations

import asyncio
import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pulumi
from google.protobuf import struct_pb2
from pulumi import _types as sdk_types
from pulumi.runtime import resource as sdk_resource
from pulumi.runtime import rpc, settings
from pulumi.runtime.proto import source_pb2

from gpufleet.engine.structs import as_read, from_struct

_exits_after_previews = False


def exit_after_previews() -> None:
    """This process ends soon after its previews (the CLI): what a run made is frozen, not traced (untraced_heap)."""
    global _exits_after_previews
    _exits_after_previews = True


@contextmanager
def untraced_heap() -> Iterator[None]:
    """No cyclic garbage collection while a program runs. Nearly all a run makes (the SDK's outputs, futures and
    resources, tied in cycles) lives until the run ends, so each pass traced a growing heap to free little: a fifth of
    an 8,200-resource preview's CPU at gpufleet's thresholds (gpufleet/__init__.py), for 8% less peak memory.

    After the run, a process that exits after its previews freezes what the run made (gc.freeze: out of the
    collector's sight, freed by the OS at exit; tracing it there cost the 8,200-resource preview 3 s more); any other
    process leaves it to the collector's next pass, which traces it once."""
    if os.environ.get("GPUFLEET_GC_DEFAULTS") == "1" or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        if _exits_after_previews:
            gc.freeze()
        gc.enable()


@contextmanager
def without_sdk_diagnostics() -> Iterator[None]:
    """For every resource the SDK walks the Python stack (source positions for the engine's error messages) and
    logs debug lines; the offline preview keeps neither, and they were a sixth of a 7,700-resource preview's CPU."""
    if os.environ.get("GPUFLEET_SDK_DIAGNOSTICS") == "1":
        yield
        return
    saved = sdk_resource._get_stack_trace, pulumi.log.debug
    sdk_resource._get_stack_trace = source_pb2.StackTrace  # an empty trace: no frames, so no source position
    pulumi.log.debug = _discard
    try:
        yield
    finally:
        sdk_resource._get_stack_trace, pulumi.log.debug = saved


def _discard(*_: Any, **__: Any) -> None:
    return None


@contextmanager
def direct_urns() -> Iterator[None]:
    """The SDK builds every URN it computes itself (one per resource, which a run with a monitor then throws away, and
    one per alias) as a chain of Outputs: Output.all over the stack prefix, type and name, then an apply, each a few
    asyncio tasks, 4% of an 8,200-resource preview. Where the parts are plain strings the URN is one known Output of
    the same string; anything else (an Output name, a Resource parent) still takes the SDK's path."""
    if os.environ.get("GPUFLEET_SDK_URNS") == "1":
        yield
        return
    sdk_create_urn = sdk_resource.create_urn

    def create_urn(name: Any, type_: Any, parent: Any = None, project: str | None = None,
                   stack: str | None = None) -> pulumi.Output[str]:
        if not (isinstance(name, str) and isinstance(type_, str) and (parent is None or isinstance(parent, str))):
            return sdk_create_urn(name, type_, parent, project, stack)
        if parent is not None:  # the SDK's parent prefix: the parent's URN up to its last "::", then "$"
            prefix = parent[0:parent.rfind("::")] + "$"
        else:
            prefix = (f"urn:pulumi:{settings.get_stack() if stack is None else stack}::"
                      f"{settings.get_project() if project is None else project}::")
        return pulumi.Output.from_input(prefix + type_ + "::" + name)

    sdk_resource.create_urn = create_urn
    try:
        yield
    finally:
        sdk_resource.create_urn = sdk_create_urn


def calls_in_the_loop(loop: asyncio.AbstractEventLoop) -> None:
    """The SDK sends every call to its monitor (RegisterResource, RegisterResourceOutputs, Invoke) through
    ``run_in_executor``, because a real monitor is a gRPC server. The offline preview's monitor is a function of its
    request: sending each of 8,000 calls to a thread and waking the loop with its answer was a quarter of a
    50-cluster preview's samples (the pool's worker loop, the self-pipe write). Here a call runs where it is made and
    its future is done at once. A call made while another runs inline (the SDK's mock monitor pumps the loop with
    ``_sync_await`` to serialize what it cannot hand over directly) still goes to the SDK's executor, so the nesting
    is one deep."""
    if os.environ.get("GPUFLEET_SDK_THREADS") == "1":
        return
    sdk_run_in_executor = loop.run_in_executor
    running = False

    def run_in_executor(executor: Any, func: Any, *args: Any) -> asyncio.Future[Any]:
        nonlocal running
        if executor is not None or running:
            return sdk_run_in_executor(executor, func, *args)
        done = loop.create_future()
        running = True
        try:
            done.set_result(func(*args))
        except Exception as err:  # the caller awaits it, as it would a thread's
            done.set_exception(err)
        finally:
            running = False
        return done

    loop.run_in_executor = run_in_executor  # type: ignore[method-assign]


@contextmanager
def type_unwrapping_once() -> Iterator[None]:
    """The SDK unwraps a property's declared type (Output[T], Input[T], Optional[T] -> T) through typing's
    introspection for every property of every resource it serializes: 3% of an 8,200-resource preview, for a few
    hundred distinct types. ``unwrap_type`` is a function of the type alone, so each answer is kept for the run."""
    if os.environ.get("GPUFLEET_SDK_TYPES") == "1":
        yield
        return
    sdk_unwrap_type = sdk_types.unwrap_type
    known: dict[Any, Any] = {}

    def unwrap_type(val: Any) -> Any:
        try:
            return known[val]
        except KeyError:
            known[val] = answer = sdk_unwrap_type(val)
            return answer
        except TypeError:  # an unhashable annotation: the SDK's answer, not kept
            return sdk_unwrap_type(val)

    sdk_types.unwrap_type = unwrap_type
    try:
        yield
    finally:
        sdk_types.unwrap_type = sdk_unwrap_type


@contextmanager
def structs_read_in_one_pass() -> Iterator[None]:
    """The SDK deserializes every Struct it is given (each resource's outputs) value by value, asking of each whether
    it is an unknown, a secret, an asset or a reference: 7% of an 8,200-resource preview's samples. A Struct of plain
    JSON data is read in one pass to the same values (gpufleet/engine/structs.py); any other takes the SDK's path."""
    if os.environ.get("GPUFLEET_SDK_READER") == "1":
        yield
        return
    sdk_deserialize = rpc.deserialize_properties

    def deserialize_properties(props_struct: Any, keep_unknowns: bool | None = None,
                               keep_internal: bool | None = True) -> Any:
        if keep_internal is not False and type(props_struct) is struct_pb2.Struct:
            read = as_read(from_struct(props_struct))
            if read is not None:
                return read
        return sdk_deserialize(props_struct, keep_unknowns, keep_internal)

    rpc.deserialize_properties = deserialize_properties
    try:
        yield
    finally:
        rpc.deserialize_properties = sdk_deserialize
