"""The Pulumi Mocks the offline preview runs programs against: FAKE answers from gpufleet/engine/fakes/.

An invoke with no fake answer fails loudly, by name, rather than returning something made up.
"""

from __future__ import annotations

from typing import Any

from pulumi.runtime import MockCallArgs, MockResourceArgs, Mocks

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
