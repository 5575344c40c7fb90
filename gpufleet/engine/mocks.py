"""The Pulumi Mocks the offline preview runs programs against: FAKE answers from gpufleet/engine/fakes/.

An invoke with no fake answer fails loudly, by name, rather than returning something made up.
"""

from __future__ import annotations

import os
from typing import Any

from pulumi.runtime import MockCallArgs, MockResourceArgs, Mocks, rpc
from pulumi.runtime.mocks import MockMonitor, _resolve_callbacks
from pulumi.runtime.proto import resource_pb2
from pulumi.runtime.sync_await import _ensure_event_loop, _sync_await

from gpufleet.engine.fakes import CLOUDS
from gpufleet.engine.fakes.base import hex_id
from gpufleet.engine.structs import as_read, from_struct, plain_struct


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
    """The SDK's MockMonitor (pulumi 3.272), whose RegisterResource deserializes the request's properties, then
    serializes a resource's outputs through the SDK's asynchronous serializer on an event loop of its own. Here the
    request's properties are read from the protobuf once (``sent``, kept for the recording monitor, which read them a
    second time through json_format), and outputs of plain data (nearly all: FleetMocks echoes the inputs) go straight
    into the protobuf Struct, as that serializer would put them (gpufleet/engine/structs.py); anything else
    (unknowns, resource references, assets) still goes through it. GPUFLEET_SDK_MONITOR=1 keeps the SDK's own method
    (for benchmarks/preview_bench.py)."""

    def RegisterResource(self, request: Any) -> Any:
        return self.register(request)[0]

    def register(self, request: Any) -> tuple[Any, dict[str, Any] | None]:
        """The response, and the request's properties as sent (JSON values, every number a float, special values in
        their signature dicts); None when the SDK's own method answered."""
        if request.type == "pulumi:pulumi:Stack" or os.environ.get("GPUFLEET_SDK_MONITOR") == "1":
            return super().RegisterResource(request), None
        urn = self.make_urn(request.parent, request.type, request.name)
        sent = from_struct(request.object)
        inputs = as_read(sent)
        if inputs is None:  # special values: the SDK's deserializer reads them
            _ensure_event_loop()  # deserializing a resource reference needs one on this thread
            inputs = rpc.deserialize_properties(request.object)
        args = MockResourceArgs(typ=request.type, name=request.name, inputs=inputs, provider=request.provider,
                                resource_id=request.importId, custom=request.custom or False,
                                transforms=_resolve_callbacks(request.transforms))
        id_, state = self.mocks.new_resource(args)
        outputs = plain_struct(state)
        if outputs is None:
            outputs = _sync_await(rpc.serialize_properties(state, {}))
        self.resources[urn] = MockMonitor.ResourceRegistration(urn, id_, state)
        return resource_pb2.RegisterResourceResponse(urn=urn, id=id_, object=outputs), sent
