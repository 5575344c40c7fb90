"""FAKE rclone, for the checkpoint tools' tests only: speaks the few commands the tools run (copyto, deletefile, copy
with --min-age=<N>s / --include / --exclude of a file name, lsjson) against a local directory standing in for the
bucket ($FAKE_BUCKET_ROOT; a remote ``name:bucket/path`` is ``$FAKE_BUCKET_ROOT/bucket/path``; it keeps modification
times, as rclone does). It logs each call (argv, the RCLONE_CONFIG_* variables and the cloud identity variables it
saw, and the content of the file GOOGLE_APPLICATION_CREDENTIALS names) as a JSON line to $FAKE_RCLONE_LOG.
$FAKE_RCLONE_MODE: ``ok``; ``deny`` (every call fails as a refused request would); ``corrupt`` (downloads come back
altered). It is no model of rclone's behaviour beyond that."""

from __future__ import annotations

import datetime as dt
import fnmatch
import json
import os
import shutil
import sys
import time

IDENTITY = ("AWS_", "AZURE_", "GOOGLE_")


def _local(path: str) -> str:
    if ":" in path and not path.startswith("/"):
        return os.path.join(os.environ["FAKE_BUCKET_ROOT"], path.split(":", 1)[1])
    return path


def main(argv: list[str]) -> int:
    config = {k: v for k, v in os.environ.items() if k.startswith("RCLONE_CONFIG_")}
    identity = {k: v for k, v in os.environ.items() if k.startswith(IDENTITY)}
    google = identity.get("GOOGLE_APPLICATION_CREDENTIALS")
    credentials = open(google).read() if google else None  # noqa: SIM115 (the file exists only during the call)
    with open(os.environ["FAKE_RCLONE_LOG"], "a") as log:
        log.write(json.dumps({"argv": argv, "config": config, "identity": identity, "credentials": credentials})
                  + "\n")
    mode = os.environ.get("FAKE_RCLONE_MODE", "ok")
    args = [a for a in argv if not a.startswith("-")]
    if mode == "deny":
        print("ERROR : Failed to copy: AccessDenied: Access Denied (FAKE)", file=sys.stderr)
        return 1
    command = args[0]
    if command == "copyto":
        src, dst = _local(args[1]), _local(args[2])
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copyfile(src, dst)
        if mode == "corrupt" and ":" in args[1]:
            with open(dst, "r+b") as f:  # the first byte flipped: writing a fixed byte left random data equal 1/256
                first = f.read(1)
                f.seek(0)
                f.write(bytes([first[0] ^ 0xFF]) if first else b"\0")
    elif command == "deletefile":
        os.remove(_local(args[1]))
    elif command == "copy":
        _copy(_local(args[1]), _local(args[2]), dict(a[2:].split("=", 1) for a in argv if "=" in a))
    elif command == "lsjson":
        root = _local(args[1])
        print(json.dumps([{"Path": os.path.relpath(os.path.join(d, f), root), "ModTime": dt.datetime.fromtimestamp(
            os.path.getmtime(os.path.join(d, f)), dt.UTC).isoformat()} for d, _, fs in os.walk(root) for f in fs]))
    else:
        print(f"FAKE rclone: unknown command {command}", file=sys.stderr)
        return 2
    return 0


def _copy(source: str, target: str, flags: dict[str, str]) -> None:
    cutoff = time.time() - float(flags.get("min-age", "0s").removesuffix("s"))
    for directory, _, files in os.walk(source):
        for name in files:
            path = os.path.join(directory, name)
            if os.path.getmtime(path) > cutoff or ("include" in flags and not fnmatch.fnmatch(name, flags["include"])) \
                    or ("exclude" in flags and fnmatch.fnmatch(name, flags["exclude"])):
                continue
            dst = os.path.join(target, os.path.relpath(path, source))
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(path, dst)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
