"""The offline preview's speed levers change how the SDK runs, never what a preview records (their speed is measured in
benchmarks/preview_bench.py): outputs built straight into a Struct are the SDK serializer's, byte for byte; the
collector is off only while a program runs, and back on after it, whatever happened; a URN built directly is the
one the SDK builds; a monitor call answered in the loop, a type unwrapped once, a request read once and a Struct
read in one pass give the graph the SDK's defaults give."""

from __future__ import annotations

import asyncio
import gc
import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format, struct_pb2
from hypothesis import given, settings
from hypothesis import strategies as st
from pulumi import _types as sdk_types
from pulumi.output import Unknown
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import resource as sdk_resource
from pulumi.runtime import rpc
from pulumi.runtime.sync_await import _sync_await

from gpufleet.engine import levers
from gpufleet.engine.capture import ProgramError, run_program
from gpufleet.engine.mocks import FleetMocks
from gpufleet.engine.preview import preview_stack
from gpufleet.engine.structs import as_read, from_struct, plain_struct
from stacks.config import STACKS_DIR

sdk_create_urn = sdk_resource.create_urn
sdk_deserialize = rpc.deserialize_properties

scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False) | st.text(max_size=8)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=20)


def sdk_struct(state: dict[str, Any]) -> bytes:
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(rpc.serialize_properties(state, {})).SerializeToString(deterministic=True)
    finally:
        loop.close()


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=6), json_values, max_size=6))
def test_plain_outputs_are_what_the_sdk_serializer_gives(state: dict[str, Any]) -> None:
    struct = plain_struct(state)
    assert struct is not None
    assert struct.SerializeToString(deterministic=True) == sdk_struct(state)


def test_top_level_none_is_left_out_and_nested_none_kept() -> None:  # as the SDK serializer does (checked above)
    struct = plain_struct({"gone": None, "kept": {"inner": None}, "list": [None]})
    assert struct is not None
    assert set(struct.keys()) == {"kept", "list"}
    assert struct["kept"]["inner"] is None and list(struct["list"]) == [None]


@pytest.mark.parametrize("value", [Unknown(), ("a", "tuple"), {"nested": [Unknown()]}, {1: "int key"}, b"bytes"])
def test_anything_but_plain_data_is_left_to_the_sdk(value: Any) -> None:
    assert plain_struct({"key": value}) is None


PROGRAM = """\
import gc
import pulumi

pulumi.CustomResource("test:index:Thing", "probe", props={"collecting": gc.isenabled()})
"""

FAILING = """\
import pulumi

pulumi.CustomResource("test:index:Thing", "bad", props={"a": pulumi.Output.from_input(1).apply(lambda _: 1 / 0)})
"""


@pytest.fixture
def exits_after_previews(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(levers, "_exits_after_previews", True)
    yield
    gc.unfreeze()


def collecting_during(program: Path) -> bool:
    [resource] = run_program("test", {}, program).resources
    return bool(resource.inputs["collecting"])


def test_no_collection_while_the_program_runs_and_on_again_after(tmp_path: Path) -> None:
    (tmp_path / "probe.py").write_text(PROGRAM)
    assert gc.isenabled()
    assert collecting_during(tmp_path / "probe.py") is False
    assert gc.isenabled()


def test_sdk_defaults_keep_the_collector_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "probe.py").write_text(PROGRAM)
    monkeypatch.setenv("GPUFLEET_GC_DEFAULTS", "1")
    assert collecting_during(tmp_path / "probe.py") is True


def test_on_again_after_a_failed_program(tmp_path: Path) -> None:
    (tmp_path / "failing.py").write_text(FAILING)
    (tmp_path / "probe.py").write_text(PROGRAM)
    with pytest.raises(ProgramError):
        run_program("test", {}, tmp_path / "failing.py")
    assert gc.isenabled()
    assert collecting_during(tmp_path / "probe.py") is False  # and the next run (which drops the failed one's outputs)
    gc.collect()  # the failed run's futures go here, not at exit ("exception never retrieved" on stderr)


def test_a_long_process_leaves_the_run_to_the_collector(tmp_path: Path) -> None:
    (tmp_path / "probe.py").write_text(PROGRAM)
    frozen = gc.get_freeze_count()
    run_program("test", {}, tmp_path / "probe.py")
    assert gc.get_freeze_count() == frozen


