"""Linux network namespaces for `gpufleet netsim measure`: N workers in a ring of veth links shaped with tc.

Layout: worker i has its own namespace; link i is a veth pair from worker i's ``right`` (10.77.<i>.1/24) to
worker i+1's ``left`` (10.77.<i>.2/24). Both ends' egress are shaped, so each direction of each link has the
profile's rate and one-way delay (RTT = 2 x latency_ms). A ring step sends data right and acknowledgements left,
on different links, as on full-duplex point-to-point links: acknowledgements never queue behind data (on one
shared, shaped interface they did, and cost a third of the throughput under load). Every address lives inside
namespaces this module created; every name starts with a per-run prefix and is deleted on exit.
"""

from __future__ import annotations

import os
import re
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from components.network_profiles import shaper_bytes
from gpufleet.netsim.model import Link

PREFIX = "gfnetsim"  # every namespace this tool creates: gfnetsim<pid>x<hex>-<role>
LINK_SUBNET = "10.77.{}.{}"  # link i: .1 on worker i's right end, .2 on worker i+1's left end
CAP_NET_ADMIN, CAP_SYS_ADMIN = 12, 21
_STALE = re.compile(rf"^{PREFIX}(\d+)x[0-9a-f]+-")


class NetnsError(RuntimeError):
    """A step of building or shaping the namespaces failed: the command and what it printed."""


def missing_rights() -> str | None:
    """Why this process cannot build namespaces, or None when it can."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return "cannot read /proc/self/status to check capabilities (is this Linux?)"
    match = re.search(r"^CapEff:\s*([0-9a-f]+)$", status, re.M)
    caps = int(match[1], 16) if match else 0
    lacking = [name for bit, name in ((CAP_NET_ADMIN, "CAP_NET_ADMIN"), (CAP_SYS_ADMIN, "CAP_SYS_ADMIN"))
               if not caps >> bit & 1]
    if lacking:
        return (f"creating network namespaces and shaping their links needs root (or {' and '.join(lacking)}); "
                "this process lacks it. Run it as root, e.g. `sudo -E .venv/bin/gpufleet netsim measure ...`; "
                "`gpufleet netsim estimate` needs no rights.")
    return None


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(list(args), capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise NetnsError(f"`{' '.join(args)}` failed: {(done.stderr or done.stdout).strip()}")
    return done


def namespaces() -> list[str]:
    out = run("ip", "netns", "list").stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def remove_stale() -> list[str]:
    """Delete namespaces left by a run whose process is gone (killed with SIGKILL); returns their names."""
    removed = []
    for name in namespaces():
        match = _STALE.match(name)
        if match and not os.path.exists(f"/proc/{match[1]}"):
            run("ip", "netns", "del", name, check=False)
            removed.append(name)
    return removed


@dataclass
class Ring:
    """N worker namespaces on one bridge. Use as a context manager: every namespace is deleted on exit."""

    workers: int
    prefix: str = field(default_factory=lambda: f"{PREFIX}{os.getpid()}x{uuid.uuid4().hex[:6]}")
    created: list[str] = field(default_factory=list)

    def worker(self, i: int) -> str:
        return f"{self.prefix}-w{i}"

    def right_address(self, i: int) -> str:
        """Where worker i reaches its right neighbour (i+1): the far end of link i."""
        return LINK_SUBNET.format(i, 2)

    def _add(self, name: str) -> None:
        run("ip", "netns", "add", name)
        self.created.append(name)
        run("ip", "-n", name, "link", "set", "lo", "up")

    def __enter__(self) -> Ring:
        try:
            for i in range(self.workers):
                self._add(self.worker(i))
            for i in range(self.workers):
                here, there = self.worker(i), self.worker((i + 1) % self.workers)
                run("ip", "-n", here, "link", "add", "right", "type", "veth", "peer", "name", "left", "netns", there)
                for ns, dev, host in ((here, "right", 1), (there, "left", 2)):
                    run("ip", "-n", ns, "addr", "add", f"{LINK_SUBNET.format(i, host)}/24", "dev", dev)
                    run("ip", "-n", ns, "link", "set", dev, "up")
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Delete every namespace this ring created (their veths go with them)."""
        while self.created:
            run("ip", "netns", "del", self.created.pop(), check=False)

    def has_netem(self) -> bool:
        """Whether this kernel has the netem qdisc: try it on worker 0's veth and take it off again."""
        ns = self.worker(0)
        tried = run("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "right", "root", "netem", "delay", "1ms",
                    check=False)
        if tried.returncode == 0:
            run("ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", "right", "root")
        return tried.returncode == 0

    def shape(self, link: Link, netem: bool) -> dict[str, str]:
        """Apply what the kernel offers of ``link`` to both directions of every link; returns how each part was
        applied."""
        applied: dict[str, str] = {}
        delay = netem and (link.latency_ms > 0 or link.loss_pct > 0)
        for i, dev in ((i, dev) for i in range(self.workers) for dev in ("left", "right")):
            tc = ("ip", "netns", "exec", self.worker(i), "tc", "qdisc", "add", "dev", dev)
            parent: tuple[str, ...] = ("root",)
            if delay:
                run(*tc, "root", "handle", "1:", "netem", *_netem_args(link))
                parent = ("parent", "1:")
            if link.bandwidth_mbps is not None:
                run(*tc, *parent, "handle", "2:", "tbf", *_tbf_args(link.bandwidth_mbps))
        if delay:
            for key, value in (("latency_ms", link.latency_ms), ("jitter_ms", link.jitter_ms),
                               ("loss_pct", link.loss_pct)):
                if value > 0:
                    applied[key] = f"netem on both directions of every link ({value:g})"
        if link.bandwidth_mbps is not None:
            applied["bandwidth_mbps"] = f"tbf rate {link.bandwidth_mbps:g}mbit on both directions of every link"
        return applied


def _netem_args(link: Link) -> list[str]:
    args = ["delay", f"{link.latency_ms:g}ms"]
    if link.jitter_ms > 0:
        args.append(f"{link.jitter_ms:g}ms")  # netem's default: uniform within +-jitter
    if link.loss_pct > 0:
        args += ["loss", f"{link.loss_pct:g}%"]
    # a queue deep enough for a bandwidth-delay product, so netem itself drops nothing the profile did not ask for
    return [*args, "limit", "100000"]


def _tbf_args(mbps: float) -> list[str]:
    bucket, queue = shaper_bytes(mbps)
    return ["rate", f"{mbps:g}mbit", "burst", str(bucket), "limit", str(queue)]
