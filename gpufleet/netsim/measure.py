"""`gpufleet netsim measure`: real traffic between worker processes in shaped network namespaces, next to the
model's prediction for the parts of the profile the kernel could apply."""

from __future__ import annotations

import json
import math
import os
import selectors
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from gpufleet.netsim.model import Estimate, Link, estimate
from gpufleet.netsim.netns import Ring, missing_rights, remove_stale

SCHEMA = "gpufleet.netsim.measure/v1"
MAX_BYTES = 1 << 30  # bounded traffic: at most 1 GiB per all-reduce buffer and per checkpoint
ROOT = Path(__file__).resolve().parents[2]  # the checkout, so workers import this same code


class MeasureRefused(RuntimeError):
    """The measurement cannot run here (rights, tools, bounds): the message says why and what to do."""


@dataclass(frozen=True)
class Measurement:
    profile: str
    workers: int
    allreduce_bytes: int
    checkpoint_bytes: int
    applied: dict[str, str]  # profile field -> how it was applied
    not_applied: dict[str, str]  # profile field -> why not
    allreduce_s: float  # from the moment the last worker started to the moment the last one finished
    checkpoint_s: float  # connect, send, receiver's acknowledgement
    goodput_mbps: float  # checkpoint payload bits / time from connected to acknowledged
    reduced_ok: bool  # every worker ended with the right reduction
    model: Estimate  # the model for the applied parts only: what the measurement is compared with
    model_profile: Estimate  # the model for the whole profile
    namespace_prefix: str

    @property
    def allreduce_ratio(self) -> float:
        return self.allreduce_s / self.model.allreduce_s if self.model.allreduce_s else math.inf

    def document(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["allreduce_ratio"] = self.allreduce_ratio
        return {"schema": SCHEMA, **doc}


def check_can_run(workers: int, allreduce_bytes: int, checkpoint_bytes: int) -> None:
    reason = missing_rights()
    if reason is None:
        missing = [tool for tool in ("ip", "tc") if shutil.which(tool) is None]
        if missing:
            reason = f"{' and '.join(missing)} not found: install iproute2 (apt-get install iproute2)."
    if reason is None and workers < 2:
        reason = f"a ring needs at least 2 workers; got {workers}."
    largest = max(allreduce_bytes, checkpoint_bytes)
    if reason is None and largest > MAX_BYTES:
        reason = f"at most {MAX_BYTES:,} bytes per buffer (traffic is bounded); got {largest:,}."
    if reason:
        raise MeasureRefused(reason)


@contextmanager
def _exit_on_signals() -> Iterator[None]:
    """SIGTERM / SIGHUP unwind like Ctrl-C, so every namespace is deleted on the way out."""
    def stop(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def run_measure(profile: str, link: Link, workers: int, allreduce_bytes: int, checkpoint_bytes: int,
            timeout_s: float = 60, progress: Callable[[str], None] = lambda _: None) -> Measurement:
    """Build the namespaces, shape them, run the traffic, delete everything; raise MeasureRefused if it cannot."""
    check_can_run(workers, allreduce_bytes, checkpoint_bytes)
    remove_stale()
    with _exit_on_signals(), Ring(workers) as ring:
        progress(f"built {workers} worker namespaces ({ring.prefix}-*) in a ring of veth links")
        netem = ring.has_netem()
        applied = ring.shape(link, netem)
        not_applied = {k: "this kernel has no netem qdisc (`tc qdisc add ... netem` failed), so it is not emulated"
                       for k in ("latency_ms", "jitter_ms", "loss_pct") if getattr(link, k) > 0 and not netem}
        progress("shaped: " + (", ".join(applied) or "nothing") + (f"; not applied: {', '.join(not_applied)}"
                                                                     if not_applied else ""))
        results = _run_workers(ring, allreduce_bytes, checkpoint_bytes, timeout_s, progress)
    effective = replace(link, **{k: 0.0 for k in not_applied})
    sender = results[0]
    started, finished = max(r["start"] for r in results), max(r["end"] for r in results)
    return Measurement(
        profile=profile, workers=workers, allreduce_bytes=allreduce_bytes, checkpoint_bytes=checkpoint_bytes,
        applied=applied, not_applied=not_applied, allreduce_s=finished - started,
        checkpoint_s=sender["checkpoint_s"], goodput_mbps=checkpoint_bytes * 8 / sender["checkpoint_data_s"] / 1e6,
        reduced_ok=all(r["reduced_ok"] for r in results),
        model=estimate(effective, workers, allreduce_bytes, checkpoint_bytes),
        model_profile=estimate(link, workers, allreduce_bytes, checkpoint_bytes), namespace_prefix=ring.prefix)


def _run_workers(ring: Ring, nbytes: int, checkpoint_bytes: int, timeout_s: float,
                 progress: Callable[[str], None]) -> list[dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    procs = []
    try:
        for i in range(ring.workers):
            procs.append(subprocess.Popen(
                ["ip", "netns", "exec", ring.worker(i), sys.executable, "-m", "gpufleet.netsim.worker",
                 "--rank", str(i), "--workers", str(ring.workers), "--bytes", str(nbytes),
                 "--checkpoint-bytes", str(checkpoint_bytes), "--right", ring.right_address(i),
                 "--timeout-s", str(timeout_s)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
        deadline = time.monotonic() + timeout_s
        _await_lines(procs, "ready", deadline)
        progress("workers connected in a ring; running the all-reduce and the checkpoint transfer")
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        return [json.loads(line) for line in _await_lines(procs, None, deadline)]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()


def _await_lines(procs: list[subprocess.Popen[str]], expect: str | None, deadline: float) -> list[str]:
    """One stdout line from each worker (equal to ``expect`` if given), or an error with the worker's stderr."""
    lines: dict[int, str] = {}
    with selectors.DefaultSelector() as sel:
        for i, p in enumerate(procs):
            sel.register(p.stdout, selectors.EVENT_READ, i)  # type: ignore[arg-type]
        while len(lines) < len(procs):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise MeasureRefused(f"workers did not finish within the timeout ({len(lines)}/{len(procs)} "
                                     "answered); raise --timeout-s or lower --bytes.")
            for key, _ in sel.select(remaining):
                i = key.data
                line = procs[i].stdout.readline().strip()  # type: ignore[union-attr]
                sel.unregister(key.fileobj)
                if not line or (expect and line != expect):
                    procs[i].kill()
                    err = procs[i].stderr.read().strip().splitlines()  # type: ignore[union-attr]
                    raise MeasureRefused(f"worker {i} failed: {err[-1] if err else line or 'no output'}")
                lines[i] = line
    return [lines[i] for i in range(len(procs))]
