"""The pack's analyzer: the policy SDK's own, decoding each resource's properties once per request, not once per
policy.

pulumi_policy's servicer (pulumi_policy/policy.py, Analyze and AnalyzeStack) turns a resource's properties, and its
provider's, from protobuf into Python (``json_format.MessageToDict``, then ``deserialize_properties``) inside its
loop over policies: with 33 policies, each resource is decoded about 30 times per Analyze and again per stack policy
in AnalyzeStack, which is ~90% of the pack's CPU on the example stacks. The decoded form depends only on the
message's bytes, so during one request it is kept, keyed by those bytes (deterministic serialization: equal content,
equal key). Everything else is the SDK's: each policy still gets its own unknown-checking proxy (fresh containers,
so what one policy does to its props no other sees), its own options, provider and config, in the SDK's order.
tests/policies/test_pack_serve.py holds the responses equal to the unmodified servicer's.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message
from pulumi_policy import policy as sdk
from pulumi_policy.deserialize import deserialize_properties

SdkServicer = sdk._PolicyAnalyzerServicer  # the analyzer the SDK's PolicyPack serves
_request = threading.local()  # the SDK serves requests on a thread pool: one memo per thread's current request


@contextmanager
def _decoding_once() -> Iterator[None]:
    _request.memo, _request.decoded = {}, {}
    try:
        yield
    finally:
        _request.memo = _request.decoded = None


def _message_to_dict(message: Message, *args: Any, **kwargs: Any) -> dict[str, Any]:
    memo = getattr(_request, "memo", None)
    if memo is None or args or kwargs:
        return json_format.MessageToDict(message, *args, **kwargs)
    key = message.SerializeToString(deterministic=True)
    if key not in memo:
        memo[key] = json_format.MessageToDict(message)
    return memo[key]


def _deserialize(props: dict[str, Any], proxy_secrets: bool = False) -> dict[str, Any]:
    """``deserialize_properties``, once per dict of this request (it reads its input and builds a new one)."""
    decoded = getattr(_request, "decoded", None)
    if decoded is None or proxy_secrets:
        return deserialize_properties(props, proxy_secrets)
    if id(props) not in decoded:  # the entry holds ``props``: while it lives, no other object has its id
        decoded[id(props)] = (props, deserialize_properties(props))
    return decoded[id(props)][1]


class _JsonFormat:
    """``json_format`` as pulumi_policy.policy sees it: MessageToDict memoised during a request, the rest as is."""

    MessageToDict = staticmethod(_message_to_dict)

    def __getattr__(self, name: str) -> Any:
        return getattr(json_format, name)


class Servicer(SdkServicer):
    """The SDK's servicer; Analyze and AnalyzeStack decode each distinct properties message once."""

    def Analyze(self, request: Any, context: Any) -> Any:  # the gRPC methods keep their names
        with _decoding_once():
            return super().Analyze(request, context)

    def AnalyzeStack(self, request: Any, context: Any) -> Any:
        with _decoding_once():
            return super().AnalyzeStack(request, context)


def install() -> None:
    """Make the SDK's PolicyPack serve ``Servicer``. Fails loudly if the SDK no longer decodes through the names
    replaced here (a different pulumi_policy layout): better no pack than a pack judging differently."""
    missing = [n for n in ("_PolicyAnalyzerServicer", "json_format", "deserialize_properties") if not hasattr(sdk, n)]
    if missing:
        raise RuntimeError(f"pulumi_policy {sdk.VERSION} has no {missing} in pulumi_policy.policy: "
                           "policies/serve.py needs updating for it")
    sdk.json_format = _JsonFormat()
    sdk.deserialize_properties = _deserialize
    sdk._PolicyAnalyzerServicer = Servicer