def test_the_cli_process_freezes_what_a_run_made(tmp_path: Path, exits_after_previews: None) -> None:
    (tmp_path / "probe.py").write_text(PROGRAM)
    frozen = gc.get_freeze_count()
    run_program("test", {}, tmp_path / "probe.py")
    assert gc.get_freeze_count() > frozen


async def facts(urn: Any) -> tuple[Any, ...]:
    return await urn.future(), await urn.is_known(), await urn.is_secret(), await urn.resources()


@pytest.mark.parametrize("parent", [None, "", "urn:pulumi:s::p::a:b:C::up", "urn:pulumi:s::p::x:y:Z$a:b:C::up"])
@pytest.mark.parametrize(("project", "stack"), [(None, None), ("other-project", "other-stack")])
def test_direct_urns_are_the_sdks(parent: str | None, project: str | None, stack: str | None) -> None:
    previous = asyncio.get_event_loop_policy().get_event_loop()
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    pulumi_mocks.set_mocks(FleetMocks(), project="gpufleet", stack="test", preview=True)
    try:
        sdk = sdk_resource.create_urn("name", "a:b:C", parent, project, stack)
        with levers.direct_urns():
            direct = sdk_resource.create_urn("name", "a:b:C", parent, project, stack)
            assert direct is not sdk and sdk_resource.create_urn is not sdk_create_urn
        assert loop.run_until_complete(facts(direct)) == loop.run_until_complete(facts(sdk))
        assert sdk_resource.create_urn is sdk_create_urn  # put back
    finally:
        loop.close()
        asyncio.set_event_loop(previous)


def answered_in(loop: asyncio.AbstractEventLoop, call: Any, executor: Any = None) -> Any:
    async def ask() -> Any:
        return await loop.run_in_executor(executor, call)
    return loop.run_until_complete(ask())


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    levers.calls_in_the_loop(loop)
    yield loop
    loop.run_until_complete(loop.shutdown_default_executor())
    loop.close()


def test_a_monitor_call_runs_in_the_loops_thread(loop: asyncio.AbstractEventLoop) -> None:
    assert answered_in(loop, threading.get_ident) == threading.get_ident()


def test_a_call_made_while_another_runs_goes_to_the_sdks_threads(loop: asyncio.AbstractEventLoop) -> None:
    """The SDK's mock monitor pumps the loop (_sync_await) inside a call; what that pumping asks for is sent to a
    thread, as the SDK would, so the nesting stays one deep."""
    def outer() -> int:
        return _sync_await(loop.run_in_executor(None, threading.get_ident))
    assert answered_in(loop, outer) != threading.get_ident()


def test_a_failed_call_fails_its_awaiter_and_the_next_call_runs_inline(loop: asyncio.AbstractEventLoop) -> None:
    with pytest.raises(ZeroDivisionError):
        answered_in(loop, lambda: 1 / 0)
    assert answered_in(loop, threading.get_ident) == threading.get_ident()


