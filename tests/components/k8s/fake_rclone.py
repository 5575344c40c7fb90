"""FAKE rclone, for the checkpoint probe's and sync's tests only: speaks the few commands the tools run (copyto,
deletefile, copy) against a local directory standing in for the bucket ($FAKE_BUCKET_ROOT; a remote
``name:bucket/path`` is ``$FAKE_BUCKET_ROOT/bucket/path``). It logs each call (argv and the RCLONE_CONFIG_* variables it
saw) as a JSON line to $FAKE_RCLONE_LOG. $FAKE_RCLONE_MODE: ``ok``; ``deny`` (every call fails as a refused request
would); ``corrupt`` (downloads come back altered). It is no model of rclone's behaviour beyond that."""

from __future__ import annotations

import json
import os
import shutil
import sys


def _local(path: str) -> str:
    if ":" in path and not path.startswith("/"):
        return os.path.join(os.environ["FAKE_BUCKET_ROOT"], path.split(":", 1)[1])
    return path


def main(argv: list[str]) -> int:
    config = {k: v for k, v in os.environ.items() if k.startswith("RCLONE_CONFIG_")}
    with open(os.environ["FAKE_RCLONE_LOG"], "a") as log:
        log.write(json.dumps({"argv": argv, "config": config}) + "\n")
    mode = os.environ.get("FAKE_RCLONE_MODE", "ok")
    args = [a for a in argv if not a.startswith("--")]
    if mode == "deny":
        print("ERROR : Failed to copy: AccessDenied: Access Denied (FAKE)", file=sys.stderr)
        return 1
    command = args[0]
    if command == "copyto":
        src, dst = _local(args[1]), _local(args[2])
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copyfile(src, dst)
        if mode == "corrupt" and ":" in args[1]:
            with open(dst, "r+b") as f:
                f.write(b"\0")
    elif command == "deletefile":
        os.remove(_local(args[1]))
    elif command == "copy":
        shutil.copytree(_local(args[1]), _local(args[2]), dirs_exist_ok=True)
    else:
        print(f"FAKE rclone: unknown command {command}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
