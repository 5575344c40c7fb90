"""FAKE answers for pulumi-random: a RandomPassword's result, derived from its name (never a real password; the
program marks it secret, so the preview shows [secret])."""

from __future__ import annotations

from typing import Any

from pulumi.runtime import MockResourceArgs

from gpufleet.engine.fakes.base import hex_id


def _password(a: MockResourceArgs, rid: str) -> dict[str, Any]:
    length = int(a.inputs.get("length", 16))
    return {"result": ("FAKE" + hex_id(a.name, 64))[:length]}


OUTPUTS = {"random:index/randomPassword:RandomPassword": _password}
INVOKES: dict[str, Any] = {}


def physical_id(args: MockResourceArgs) -> str | None:
    return None
