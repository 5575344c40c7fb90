"""Checkpoint I/O probe: every PROBE_INTERVAL_S, write PROBE_SIZE_MIB to the Lustre volume as a training job writes
a checkpoint shard (sequential, 8 MiB blocks, fsync), drop it from the page cache, read it back, and serve the
durations and throughputs on :PROBE_PORT/metrics in the Prometheus text format. Standard library only, so any
Python 3 image runs it."""

from __future__ import annotations

import os
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

BLOCK = 8 * 2**20
PREFIX = "gpufleet_checkpoint_probe_"
# name -> (type, help): the series this probe publishes (components/k8s/probe.py METRICS lists the same names)
METRICS = {
    "write_seconds": ("gauge", "Seconds the last probe took to write and fsync its file."),
    "read_seconds": ("gauge", "Seconds the last probe took to read its file back, uncached."),
    "write_bytes_per_second": ("gauge", "Write throughput of the last probe."),
    "read_bytes_per_second": ("gauge", "Read throughput of the last probe."),
    "last_success_timestamp_seconds": ("gauge", "Unix time of the last probe that wrote and read back."),
    "errors_total": ("counter", "Probes that failed (an I/O error or a short read)."),
}


def probe_once(directory: str, size_bytes: int) -> dict[str, float]:
    """Write, fsync, evict, read back one file; the durations and throughputs (raises OSError on failure)."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"probe-{os.uname().nodename}.bin")
    block = os.urandom(BLOCK)
    start = time.monotonic()
    with open(path, "wb") as f:
        for written in range(0, size_bytes, BLOCK):
            f.write(block[: min(BLOCK, size_bytes - written)])
        f.flush()
        os.fsync(f.fileno())
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)  # the read must go to the file system
    write_s = time.monotonic() - start
    start = time.monotonic()
    read = 0
    with open(path, "rb", buffering=0) as f:
        while chunk := f.read(BLOCK):
            read += len(chunk)
    read_s = time.monotonic() - start
    os.remove(path)
    if read != size_bytes:
        raise OSError(f"read {read} bytes back, wrote {size_bytes}")
    return {"write_seconds": write_s, "read_seconds": read_s, "write_bytes_per_second": size_bytes / write_s,
            "read_bytes_per_second": size_bytes / read_s, "last_success_timestamp_seconds": time.time()}


def exposition(values: dict[str, float], target: str) -> str:
    """The Prometheus text format of the probe's series (a series appears once it has a value)."""
    lines = []
    for name, (kind, text) in METRICS.items():
        if name in values:
            lines += [f"# HELP {PREFIX}{name} {text}", f"# TYPE {PREFIX}{name} {kind}",
                      f'{PREFIX}{name}{{target="{target}"}} {values[name]!r}']
    return "\n".join(lines) + "\n"


def main() -> None:
    directory, target = os.environ["PROBE_DIR"], os.environ.get("PROBE_TARGET", "lustre")
    size = int(os.environ.get("PROBE_SIZE_MIB", "1024")) * 2**20
    interval = float(os.environ.get("PROBE_INTERVAL_S", "900"))
    state: dict[str, float] = {"errors_total": 0.0}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = exposition(dict(state), target).encode()
            self.send_response(200 if self.path == "/metrics" else 404)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body)

    server = HTTPServer(("", int(os.environ.get("PROBE_PORT", "9101"))), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    while True:
        try:
            state.update(probe_once(directory, size))
        except OSError as err:
            state["errors_total"] += 1
            print(f"checkpoint probe failed: {err}", flush=True)
        time.sleep(interval)


if __name__ == "__main__":
    main()
