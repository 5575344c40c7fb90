"""The netsim model against cases computed by hand (the arithmetic is in each test's comment)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpufleet.netsim.model import Link, estimate, goodput_bps, mathis_bound_bps, ring_allreduce_s, transfer_s


def test_ring_allreduce_alpha_beta_by_hand() -> None:
    # n=4, 10 ms, 1e9 B at 10 Gbit/s: 2*3*0.010 = 0.06 s; 2*3/4 * 8e9 b / 1e10 b/s = 1.5 * 0.8 = 1.2 s
    assert ring_allreduce_s(4, 1e9, 0.010, 1e10) == pytest.approx(1.26, rel=1e-12)
    # n=2: 2 steps of half the buffer: 2*0.001 + 1 * 8e6 / 1e8 = 0.002 + 0.08
    assert ring_allreduce_s(2, 1e6, 0.001, 1e8) == pytest.approx(0.082, rel=1e-12)


def test_one_worker_has_nothing_to_reduce_and_zero_workers_is_an_error() -> None:
    assert ring_allreduce_s(1, 1e9, 0.1, 1e6) == 0.0
    with pytest.raises(ValueError, match="at least 1"):
        ring_allreduce_s(0, 1e9, 0.1, 1e6)


def test_mathis_bound_by_hand() -> None:
    # MSS 1448 B, RTT 80 ms, p = 0.1 %: 1448*8/0.08 = 144,800 b/s; sqrt(1.5)/sqrt(0.001) = 1.2247449/0.0316228
    # = 38.729833; 144,800 * 38.729833 = 5,608,079.9 b/s
    assert mathis_bound_bps(0.080, 0.1) == pytest.approx(5_608_079.9, rel=1e-7)
    # MSS 1000 B, RTT 100 ms, p = 1 %: 80,000 b/s * 1.2247449 / 0.1 = 979,795.9 b/s
    assert mathis_bound_bps(0.100, 1.0, mss_bytes=1000) == pytest.approx(979_795.9, rel=1e-7)


def test_mathis_sets_no_bound_without_loss_or_without_delay() -> None:
    assert math.isinf(mathis_bound_bps(0.08, 0.0))
    assert math.isinf(mathis_bound_bps(0.0, 1.0))


def test_goodput_is_the_lower_of_rate_and_loss_bound() -> None:
    # 40 ms one-way -> RTT 80 ms; 0.1 % loss -> 5.608 Mbit/s, below a 1 Gbit/s rate
    assert goodput_bps(Link(bandwidth_mbps=1000, latency_ms=40, loss_pct=0.1)) == pytest.approx(5_608_079.9, 1e-7)
    # a 2 Mbit/s rate is lower than the same bound
    assert goodput_bps(Link(bandwidth_mbps=2, latency_ms=40, loss_pct=0.1)) == 2e6
    assert math.isinf(goodput_bps(Link()))


def test_streams_multiply_the_loss_bound_up_to_the_link_rate() -> None:
    # RTT 0.16 s, 0.1 % loss: one flow 2,804,039.9 b/s (worked in test_estimate_cli.py); 16 flows 44,864,639 b/s
    lossy = Link(bandwidth_mbps=1000, latency_ms=80, loss_pct=0.1)
    assert goodput_bps(lossy, streams=16) == pytest.approx(44_864_639.1, rel=1e-8)
    # a 10 Mbit/s rate is below 16 bounds but above one: the rate caps the streams, the bound caps one flow
    slow = Link(bandwidth_mbps=10, latency_ms=80, loss_pct=0.1)
    assert goodput_bps(slow, streams=16) == 10e6 and goodput_bps(slow) == pytest.approx(2_804_039.9, rel=1e-7)
    # 4 workers, 100 MB: 6 x 0.08 + 1.5 x 8e8 / 44,864,639 = 27.2271 s; the single-flow figure is unchanged
    e = estimate(lossy, workers=4, allreduce_bytes=1e8, checkpoint_bytes=1e8, streams=16)
    assert e.multi_stream_allreduce_s == pytest.approx(27.227123, rel=1e-6)
    assert e.allreduce_s == pytest.approx(428.43397, rel=1e-6) and e.streams == 16


def test_checkpoint_transfer_is_one_rtt_plus_the_bytes_at_goodput() -> None:
    # RTT 2*25 ms = 0.05 s; 1e9 B * 8 / 1e9 b/s = 8 s
    assert transfer_s(1e9, 0.05, 1e9) == pytest.approx(8.05)
    e = estimate(Link(bandwidth_mbps=1000, latency_ms=25), workers=8, allreduce_bytes=1e9, checkpoint_bytes=1e9)
    assert e.checkpoint_s == pytest.approx(8.05)
    # all-reduce: 2*7*0.025 = 0.35 s; 2*7/8 * 8e9/1e9 = 14 s
    assert e.allreduce_s == pytest.approx(14.35)
    assert e.mathis_bound_mbps is None and e.goodput_mbps == pytest.approx(1000)


def test_jitter_only_moves_the_worst_case() -> None:
    # 8 workers, 14 steps: latency 10 ms + jitter 5 ms -> 14 * 0.015 = 0.21 s with no rate limit
    e = estimate(Link(latency_ms=10, jitter_ms=5), workers=8, allreduce_bytes=1e9, checkpoint_bytes=1)
    assert e.allreduce_s == pytest.approx(0.14) and e.allreduce_worst_s == pytest.approx(0.21)


@given(n=st.integers(2, 64), nbytes=st.floats(1, 1e12), latency=st.floats(0, 1), rate=st.floats(1e3, 1e12))
def test_allreduce_time_grows_with_latency_and_bytes(n: int, nbytes: float, latency: float, rate: float) -> None:
    t = ring_allreduce_s(n, nbytes, latency, rate)
    assert t >= 2 * (n - 1) * latency
    assert ring_allreduce_s(n, nbytes * 2, latency, rate) >= t
    assert ring_allreduce_s(n, nbytes, latency + 0.001, rate) > t
    # bandwidth term is never more than twice the whole buffer's serialisation time
    assert t - 2 * (n - 1) * latency <= 2 * nbytes * 8 / rate * (1 + 1e-9)


@given(rtt=st.floats(1e-4, 1), p=st.floats(1e-4, 50))
def test_mathis_bound_falls_with_rtt_and_loss(rtt: float, p: float) -> None:
    b = mathis_bound_bps(rtt, p)
    assert mathis_bound_bps(rtt * 2, p) == pytest.approx(b / 2)
    assert mathis_bound_bps(rtt, p * 4) == pytest.approx(b / 2)


def test_shaper_sizes_by_hand() -> None:
    from components.network_profiles import shaper_bytes

    # 20 Mbit/s = 2.5e6 B/s: 1 ms = 2,500 B < 16 KiB floor; 200 ms = 500,000 B
    assert shaper_bytes(20) == (16_384, 500_000)
    # 1000 Mbit/s = 1.25e8 B/s: 1 ms = 125,000 B; 200 ms = 25,000,000 B
    assert shaper_bytes(1000) == (125_000, 25_000_000)
    # 0.1 Mbit/s: the queue never falls below three buckets
    assert shaper_bytes(0.1) == (16_384, 49_152)
