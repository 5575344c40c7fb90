"""Checks of a cluster's ``network_profiles`` that need more than one field: pool names, scope, sense.

Kept out of ``components.validate`` so the rehearsal feature stays one small, separate piece.
"""

from __future__ import annotations

from collections.abc import Iterator

from components.errors import SpecProblem, duplicates, unknown_name
from components.spec import ClusterSpec, NetworkProfileSpec

# Namespaces a rehearsal must never shape: the cluster's own machinery and where production usually runs.
PROTECTED_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease", "chaos-mesh")


def shaper_bytes(bandwidth_mbps: float) -> tuple[int, int]:
    """(bucket, queue) in bytes for a token-bucket shaper at this rate, used on one machine (tc tbf) and in the
    cluster (Chaos Mesh bandwidth). The bucket is ~1 ms at the rate (at least 16 KiB), so a transfer's first burst
    barely beats the rate; the queue holds 200 ms at the rate: shallower queues overflowed under TCP small queues
    (up to 1 MiB per socket) and their tail drops cost retransmission timeouts (measured: docs/netsim.md)."""
    rate_bytes_per_s = bandwidth_mbps * 1e6 / 8
    bucket = max(16 * 1024, int(rate_bytes_per_s / 1000))
    return bucket, max(3 * bucket, int(rate_bytes_per_s * 0.2))


def check(c: ClusterSpec, path: str) -> Iterator[SpecProblem]:
    """Every problem in the cluster's network profiles, with config paths under ``path``."""
    yield from duplicates(f"{path}.network_profiles", "network profile", (p.name for p in c.network_profiles))
    pools = sorted(p.name for p in c.node_pools)
    for i, profile in enumerate(c.network_profiles):
        yield from _check_profile(profile, pools, f"{path}.network_profiles[{i}]")


def _check_profile(p: NetworkProfileSpec, pools: list[str], path: str) -> Iterator[SpecProblem]:
    for field in ("pools", "to_pools"):
        for j, pool in enumerate(getattr(p, field)):
            if pool not in pools:
                yield unknown_name(f"{path}.{field}[{j}]", "node pool of this cluster", pool, pools or ["(none)"])
    if p.bandwidth_mbps is None and p.latency_ms == 0 and p.loss_pct == 0 and p.jitter_ms == 0:
        yield SpecProblem(path, f"profile {p.name!r} changes nothing: no bandwidth_mbps, latency_ms, jitter_ms "
                          "or loss_pct is set.", "Set at least one of them, or remove the profile.")
    if p.jitter_ms > p.latency_ms:
        yield SpecProblem(f"{path}.jitter_ms", f"{p.jitter_ms:g} ms is more than latency_ms ({p.latency_ms:g} ms): "
                          "packets would be reordered and the delay clipped at zero.",
                          f"Set jitter_ms to at most {p.latency_ms:g}, or raise latency_ms.")
    if p.namespace in PROTECTED_NAMESPACES:
        yield SpecProblem(f"{path}.namespace", f"{p.namespace!r} must not be shaped: a rehearsal there would slow "
                          "the cluster's own or production traffic.",
                          f"Use a namespace of its own for the rehearsal, like 'netsim'. Not allowed: "
                          f"{', '.join(PROTECTED_NAMESPACES)}.")
