"""The worker's ring all-reduce over real sockets (socket pairs, no namespaces needed)."""

from __future__ import annotations

import socket
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.netsim.worker import ring_allreduce


def allreduce(buffers: list[bytearray]) -> None:
    n = len(buffers)
    links = [socket.socketpair() for _ in range(n)]  # links[i]: worker i -> worker i+1
    threads = [threading.Thread(target=ring_allreduce, args=(buffers[i], i, n, links[i - 1][1], links[i][0]))
               for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    for a, b in links:
        a.close()
        b.close()


@st.composite
def rings(draw: st.DrawFn) -> list[bytes]:
    n, size = draw(st.integers(2, 6)), draw(st.integers(1, 3000))
    return [draw(st.binary(min_size=size, max_size=size)) for _ in range(n)]


@settings(max_examples=25, deadline=None)
@given(rings())
def test_every_worker_ends_with_the_xor_of_all(inputs: list[bytes]) -> None:
    want = bytes(len(inputs[0]))
    for b in inputs:
        want = bytes(x ^ y for x, y in zip(want, b, strict=True))
    buffers = [bytearray(b) for b in inputs]
    allreduce(buffers)
    assert all(buf == want for buf in buffers)


@pytest.mark.parametrize("n", [2, 3, 7])
def test_buffers_shorter_than_the_ring(n: int) -> None:
    buffers = [bytearray([i + 1]) * 3 for i in range(n)]  # some chunks are empty
    allreduce(buffers)
    want = 0
    for i in range(1, n + 1):
        want ^= i
    assert all(buf == bytearray([want]) * 3 for buf in buffers)
