"""The Pulumi Mocks the offline preview runs programs against: FAKE answers from gpufleet/engine/fakes/.

An invoke with no fake answer fails loudly, by name, rather than returning something made up.
"""

from __future__ import annotations

import os
from typing import Any

from google.protobuf import struct_pb2
from pulumi.runtime import MockCallArgs, MockResourceArgs, Mocks, rpc
from pulumi.runtime.mocks import MockMonitor, _resolve_callbacks
from pulumi.runtime.proto import resource_pb2
from pulumi.runtime.sync_await import _ensure_event_loop, _sync_await

from gpufleet.engine.fakes import CLOUDS
from gpufleet.engine.fakes.base import hex_id


class UnknownInvoke(RuntimeError):
    def __init__(self, token: str):
        super().__init__(f"the offline preview has no fake answer for invoke {token!r}; add one to INVOKES "
                         "in gpufleet/engine/fakes/<cloud>.py (with realistic values) or avoid the invoke")
        self.token = token


class FleetMocks(Mocks):
    """Answers resource creates and invokes for every cloud gpufleet builds."""

    def __init__(self) -> None:
        self.unknown_invokes: list[str] = []
        self.outputs = {k: v for cloud in CLOUDS for k, v in cloud.OUTPUTS.items()}
        self.invokes = {k: v for cloud in CLOUDS for k, v in cloud.INVOKES.items()}

    def new_resource(self, args: MockResourceArgs) -> tuple[str, dict[str, Any]]:
        rid = next((i for cloud in CLOUDS if (i := cloud.physical_id(args))), None)
        rid = rid or f"{args.name}-{hex_id(args.typ + args.name, 7)}"
        extra = self.outputs.get(args.typ)
        return rid, {**args.inputs, **(extra(args, rid) if extra else {})}

    def call(self, args: MockCallArgs) -> dict[str, Any]:  # type: ignore[override]
        answer = self.invokes.get(args.token)
        if answer is None:
            self.unknown_invokes.append(args.token)
            raise UnknownInvoke(args.token)
        return answer(args.args)


class FleetMonitor(MockMonitor):
    """The SDK's MockMonitor (pulumi 3.272), whose RegisterResource serializes a resource's outputs through the SDK's
    asynchronous serializer on an event loop of its own. Outputs of plain data (nearly all: FleetMocks echoes the
    inputs) go straight into the protobuf Struct, as that serializer would put them; anything else (unknowns,
    resource references, assets) still goes through it. GPUFLEET_SDK_MONITOR=1 keeps the SDK's own method (for
    benchmarks/preview_bench.py)."""

    def RegisterResource(self, request: Any) -> Any:
        if request.type == "pulumi:pulumi:Stack" or os.environ.get("GPUFLEET_SDK_MONITOR") == "1":
            return super().RegisterResource(request)
        urn = self.make_urn(request.parent, request.type, request.name)
        _ensure_event_loop()  # deserializing a resource reference needs one on this thread
        args = MockResourceArgs(typ=request.type, name=request.name, inputs=rpc.deserialize_properties(request.object),
                                provider=request.provider, resource_id=request.importId,
                                custom=request.custom or False, transforms=_resolve_callbacks(request.transforms))
        id_, state = self.mocks.new_resource(args)
        outputs = plain_struct(state)
        if outputs is None:
            outputs = _sync_await(rpc.serialize_properties(state, {}))
        self.resources[urn] = MockMonitor.ResourceRegistration(urn, id_, state)
        return resource_pb2.RegisterResourceResponse(urn=urn, id=id_, object=outputs)


_SCALARS = (str, bool, int, float, type(None))


def _plain(value: Any) -> bool:
    kind = type(value)
    if kind in _SCALARS:
        return True
    if kind is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    return kind is list and all(_plain(v) for v in value)


def plain_struct(state: dict[str, Any]) -> struct_pb2.Struct | None:
    """What rpc.serialize_properties(state, {}) gives for JSON data (exact types only; a top-level None is left out,
    nested ones kept), built directly; None when ``state`` holds anything else."""
    if not all(type(k) is str and _plain(v) for k, v in state.items()):
        return None
    struct = struct_pb2.Struct()
    for key, value in state.items():
        if value is not None:
            struct[key] = value
    return struct
