"""Run a stack's real Pulumi program under the SDK's mock runtime and capture the resource graph.

A recording monitor (a ``MockMonitor`` whose RegisterResource also writes down the request) sees exactly
what the engine would: type, name, parent, custom flag, inputs (camelCase, as serialized) and
dependencies. Secrets are masked as they are captured, so no secret reaches a preview document.
"""

from __future__ import annotations

import asyncio
import json
import logging
import runpy
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import settings
from pulumi.runtime.config import set_all_config
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from gpufleet.engine.levers import (
    calls_in_the_loop,
    direct_urns,
    structs_read_in_one_pass,
    type_unwrapping_once,
    untraced_heap,
    without_sdk_diagnostics,
)
from gpufleet.engine.mocks import FleetMocks, FleetMonitor, UnknownInvoke

PROJECT = "gpufleet"
PROGRAM = Path(__file__).resolve().parents[2] / "stacks" / "__main__.py"

# Pulumi's wire signatures for special values (sdk/go/common/resource/properties.go).
_SIG = "4dabf18193072939515e22adb298388d"
_SECRET = "1b47061264138c4ac30d75fd1eb44270"
_RESOURCE_REF = "5cf8f73096256a8f31e491e813e4eb8e"
_UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
SECRET_MASK = "[secret]"
UNKNOWN_MASK = "[unknown]"


@dataclass(frozen=True)
class Resource:
    type: str
    name: str
    parent: str | None
    custom: bool
    inputs: dict[str, Any]
    dependencies: list[str]
    provider: str | None = None  # `<type>::<name>` of the explicit provider resource; None for components / default
    protect: bool = False  # the `protect` resource option: the engine refuses to delete or replace it

    @property
    def key(self) -> str:
        return f"{self.type}::{self.name}"


@dataclass
class Graph:
    project: str
    stack: str
    resources: list[Resource] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what the program logged at warning or above (pulumi.log)

    def by_key(self) -> dict[str, Resource]:
        return {r.key: r for r in self.resources}


def duplicate_urn(urn: str) -> str:
    """What `pulumi up` says of a second resource with one URN (diag 2001, pulumi/pulumi
    sdk/go/common/diag/errors.go @24cf53f); the SDK's mock runtime registers both without a word."""
    return f"Duplicate resource URN '{urn}'; try giving it a unique name"


class ProgramError(RuntimeError):
    """The stack program failed under the mock runtime; ``registered`` counts what it registered first."""

    def __init__(self, message: str, registered: int = 0):
        super().__init__(message)
        self.registered = registered


def urn_key(urn: str) -> str:
    """urn:pulumi:stack::project::parent$type::name -> 'type::name'."""
    _, _, qualified, name = urn.split("::", 3)
    return f"{qualified.split('$')[-1]}::{name}"


def provider_key(reference: str) -> str | None:
    """A provider reference 'urn::id' -> 'type::name' of the provider; None when the engine's default is used."""
    return urn_key(reference.rsplit("::", 1)[0]) if reference else None


def plain(value: Any) -> Any:
    """A JSON value from Pulumi's wire form: secrets and unknowns masked, resource references as keys."""
    if isinstance(value, dict):
        sig = value.get(_SIG)
        if sig == _SECRET:
            return SECRET_MASK
        if sig == _RESOURCE_REF:
            return urn_key(value["urn"])
        if sig is not None:
            return {k: plain(v) for k, v in value.items() if k != _SIG}
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if value == _UNKNOWN:
        return UNKNOWN_MASK
    if isinstance(value, float) and value.is_integer():
        return int(value)  # protobuf Struct carries every number as a double
    return value


class _Collect(logging.Handler):
    """The program's pulumi.log messages, kept for the caller to show once, by stack (the mock engine would
    otherwise hand them to Python's last-resort handler: bare lines on stderr, from every stack alike)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _program_logger() -> tuple[logging.Logger, _Collect]:
    logger = logging.Logger("gpufleet.program")  # not registered: one per run, dropped with it
    collect = _Collect()
    logger.addHandler(collect)
    return logger, collect


class RecordingMonitor(FleetMonitor):
    def __init__(self, mocks: FleetMocks):
        super().__init__(mocks)
        self.recorded: list[Resource] = []
        self._urns: set[str] = set()
        self._lock = threading.Lock()

    def RegisterResource(self, request: Any) -> Any:
        response, sent = self.register(request)
        if request.type == "pulumi:pulumi:Stack":
            return response
        with self._lock:
            if response.urn in self._urns:
                raise RuntimeError(duplicate_urn(response.urn))
            self._urns.add(response.urn)
        inputs = plain(json_format.MessageToDict(request.object, preserving_proto_field_name=True) if sent is None
                       else sent)
        parent = urn_key(request.parent) if request.parent else None
        if parent and parent.startswith("pulumi:pulumi:Stack::"):
            parent = None
        resource = Resource(type=request.type, name=request.name, parent=parent, custom=bool(request.custom),
                            inputs=inputs, dependencies=sorted({urn_key(u) for u in request.dependencies}),
                            provider=provider_key(request.provider), protect=bool(request.protect))
        with self._lock:
            self.recorded.append(resource)
        return response


def tree_order(resources: list[Resource]) -> list[Resource]:
    """Parents before children, siblings by name: the same order on every run, whatever the threads did."""
    by_key = {r.key: r for r in resources}

    def lineage(r: Resource) -> tuple[str, ...]:
        chain = [r.name + "\x00" + r.type]
        while r.parent and r.parent in by_key:
            r = by_key[r.parent]
            chain.append(r.name + "\x00" + r.type)
        return tuple(reversed(chain))

    return sorted(resources, key=lineage)


def run_program(stack: str, config: dict[str, Any], program: Path = PROGRAM) -> Graph:
    """Run ``program`` for ``stack`` with ``config`` under mocks; the captured graph in tree order."""
    mocks = FleetMocks()
    monitor = RecordingMonitor(mocks)
    previous = asyncio.get_event_loop_policy().get_event_loop()
    loop = asyncio.new_event_loop()
    calls_in_the_loop(loop)
    asyncio.set_event_loop(loop)
    settings.ROOT.set(None)
    # set_mocks keeps the runtime's set of outstanding outputs: a failed preview leaves its outputs there, bound to its
    # closed loop, and the next preview in this process re-raised their errors or waited on them forever
    settings.SETTINGS.outputs = set()
    set_all_config({k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}, [])
    logger, collect = _program_logger()
    pulumi_mocks.set_mocks(mocks, project=PROJECT, stack=stack, preview=True, monitor=monitor, logger=logger)
    try:
        with without_sdk_diagnostics(), direct_urns(), type_unwrapping_once(), structs_read_in_one_pass(), \
                untraced_heap():
            _sync_await(run_pulumi_func(lambda: runpy.run_path(str(program), run_name="__main__")))
    except Exception as err:
        registered = len(monitor.recorded)
        if mocks.unknown_invokes:
            raise ProgramError(str(UnknownInvoke(mocks.unknown_invokes[0])), registered) from None
        raise ProgramError(f"the stack program failed under the offline preview: {err}", registered) from err
    finally:  # a loop left open keeps its executor's threads and descriptors: thousands of previews run in tests
        pending = asyncio.all_tasks(loop)  # what a failed program left running is cancelled, not destroyed pending
        for task in pending:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()
        asyncio.set_event_loop(previous)
    return Graph(project=PROJECT, stack=stack, resources=tree_order(monitor.recorded), warnings=collect.messages)
