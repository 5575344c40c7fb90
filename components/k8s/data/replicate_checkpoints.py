"""Checkpoints across the fleet queue (docs/fleet-queue.md "Recovery across clusters"), run by the checkpoint sync's
pod with the pinned rclone (REPLICA_RCLONE). Standard library only, so any Python 3.11+ image runs it (the
image is python:3.12-slim; 3.11 is where datetime.fromisoformat reads RFC 3339's Z).

``replicate``: copy the Lustre export path (REPLICA_SOURCE) to each peer worker's bucket, as REPLICA_PEERS lists
them (a JSON list the stack renders: per peer its rclone target, the env of the remote and of the peer cloud's
federated identity, and the files that identity reads; a peer whose stack has not exported yet is ``pending`` and
skipped). Each call gets only its own peer's identity: every cloud credential variable of the pod is dropped first.

``restore``: on this worker, bring the newest complete checkpoint of each run from its own bucket (REPLICA_REMOTE)
onto Lustre (REPLICA_TARGET), where a job dispatched here resumes; a run whose newest complete checkpoint Lustre
already holds is left alone.

A checkpoint is complete when its directory holds REPLICA_MARKER (PyTorch Distributed Checkpoint writes ``.metadata``
after every shard). Every copy is two passes: the files without the marker, then, only if that succeeded, the
markers, with a cutoff no later than the first pass's: a marker older than the cutoff was written after its shards,
so they were older still and the first pass copied them. So a marker never arrives before its checkpoint, and a
half-copied checkpoint (a failed or stopped run) has no marker and is never taken for a complete one."""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import subprocess
import sys
import tempfile
import time

CREDENTIALS = ("AWS_", "AZURE_", "GOOGLE_", "RCLONE_CONFIG_")  # a peer's call sees its own identity, nothing else
TIMEOUT_S = 5 * 3600  # one peer's copy; the CronJob's deadline stops the whole run later


def log(message: str) -> None:
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {message}", flush=True)


def clean_env(extra: dict[str, str]) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(CREDENTIALS)}
    return {**base, **extra}


def two_passes(rclone: str, source: str, target: str, marker: str, min_age_s: int, started: float,
               env: dict[str, str], flags: list[str]) -> bool:
    """Copy source to target: every file but the markers older than min_age_s, then the markers older than the
    cutoff of ``started`` (rounded down a further second). False, and no markers, if the first pass failed."""
    base = [rclone, "copy", "--config=", source, target, *flags]
    first = subprocess.run([*base, f"--min-age={min_age_s}s", f"--exclude={marker}"], env=env, check=False,
                           timeout=TIMEOUT_S)
    if first.returncode:
        return False
    age = min_age_s + math.ceil(time.time() - started) + 1
    second = subprocess.run([*base, f"--min-age={age}s", f"--include={marker}"], env=env, check=False,
                            timeout=TIMEOUT_S)
    return second.returncode == 0


def replicate(rclone: str, source: str, peers: list[dict], marker: str, min_age_s: int, flags: list[str]) -> int:
    started = time.time()
    failed = []
    for peer in peers:
        if peer.get("pending"):
            log(f"peer {peer['name']}: pending (its stack has not exported its checkpoint bucket yet)")
            continue
        with tempfile.TemporaryDirectory() as scratch:
            env = dict(peer["env"])
            for variable, content in peer.get("files", {}).items():  # e.g. a credential configuration, no secret
                path = os.path.join(scratch, variable.lower())
                with open(path, "w") as f:
                    f.write(content)
                env[variable] = path
            ok = two_passes(rclone, source, peer["target"], marker, min_age_s, started, clean_env(env), flags)
        log(f"peer {peer['name']}: {'replicated' if ok else 'FAILED'}")
        if not ok:
            failed.append(peer["name"])
    return 1 if failed else 0


def newest_complete(entries: list[dict], marker: str) -> dict[str, str]:
    """run -> the directory (relative) of its newest complete checkpoint, from ``rclone lsjson --recursive
    --files-only`` entries (Path, ModTime) under the export path: ``<run>/.../<checkpoint>/<marker>``, newest by the
    marker's time (RFC 3339 with any fraction of a second and offset: compared as times, not as text)."""
    best: dict[str, tuple[str, dt.datetime]] = {}
    for entry in entries:
        path = entry["Path"]
        parts = path.split("/")
        if parts[-1] != marker or len(parts) < 3:
            continue
        run, directory, when = parts[0], "/".join(parts[:-1]), dt.datetime.fromisoformat(entry["ModTime"])
        if run not in best or when > best[run][1]:
            best[run] = (directory, when)
    return {run: directory for run, (directory, _) in best.items()}


def restore(rclone: str, remote: str, target: str, marker: str, flags: list[str]) -> int:
    env = dict(os.environ)  # this worker's own identity, as the pod's identity webhook or Pod Identity gave it
    listed = subprocess.run([rclone, "lsjson", "--config=", "--recursive", "--files-only", remote], env=env,
                            check=False, capture_output=True, text=True, timeout=TIMEOUT_S)
    if listed.returncode:
        log(f"restore: listing {remote} FAILED: {listed.stderr.strip()[-500:]}")
        return 1
    failed = 0
    for run, directory in sorted(newest_complete(json.loads(listed.stdout or "[]"), marker).items()):
        if os.path.exists(os.path.join(target, directory, marker)):
            continue
        ok = two_passes(rclone, f"{remote}/{directory}", os.path.join(target, directory), marker, 0, time.time(),
                        env, flags)
        log(f"restore {run}: {directory} {'restored' if ok else 'FAILED'}")
        failed += not ok
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    rclone, marker = os.environ["REPLICA_RCLONE"], os.environ["REPLICA_MARKER"]
    flags = json.loads(os.environ.get("REPLICA_FLAGS", "[]"))
    if argv[:1] == ["restore"]:
        return restore(rclone, os.environ["REPLICA_REMOTE"], os.environ["REPLICA_TARGET"], marker, flags)
    with open(os.environ["REPLICA_PEERS"]) as f:
        peers = json.load(f)
    return replicate(rclone, os.environ["REPLICA_SOURCE"], peers, marker, int(os.environ["REPLICA_MIN_AGE_S"]),
                     flags)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
