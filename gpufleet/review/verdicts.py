"""The policy pack's verdicts on both sides of a change, judged while the previews still run.

Each side (head, base) gets a pack process of its own, started on a thread of its own when its first stack is handed
over; stacks are judged in the order they come. `gpufleet pr` hands each preview document over as soon as it is
ready, so the pack's work fills the cores the previews leave idle instead of following them. A verdict handed back
is always one on exactly the resources and config the report judges: an early judgement of anything else is
dropped and the stack judged again.

Held (``held=True``), nothing starts until ``release()``: `gpufleet pr` releases when the first head preview is
back, after gpufleet.engine.parallel has forked its workers. A fork while a thread speaks gRPC leaves the children
gRPC's locks in whatever state they were ("Other threads are currently calling into gRPC, skipping fork()").
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import cached_property
from pathlib import Path
from typing import Any

from gpufleet.engine.capture import Graph, Resource
from gpufleet.review.diff import StackDiff, resources_of

SIDES = ("head", "base")
Judged = tuple[list[Any] | None, list[Any] | None, str]  # head verdicts, base verdicts, note


def note(d: StackDiff) -> str:
    """Why a stack's verdicts are missing or incomplete ("" when they are whole)."""
    if d.failed:
        return "policy pack not run: the stack could not be previewed"
    if d.partial:
        return ("policy pack not run: the real preview lists only changed resources (no --show-sames), and stack "
                "policies judged on part of the graph would be wrong")
    if d.policy_config is None:
        return ("the fleet's policy config (budget, spot pools) is unknown for this preview: stack-monthly-budget "
                "and spot-only-where-allowed judge without it")
    return ""


class Judges:
    """Two policy packs, head and base, each judging the stacks handed to it on a thread of its own. Use as a
    context manager: leaving it stops the packs. ``enabled`` False judges nothing (``--no-policies``)."""

    def __init__(self, enabled: bool = True, user_config: Path | None = None, held: bool = False):
        self.enabled, self._user_config, self._held = enabled, user_config, held
        self._threads = {side: ThreadPoolExecutor(1, thread_name_prefix=f"pack-{side}") for side in SIDES}
        self._packs: dict[str, Any] = {}  # side -> its running pack, started by its thread
        self._judged: dict[tuple[str, str], tuple[list[Resource], Any, Future[list[Any]] | None]] = {}  # None: held
        self._lock = threading.Lock()  # stacks are handed over from the preview pool's thread too

    def submit(self, side: str, stack: str, resources: list[Resource], config: Mapping[str, Any] | None) -> None:
        """Judge ``resources`` of ``stack`` on ``side`` with the fleet's policy ``config`` (and the user's), unless
        exactly these are judged already."""
        with self._lock:
            early = self._judged.get((side, stack))
            if self.enabled and (early is None or early[0] != resources or early[1] != config):
                self._judged[(side, stack)] = (resources, config, self._start(side, stack, resources, config))

    def _start(self, side: str, stack: str, resources: list[Resource], config: Any) -> Future[list[Any]] | None:
        return None if self._held else self._threads[side].submit(self._judge, side, stack, resources, config)

    def release(self) -> None:
        """Start judging what was handed over while held."""
        with self._lock:
            self._held = False
            for key, (resources, config, future) in self._judged.items():
                if future is None:
                    self._judged[key] = (resources, config, self._start(*key, resources, config))

    def submit_document(self, side: str, document: Mapping[str, Any]) -> None:
        """Judge a preview document that can be judged (resources, no errors)."""
        if document.get("resources") and not document.get("errors"):
            self.submit(side, str(document["stack"]), resources_of(document), document.get("policy_config"))

    @cached_property
    def _user(self) -> Any:
        """The user's policy config, read once for every stack of both sides (a bad file fails each judgement, as
        before: the pack's note says why)."""
        from gpufleet.checks.analyzer import load_config

        return load_config(self._user_config) if self._user_config else None

    def _judge(self, side: str, stack: str, resources: list[Resource], config: Mapping[str, Any] | None) -> list[Any]:
        from gpufleet.checks.analyzer import PolicyPack, analyze, merge_config

        if side not in self._packs:
            self._packs[side] = PolicyPack()
        return analyze(Graph("gpufleet", stack, list(resources)), merge_config(config, self._user), self._packs[side])

    def verdicts(self, diffs: Sequence[StackDiff]) -> dict[str, Judged]:
        """stack -> (head verdicts, base verdicts, note). Each side runs with its fleet's policy config (budget, spot
        pools) merged under the user's: the configuration `gpufleet preview` and `gpufleet policy check` use. A pack
        that is missing or fails becomes the note: the report is made without it."""
        if not self.enabled:
            return {d.stack: (None, None, "policy pack not run (--no-policies)") for d in diffs}
        judged = [d for d in diffs if not (d.failed or d.partial)]
        self.release()
        for d in judged:  # every stack handed over before the first wait
            self.submit("head", d.stack, d.head, d.policy_config)
            if d.base:
                self.submit("base", d.stack, d.base, d.base_policy_config)
        try:
            found = {d.stack: (self._result("head", d.stack), self._result("base", d.stack) if d.base else [], note(d))
                     for d in judged}
        except Exception as err:  # the pack is optional here: report why it is missing, never fail the comment
            return {d.stack: (None, None, f"policy pack not run: {err}") for d in diffs}
        return {d.stack: found.get(d.stack) or (None, None, note(d)) for d in diffs}

    def _result(self, side: str, stack: str) -> list[Any]:
        with self._lock:
            future = self._judged[(side, stack)][2]
        assert future is not None  # released before any result is read
        return future.result()

    def close(self) -> None:
        for thread in self._threads.values():
            thread.shutdown(wait=True, cancel_futures=True)
        for pack in self._packs.values():
            pack.close()

    def __enter__(self) -> Judges:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
