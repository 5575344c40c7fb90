"""One worker of `gpufleet netsim measure`, run inside its network namespace (``ip netns exec``).

It joins a ring over TCP (listens for its left neighbour, connects to its right), tells the parent ``ready`` on
stdout, waits for ``go`` on stdin, runs a real ring all-reduce (reduce-scatter then all-gather),
checks the result, and then, on rank 0 and 1 only, a checkpoint-sized transfer on a fresh connection. It prints
one JSON line of timings. Everything is bounded by ``--timeout-s``.

The reduction is bitwise XOR (MPI_BXOR) over bytes: the same bytes cross the wire as for a float sum, the result
is exact and checkable, and the worker starts without importing numpy (seconds on a loaded machine).
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
import time
from functools import reduce
from operator import xor

RING_PORT = 5201
CHECKPOINT_PORT = 5202
BLOCK = 1 << 20  # bytes per send/recv call


def _recv_into(sock: socket.socket, view: memoryview, xor_into: memoryview | None = None) -> None:
    """Fill ``view`` from the socket; with ``xor_into``, XOR each piece into it as it lands, so the reduction
    overlaps the transfer instead of adding a compute pause to every ring step."""
    got = 0
    while got < len(view):
        n = sock.recv_into(view[got:], min(BLOCK, len(view) - got))
        if n == 0:
            raise ConnectionError("peer closed the connection early")
        if xor_into is not None:
            piece = xor_into[got:got + n]
            mixed = int.from_bytes(piece, "little") ^ int.from_bytes(view[got:got + n], "little")
            piece[:] = mixed.to_bytes(n, "little")
        got += n


def _connect(host: str, port: int, deadline: float) -> socket.socket:
    while True:
        try:
            sock = socket.create_connection((host, port), timeout=max(0.1, deadline - time.monotonic()))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _listen(port: int) -> socket.socket:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", port))
    server.listen(1)
    return server


def _split(data: bytearray, n: int) -> list[memoryview]:
    view = memoryview(data)
    bounds = [len(data) * i // n for i in range(n + 1)]
    return [view[bounds[i]:bounds[i + 1]] for i in range(n)]


def ring_allreduce(data: bytearray, rank: int, n: int, left: socket.socket, right: socket.socket) -> None:
    """In place: every worker ends with the XOR over all workers (the ring of Patarasuk & Yuan 2009)."""
    chunks = _split(data, n)
    scratch = bytearray(max(len(c) for c in chunks))
    for step in range(2 * (n - 1)):
        reducing = step < n - 1  # reduce-scatter, then all-gather (its own step count restarts at 0)
        s = step if reducing else step - (n - 1)
        send_i = (rank - s) % n if reducing else (rank - s + 1) % n
        recv_i = (rank - s - 1) % n if reducing else (rank - s) % n
        sender = threading.Thread(target=right.sendall, args=(chunks[send_i],))
        sender.start()
        target = chunks[recv_i]
        buf = memoryview(scratch)[:len(target)] if reducing else target
        _recv_into(left, buf, target if reducing else None)
        sender.join()


def expected(rank_values: range) -> int:
    """The byte every position holds after the all-reduce when worker r starts with bytes of value r + 1."""
    return reduce(xor, rank_values, 0)


def _checkpoint_send(host: str, nbytes: int, deadline: float) -> dict[str, float]:
    payload = memoryview(bytearray(min(nbytes, BLOCK)))
    start = time.perf_counter()
    sock = _connect(host, CHECKPOINT_PORT, deadline)
    connected = time.perf_counter()
    sent = 0
    while sent < nbytes:
        sent += sock.send(payload[:min(len(payload), nbytes - sent)])
    sock.shutdown(socket.SHUT_WR)
    ack = sock.recv(1)  # the receiver has every byte
    done = time.perf_counter()
    sock.close()
    if ack != b"k":
        raise ConnectionError("no acknowledgement from the checkpoint receiver")
    return {"checkpoint_s": done - start, "checkpoint_data_s": done - connected}


def _checkpoint_receive(server: socket.socket, nbytes: int) -> None:
    conn, _ = server.accept()
    buf = bytearray(BLOCK)
    got = 0
    while got < nbytes:
        n = conn.recv_into(buf)
        if n == 0:
            raise ConnectionError("checkpoint sender closed early")
        got += n
    conn.sendall(b"k")
    conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rank", type=int, required=True)
    parser.add_argument("--workers", type=int, required=True)
    parser.add_argument("--bytes", type=int, required=True)
    parser.add_argument("--checkpoint-bytes", type=int, required=True)
    parser.add_argument("--right", required=True, help="the right neighbour's address (rank 0's also takes the "
                        "checkpoint)")
    parser.add_argument("--timeout-s", type=float, default=60)
    args = parser.parse_args(argv)
    rank, n = args.rank, args.workers

    deadline = time.monotonic() + args.timeout_s
    server = _listen(RING_PORT)
    server.settimeout(args.timeout_s)
    ckpt_server = _listen(CHECKPOINT_PORT) if rank == 1 else None
    right = _connect(args.right, RING_PORT, deadline)
    left, _ = server.accept()
    left.settimeout(args.timeout_s)
    right.settimeout(args.timeout_s)
    data = bytearray([rank + 1]) * args.bytes
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        return 1
    start = time.monotonic()  # one clock for every namespace: the parent lines the workers' times up
    ring_allreduce(data, rank, n, left, right)
    result: dict[str, float | int | bool] = {"rank": rank, "start": start, "end": time.monotonic(),
                                            "reduced_ok": data == bytearray([expected(range(1, n + 1))]) * len(data)}
    if rank == 0 and n > 1:
        result.update(_checkpoint_send(args.right, args.checkpoint_bytes, deadline))
    elif ckpt_server is not None:
        ckpt_server.settimeout(args.timeout_s)
        _checkpoint_receive(ckpt_server, args.checkpoint_bytes)
    print(json.dumps(result), flush=True)
    for sock in (left, right, server, ckpt_server):
        if sock is not None:
            sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
