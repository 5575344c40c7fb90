"""Protobuf Structs (the wire form of resource properties) read and written in one pass, exactly as the SDK's
serializer writes them, its deserializer reads them and json_format reads them, for plain JSON data; anything the SDK
encodes specially (unknowns, secrets, resource references, assets, output values) is left to the SDK (None back).
Held to the SDK's own functions by tests/gpufleet/test_engine_levers.py."""

from __future__ import annotations

from typing import Any

from google.protobuf import struct_pb2
from pulumi.runtime import rpc


def from_struct(struct: struct_pb2.Struct) -> dict[str, Any]:
    """A Struct's values as JSON values, in the Struct's own order: what json_format.MessageToDict gives (which
    refuses an infinite number; here it is read as one)."""
    return {key: _value(value) for key, value in struct.fields.items()}


def _value(value: struct_pb2.Value) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        return value.string_value
    if kind == "struct_value":
        return {k: _value(v) for k, v in value.struct_value.fields.items()}
    if kind == "list_value":
        return [_value(v) for v in value.list_value.values]
    if kind == "number_value":
        return value.number_value
    if kind == "bool_value":
        return value.bool_value
    return None


class _Special(Exception):
    """Not plain JSON data, or a value the SDK's deserializer reads specially."""


def as_read(data: dict[str, Any]) -> dict[str, Any] | None:
    """What rpc.deserialize_properties gives for ``data`` serialized into a Struct: every number a float, a property
    that is None left out (in objects at every level; kept in lists). None when ``data`` holds anything but plain JSON
    data, or a signature dict or unknown."""
    try:
        return _read(data)
    except _Special:
        return None


def _read(value: Any) -> Any:
    kind = type(value)
    if kind is str:
        if value == rpc.UNKNOWN:
            raise _Special
        return value
    if kind is dict:
        if rpc._special_sig_key in value:
            raise _Special
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _Special
            if (read := _read(item)) is not None:
                out[key] = read
        return out
    if kind is list:
        return [_read(v) for v in value]
    if kind is int:
        return float(value)
    if kind is float or kind is bool or value is None:
        return value
    raise _Special


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
