"""The cost model of a link profile: ring all-reduce (alpha-beta), checkpoint transfer, TCP goodput under loss.

Pure functions over SI units (seconds, bytes, bits per second). The formulas and their limits are in
docs/netsim.md, with references:
- ring all-reduce, alpha-beta: Thakur, Rabenseifner, Gropp 2005, "Optimization of Collective Communication
  Operations in MPICH" (reduce-scatter + all-gather: 2(n-1) steps, each moving bytes/n);
- TCP goodput under random loss: Mathis, Semke, Mahdavi, Ott 1997, "The Macroscopic Behavior of the TCP
  Congestion Avoidance Algorithm", ACM SIGCOMM CCR 27(3): BW <= MSS/RTT * C/sqrt(p), C = sqrt(3/2);
- NCCL's socket transport splits every message of a connection over NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD
  TCP streams, at most MAX_SOCKETS (64); unset, it detects the NIC by PCI vendor: AWS ENA (0x1d0f) 2 x 8 = 16,
  GCP gVNIC (0x1ae0) 4 x 1 = 4, anything else 0 helper threads (the one stream it always has). NVIDIA/nccl
  v2.23.4-1 (68b5423, 2024-09-16), src/transport/net_socket.cc, ncclNetSocketGetNsockNthread; read 2026-12-01.
  Loss hits each stream alone, so N streams carry up to N Mathis bounds (the link's rate still caps them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MATHIS_C = math.sqrt(3 / 2)  # periodic loss, every packet ACKed (Mathis et al. 1997, eq. 3)
MSS_BYTES = 1448  # 1500-byte MTU - 20 (IPv4) - 20 (TCP) - 12 (timestamps option)
NCCL_MAX_STREAMS = 64  # MAX_SOCKETS in net_socket.cc (see above)
NCCL_STREAMS = {"aws": 16, "gcp": 4}  # its auto-detected streams per connection by cloud NIC; 1 elsewhere


@dataclass(frozen=True)
class Link:
    """The conditions of every link between two workers: a network profile's numbers."""

    bandwidth_mbps: float | None = None  # None: unshaped (the model then needs no bandwidth term)
    latency_ms: float = 0.0  # one-way
    jitter_ms: float = 0.0
    loss_pct: float = 0.0

    @property
    def rtt_s(self) -> float:
        return 2 * self.latency_ms / 1000


def mathis_bound_bps(rtt_s: float, loss_pct: float, mss_bytes: int = MSS_BYTES) -> float:
    """The most one TCP flow in congestion avoidance carries at this RTT and random loss (bits/s); inf without
    loss or without delay, where the formula sets no bound."""
    if loss_pct <= 0 or rtt_s <= 0:
        return math.inf
    return mss_bytes * 8 / rtt_s * MATHIS_C / math.sqrt(loss_pct / 100)


def goodput_bps(link: Link, mss_bytes: int = MSS_BYTES, streams: int = 1) -> float:
    """What ``streams`` parallel TCP flows get together: the shaped rate or ``streams`` Mathis bounds, whichever is
    lower (inf if neither binds)."""
    rate = math.inf if link.bandwidth_mbps is None else link.bandwidth_mbps * 1e6
    return min(rate, streams * mathis_bound_bps(link.rtt_s, link.loss_pct, mss_bytes))


def ring_allreduce_s(workers: int, nbytes: float, latency_s: float, bandwidth_bps: float) -> float:
    """alpha-beta time of a ring all-reduce: 2(n-1) x latency + 2(n-1)/n x bytes / bandwidth."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    if workers == 1:
        return 0.0
    steps = 2 * (workers - 1)
    transfer = 0.0 if math.isinf(bandwidth_bps) else steps / workers * nbytes * 8 / bandwidth_bps
    return steps * latency_s + transfer


def transfer_s(nbytes: float, rtt_s: float, bandwidth_bps: float) -> float:
    """One TCP transfer: one RTT of handshake, then the bytes at the flow's goodput (slow start ignored)."""
    return rtt_s + (0.0 if math.isinf(bandwidth_bps) else nbytes * 8 / bandwidth_bps)


@dataclass(frozen=True)
class Estimate:
    workers: int
    allreduce_bytes: float
    checkpoint_bytes: float
    mathis_bound_mbps: float | None  # None: no bound (no loss or no delay)
    goodput_mbps: float | None  # None: unbounded (no rate limit and no loss bound)
    allreduce_s: float
    allreduce_worst_s: float  # every step at latency + jitter: the slowest link sets a ring step's pace
    checkpoint_s: float
    streams: int  # TCP streams per connection for the multi-stream figures (NCCL's socket transport)
    multi_stream_goodput_mbps: float | None  # None: unbounded
    multi_stream_allreduce_s: float

    def as_dict(self) -> dict[str, float | int | None]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _mbps(bps: float) -> float | None:
    return None if math.isinf(bps) else bps / 1e6


def estimate(link: Link, workers: int, allreduce_bytes: float, checkpoint_bytes: float, streams: int = 1
             ) -> Estimate:
    """Every prediction for one profile, worker count and payload: over one TCP flow (a single-stream transfer,
    the checkpoint) and over ``streams`` flows per connection (NCCL's socket transport)."""
    rate, multi = goodput_bps(link), goodput_bps(link, streams=streams)
    latency_s = link.latency_ms / 1000
    return Estimate(
        workers=workers, allreduce_bytes=allreduce_bytes, checkpoint_bytes=checkpoint_bytes,
        mathis_bound_mbps=_mbps(mathis_bound_bps(link.rtt_s, link.loss_pct)), goodput_mbps=_mbps(rate),
        allreduce_s=ring_allreduce_s(workers, allreduce_bytes, latency_s, rate),
        allreduce_worst_s=ring_allreduce_s(workers, allreduce_bytes, latency_s + link.jitter_ms / 1000, rate),
        checkpoint_s=transfer_s(checkpoint_bytes, link.rtt_s, rate), streams=streams,
        multi_stream_goodput_mbps=_mbps(multi),
        multi_stream_allreduce_s=ring_allreduce_s(workers, allreduce_bytes, latency_s, multi))
