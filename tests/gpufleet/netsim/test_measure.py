"""`gpufleet netsim measure` for real: namespaces, veths, tc shaping and TCP traffic on this machine.

Needs root (CI runs as root) and iproute2; skipped otherwise, with the reason. Expected times are computed by
hand in the comments, never taken from the model module.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.netsim import measure as measure_mod
from gpufleet.netsim.model import Link
from gpufleet.netsim.netns import PREFIX, Ring, namespaces, remove_stale

ROOT = Path(__file__).resolve().parents[3]
pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="building network namespaces needs root (CI runs as root)"),
    pytest.mark.skipif(not (shutil.which("ip") and shutil.which("tc")), reason="iproute2 (ip, tc) is not installed"),
]
MIB = 1024 * 1024


def _namespaces_work() -> str | None:
    """Why this machine cannot build network namespaces (a container without the rights), or None."""
    name = f"{PREFIX}{os.getpid()}xprobe00-w0"
    done = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True) if os.geteuid() == 0 \
        and shutil.which("ip") else None
    if done is None:
        return None  # the marks above skip with their own reason
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    return None if done.returncode == 0 else f"`ip netns add` fails here: {done.stderr.strip()}"


_CANNOT = _namespaces_work()
pytestmark.append(pytest.mark.skipif(_CANNOT is not None, reason=_CANNOT or ""))


def ours(prefix: str) -> list[str]:
    return [n for n in namespaces() if n.startswith(prefix)]


def test_three_workers_on_a_rate_limited_profile() -> None:
    # the dev stack's lab-20mbps profile: bandwidth_mbps 20, nothing else
    result = CliRunner().invoke(app, ["netsim", "measure", "--profile", "lab-20mbps", "--stack", "dev",
                                      "--workers", "3", "--bytes", "1MiB", "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["schema"] == "gpufleet.netsim.measure/v1" and doc["reduced_ok"]
    assert set(doc["applied"]) == {"bandwidth_mbps"} and doc["not_applied"] == {}
    # goodput of one TCP flow through a 20 Mbit/s token bucket: at most the rate, at least half of it
    assert 10 <= doc["goodput_mbps"] <= 20
    # ring all-reduce, 3 workers, 1 MiB: 2*2/3 * 1,048,576 B * 8 / 20e6 b/s = 0.559241 s (no delay applied)
    assert doc["allreduce_s"] == pytest.approx(0.559241, rel=0.30), doc
    assert doc["namespace_prefix"].startswith(PREFIX) and ours(doc["namespace_prefix"]) == []


def test_delay_and_loss_where_the_kernel_has_netem() -> None:
    with Ring(2) as ring:
        netem = ring.has_netem()
    if not netem:
        pytest.skip("this kernel has no netem qdisc (`tc qdisc add ... netem` fails): delay, jitter and loss "
                    "cannot be emulated here, and measure reports them as not applied")
    result = measure_mod.run_measure("t-wan", Link(bandwidth_mbps=20, latency_ms=10, loss_pct=0.5), 3, MIB, MIB)
    assert {"bandwidth_mbps", "latency_ms", "loss_pct"} <= set(result.applied) and not result.not_applied
    # 4 steps x 10 ms + 0.559241 s = 0.599241 s; loss slows TCP further, so only a lower bound here
    assert result.allreduce_s >= 0.599241 * 0.9
    # a transfer takes at least the handshake's and the acknowledgement's round trips: 2 x 20 ms
    assert result.checkpoint_s >= 0.040 and result.goodput_mbps <= 20
    assert ours(result.namespace_prefix) == []


def test_without_netem_delay_and_loss_are_reported_not_applied() -> None:
    with Ring(2) as ring:
        netem = ring.has_netem()
    if netem:
        pytest.skip("this kernel has netem: the profile is applied whole (see the test above)")
    result = measure_mod.run_measure("t-wan", Link(bandwidth_mbps=100, latency_ms=20, jitter_ms=2, loss_pct=1),
                                     2, 1 << 20, 1 << 20)
    assert set(result.applied) == {"bandwidth_mbps"}
    assert set(result.not_applied) == {"latency_ms", "jitter_ms", "loss_pct"}
    assert all("no netem qdisc" in why for why in result.not_applied.values())
    # compared with the applied parts only: 2 workers, 1 MiB: 1 * 8,388,608 b / 100e6 b/s = 0.0838861 s
    assert result.model.allreduce_s == pytest.approx(0.0838861, rel=1e-6)
    # and the whole profile, for the user: RTT 40 ms, Mathis 1448*8/0.04*1.2247449/0.1 = 3,546,861 b/s
    assert result.model_profile.goodput_mbps == pytest.approx(3.546861, rel=1e-6)


def test_namespaces_are_deleted_when_a_run_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    def broken(ring: Ring, *args: object) -> list[dict]:
        seen.append(ring.prefix)
        assert len(ours(ring.prefix)) == 2  # both workers exist while running
        raise RuntimeError("worker crashed")

    monkeypatch.setattr(measure_mod, "_run_workers", broken)
    with pytest.raises(RuntimeError, match="worker crashed"):
        measure_mod.run_measure("t", Link(bandwidth_mbps=10), 2, 1000, 1000)
    assert seen and ours(seen[0]) == []


def test_namespaces_are_deleted_on_sigterm() -> None:
    # 64 MiB at 20 Mbit/s would take ~36 s: the run is still going when it is terminated
    proc = subprocess.Popen([sys.executable, "-m", "gpufleet.netsim.cli", "measure", "--profile", "lab-20mbps",
                             "--stack", "dev", "--bytes", "64MiB", "--timeout-s", "60"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"})
    assert proc.stdout is not None
    prefix = None
    deadline = time.monotonic() + 30
    while prefix is None and time.monotonic() < deadline:
        line = proc.stdout.readline()
        match = re.search(rf"\(({PREFIX}\d+x[0-9a-f]+)-\*\)", line)
        prefix = match[1] if match else None
        assert line or proc.poll() is None, "measure ended before building its namespaces"
    assert prefix and ours(prefix)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 128 + signal.SIGTERM
    assert ours(prefix) == []


def test_namespaces_of_a_killed_run_are_removed_by_the_next() -> None:
    dead = next(pid for pid in range(4_000_000, 4_100_000) if not os.path.exists(f"/proc/{pid}"))
    name = f"{PREFIX}{dead}xdead00-w0"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        assert name in remove_stale()
        assert name not in namespaces()
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


def test_refuses_without_the_rights_it_needs() -> None:
    if not shutil.which("setpriv"):
        pytest.skip("setpriv (util-linux) is not installed: cannot drop capabilities for this test")
    done = subprocess.run(["setpriv", "--bounding-set=-net_admin,-sys_admin", "--inh-caps=-net_admin,-sys_admin",
                           sys.executable, "-m", "gpufleet.netsim.cli", "measure", "--profile", "lab-50mbps"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"})
    assert done.returncode == 4, done.stdout + done.stderr
    message = " ".join(done.stderr.split())
    assert "needs root (or CAP_NET_ADMIN and CAP_SYS_ADMIN)" in message and "sudo" in message
