"""Checkpoint I/O probe: every PROBE_INTERVAL_S, write PROBE_SIZE_MIB to the Lustre volume as a training job writes
a checkpoint shard (sequential, 8 MiB blocks, fsync), drop it from the page cache, read it back; with PROBE_REMOTE
set, also upload a PROBE_BUCKET_SIZE_MIB object to the checkpoint bucket with rclone (PROBE_RCLONE), download it
back, compare and delete it. Serves the durations and throughputs per target (target="lustre" / "bucket") on
:PROBE_PORT/metrics in the Prometheus text format. Standard library only, so any Python 3 image runs it."""

from __future__ import annotations

import hashlib
import os
import subprocess
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
    "errors_total": ("counter", "Probes that failed (an I/O error, a short read or a transfer error)."),
}
RCLONE_TIMEOUT_S = 1800  # one transfer; a hung transfer counts as a failure


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


def _write_random(path: str, size_bytes: int) -> str:
    """A file of ``size_bytes`` random bytes; its sha256."""
    digest, block = hashlib.sha256(), os.urandom(BLOCK)
    with open(path, "wb") as f:
        for written in range(0, size_bytes, BLOCK):
            chunk = block[: min(BLOCK, size_bytes - written)]
            f.write(chunk)
            digest.update(chunk)
    return digest.hexdigest()


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(BLOCK):
            digest.update(chunk)
    return digest.hexdigest()


def rclone(binary: str, *args: str) -> float:
    """Run one rclone command (no config file: the remote comes from RCLONE_CONFIG_* variables); its duration in
    seconds, or OSError with the end of its error output."""
    start = time.monotonic()
    try:
        done = subprocess.run([binary, "--config=", *args], capture_output=True, text=True, timeout=RCLONE_TIMEOUT_S)
    except subprocess.TimeoutExpired as err:
        raise OSError(f"rclone {args[0]} timed out after {RCLONE_TIMEOUT_S} s") from err
    if done.returncode != 0:
        raise OSError(f"rclone {args[0]} exited {done.returncode}: {done.stderr.strip()[-400:]}")
    return time.monotonic() - start


def probe_bucket(binary: str, remote: str, staging: str, size_bytes: int) -> dict[str, float]:
    """Upload one object under ``remote`` (the bucket's probe prefix), download it back, compare, delete it; the
    durations and throughputs of the two transfers (raises OSError on failure)."""
    os.makedirs(staging, exist_ok=True)
    name = f"probe-{os.uname().nodename}.bin"
    local, back, target = os.path.join(staging, name), os.path.join(staging, name + ".back"), f"{remote}/{name}"
    try:
        sent = _write_random(local, size_bytes)
        write_s = rclone(binary, "copyto", local, target)
        read_s = rclone(binary, "copyto", target, back)
        rclone(binary, "deletefile", target)
        if os.path.getsize(back) != size_bytes or _sha256(back) != sent:
            raise OSError("the object read back differs from the one written")
    finally:
        for path in (local, back):
            if os.path.exists(path):
                os.remove(path)
    return {"write_seconds": write_s, "read_seconds": read_s, "write_bytes_per_second": size_bytes / write_s,
            "read_bytes_per_second": size_bytes / read_s, "last_success_timestamp_seconds": time.time()}


def exposition(state: dict[str, dict[str, float]]) -> str:
    """The Prometheus text format of the probe's series, one per target (a series appears once it has a value)."""
    lines = []
    for name, (kind, text) in METRICS.items():
        samples = [f'{PREFIX}{name}{{target="{target}"}} {values[name]!r}'
                   for target, values in state.items() if name in values]
        if samples:
            lines += [f"# HELP {PREFIX}{name} {text}", f"# TYPE {PREFIX}{name} {kind}", *samples]
    return "\n".join(lines) + "\n"


def main() -> None:
    env = os.environ
    size = int(env.get("PROBE_SIZE_MIB", "1024")) * 2**20
    interval = float(env.get("PROBE_INTERVAL_S", "900"))
    probes = {"lustre": lambda: probe_once(env["PROBE_DIR"], size)}
    if env.get("PROBE_REMOTE"):
        bucket_size = int(env.get("PROBE_BUCKET_SIZE_MIB", "256")) * 2**20
        probes["bucket"] = lambda: probe_bucket(env.get("PROBE_RCLONE", "rclone"), env["PROBE_REMOTE"],
                                                env.get("PROBE_STAGING", "/tmp/probe"), bucket_size)
    state: dict[str, dict[str, float]] = {target: {"errors_total": 0.0} for target in probes}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = exposition({t: dict(v) for t, v in state.items()}).encode()
            self.send_response(200 if self.path == "/metrics" else 404)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body)

    server = HTTPServer(("", int(env.get("PROBE_PORT", "9101"))), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    while True:
        for target, run in probes.items():
            try:
                state[target].update(run())
            except OSError as err:
                state[target]["errors_total"] += 1
                print(f"checkpoint probe of {target} failed: {err}", flush=True)
        time.sleep(interval)


if __name__ == "__main__":
    main()