def test_a_named_executor_and_the_sdk_default_keep_their_threads(loop: asyncio.AbstractEventLoop,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    with ThreadPoolExecutor(1) as pool:
        assert answered_in(loop, threading.get_ident, pool) != threading.get_ident()
    monkeypatch.setenv("GPUFLEET_SDK_THREADS", "1")
    sdk_loop = asyncio.new_event_loop()
    levers.calls_in_the_loop(sdk_loop)
    try:
        assert answered_in(sdk_loop, threading.get_ident) != threading.get_ident()
    finally:
        sdk_loop.run_until_complete(sdk_loop.shutdown_default_executor())
        sdk_loop.close()


def test_each_type_unwrapped_once_is_the_sdks_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every type the SDK unwraps while previewing aws-train, answered by the kept table and afresh by the SDK."""
    sdk_unwrap_type = sdk_types.unwrap_type
    asked: list[Any] = []

    def recording(val: Any) -> Any:
        asked.append(val)
        return sdk_unwrap_type(val)

    monkeypatch.setattr(sdk_types, "unwrap_type", recording)
    with levers.type_unwrapping_once():
        kept = sdk_types.unwrap_type
        preview_stack("aws-train", STACKS_DIR)
        assert asked and len(asked) == len(set(asked))  # each distinct type reaches the SDK once
        assert all(kept(val) == sdk_unwrap_type(val) for val in set(asked))
    assert sdk_types.unwrap_type is recording  # the SDK's own function is back after the run


def test_an_unhashable_annotation_is_answered_by_the_sdk_each_time(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    monkeypatch.setattr(sdk_types, "unwrap_type", lambda val: calls.append(val) or "answer")
    with levers.type_unwrapping_once():
        assert [sdk_types.unwrap_type(["not", "hashable"]) for _ in range(2)] == ["answer", "answer"]
        assert [sdk_types.unwrap_type(int) for _ in range(2)] == ["answer", "answer"]
    assert calls == [["not", "hashable"], ["not", "hashable"], int]


@pytest.mark.parametrize("lever", ["GPUFLEET_SDK_THREADS", "GPUFLEET_SDK_TYPES", "GPUFLEET_SDK_MONITOR",
                                   "GPUFLEET_SDK_READER"])
@pytest.mark.parametrize("stack", ["aws-train", "fleet"])
def test_an_example_stack_records_the_same_graph_with_the_sdks_default(stack: str, lever: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    ours = json.dumps(preview_stack(stack, STACKS_DIR).document())  # as text: 1 and 1.0 differ there
    monkeypatch.setenv(lever, "1")
    assert json.dumps(preview_stack(stack, STACKS_DIR).document()) == ours


def typed(value: Any) -> str:
    """``value`` as text that tells 1 from 1.0 and keeps key order (== would not)."""
    return json.dumps(value)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=6), json_values, max_size=6))
def test_a_struct_read_in_one_pass_is_what_the_sdk_deserializer_reads(state: dict[str, Any]) -> None:
    struct = struct_pb2.Struct()
    struct.ParseFromString(sdk_struct(state))
    sdk = typed(rpc.deserialize_properties(struct, keep_unknowns=True))
    with levers.structs_read_in_one_pass():
        assert rpc.deserialize_properties is not sdk_deserialize
        assert typed(rpc.deserialize_properties(struct, keep_unknowns=True)) == sdk
    assert rpc.deserialize_properties is sdk_deserialize


def test_special_structs_and_internal_keys_are_read_by_the_sdk() -> None:
    secret = struct_pb2.Struct()
    secret.update({"password": {rpc._special_sig_key: rpc._special_secret_sig, "value": "hunter2"}, "__meta": 1})
    with levers.structs_read_in_one_pass():
        read = rpc.deserialize_properties(secret)
        assert rpc.is_rpc_secret(read["password"]) and read["__meta"] == 1.0
        assert "__meta" not in rpc.deserialize_properties(secret, keep_internal=False)


def test_the_sdks_reader_on_its_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUFLEET_SDK_READER", "1")
    with levers.structs_read_in_one_pass():
        assert rpc.deserialize_properties is sdk_deserialize


finite_values = st.recursive(scalars.filter(lambda v: v not in (float("inf"), float("-inf"))),
                             lambda inner: st.lists(inner, max_size=4)
                             | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=20)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=6), finite_values, max_size=6))  # json_format refuses infinities
def test_properties_read_once_are_the_sdks_readings(state: dict[str, Any]) -> None:
    """One pass over a request's Struct gives what json_format (the recording) and the SDK's deserializer (the
    mock's inputs) each read from it."""
    struct = struct_pb2.Struct()
    struct.ParseFromString(sdk_struct(state))
    sent = from_struct(struct)
    assert typed(sent) == typed(json_format.MessageToDict(struct, preserving_proto_field_name=True))
    assert typed(as_read(sent)) == typed(rpc.deserialize_properties(struct))


@pytest.mark.parametrize("value", [Unknown(), rpc.UNKNOWN, [rpc.UNKNOWN], {rpc._special_sig_key: "x", "value": 1},
                                   {"a": {rpc._special_sig_key: "x"}}, ("a", "tuple"), {1: "int key"}, b"bytes"])
def test_special_values_are_read_by_the_sdk(value: Any) -> None:
    assert as_read({"key": value}) is None
