"""Stacks previewed in parallel processes come back in the order they were named, whatever order they finish in,
and a failing program comes back as its ProgramError. The preview itself is replaced by a FAKE (forked children
inherit the patch) so this stays fast; the real previews' identity is checked by `make bench`."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gpufleet.engine import parallel
from gpufleet.engine.capture import ProgramError
from gpufleet.engine.preview import Preview


def fake_preview(name: str, stacks_dir: Path, processes: int = 1) -> Preview:  # FAKE: the first stack finishes last
    time.sleep({"a": 0.6, "b": 0.0, "c": 0.2}.get(name, 0.0))
    if name == "boom":
        raise ProgramError("the stack program failed under the offline preview: boom", 3)
    return Preview(stack=name, errors=[f"from {stacks_dir}"])


def test_results_keep_the_named_order_and_failures(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(parallel, "preview_stack", fake_preview)
    lines: list[str] = []
    got = list(parallel.preview_many(["a", "boom", "b", "c"], tmp_path, jobs=2, progress=lines.append))
    assert [n for n, _ in got] == ["a", "boom", "b", "c"]
    assert [r.stack for n, r in got if isinstance(r, Preview)] == ["a", "b", "c"]
    assert isinstance(got[1][1], ProgramError) and "boom" in str(got[1][1])
    assert got[0][1].errors == [f"from {tmp_path}"]
    assert lines[0] == "previewing 4 stacks, 2 at a time…" and len(lines) == 5
    serial = list(parallel.preview_many(["a", "b"], tmp_path, jobs=1))
    assert [r.stack for _, r in serial] == ["a", "b"]


def test_one_stack_alone_gets_the_processes_for_its_clusters(monkeypatch: pytest.MonkeyPatch,
                                                            tmp_path: Path) -> None:
    """Several stacks take a process each and run their clusters in one; a stack alone may run its clusters in
    shares, one per process it is given (gpufleet/engine/shares.py)."""
    given: dict[str, int] = {}

    def recording_preview(name: str, stacks_dir: Path, processes: int = 1) -> Preview:  # FAKE: notes its processes
        given[name] = processes
        return Preview(stack=name)

    monkeypatch.setattr(parallel, "preview_stack", recording_preview)
    for jobs in (0, 1, 3):
        list(parallel.preview_many([f"alone-{jobs}"], tmp_path, jobs=jobs))
    list(parallel.preview_many(["x", "y"], tmp_path, jobs=1))
    assert given == {"alone-0": 0, "alone-1": 1, "alone-3": 3, "x": 1, "y": 1}


@pytest.mark.parametrize(("jobs", "stacks", "expected"), [(1, 4, 1), (3, 2, 2), (2, 4, 2), (5, 1, 1)])
def test_workers_never_exceed_the_stacks(jobs: int, stacks: int, expected: int) -> None:
    assert parallel.workers(jobs, stacks) == expected



def waiting_preview(name: str, stacks_dir: Path, processes: int = 1) -> Preview:  # FAKE: "a" waits for "b"
    handed = stacks_dir / "b-handed-over"
    deadline = time.monotonic() + 60
    while name == "a" and not handed.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return Preview(stack=name, errors=[] if name != "a" or handed.exists() else ["b was not handed over"])


def test_each_result_is_handed_over_as_it_finishes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`gpufleet pr` starts judging a stack on ``on_result`` while the others still run: "a" is yielded first,
    but finishes only once "b" has been handed over."""
    monkeypatch.setattr(parallel, "preview_stack", waiting_preview)
    finished: list[str] = []

    def hand_over(result: parallel.Result) -> None:
        assert isinstance(result, Preview)
        finished.append(result.stack)
        if result.stack == "b":
            (tmp_path / "b-handed-over").touch()

    got = list(parallel.preview_many(["a", "b"], tmp_path, jobs=2, on_result=hand_over))
    assert [n for n, _ in got] == ["a", "b"] and got[0][1].errors == []
    assert finished == ["b", "a"]
    serial: list[str] = []
    list(parallel.preview_many(["c", "d"], tmp_path, jobs=1, on_result=lambda r: serial.append(r.stack)))
    assert serial == ["c", "d"]
