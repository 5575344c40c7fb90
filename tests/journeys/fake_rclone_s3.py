"""FAKE rclone, for the recovery journey only (rclone cannot run here): the few commands the replicate script runs
(``copy`` with --min-age / --include / --exclude, ``lsjson -R --files-only``) between a local directory and an S3
remote, through boto3 against the moto server at $FAKE_S3_ENDPOINT. Like rclone's s3 env_auth it takes the remote from
its RCLONE_CONFIG_<REMOTE>_* variables and the credentials from the AWS SDK's default chain (here botocore's: web
identity from AWS_ROLE_ARN + AWS_WEB_IDENTITY_TOKEN_FILE through STS, or static keys), and logs, as a JSON line to
$FAKE_RCLONE_LOG, the identity each call ran as. It keeps a file's modification time in the object's ``mtime``
metadata, as rclone does. It is no model of rclone beyond that."""

from __future__ import annotations

import datetime as dt
import fnmatch
import json
import os
import sys
import time

import boto3


def _remote(path: str) -> tuple[str, str, str] | None:
    """(remote, bucket, key prefix) of ``remote:bucket/prefix``; None for a local path."""
    if path.startswith("/") or ":" not in path:
        return None
    remote, rest = path.split(":", 1)
    options = {k.removeprefix(f"RCLONE_CONFIG_{remote.upper()}_").lower(): v for k, v in os.environ.items()
               if k.startswith(f"RCLONE_CONFIG_{remote.upper()}_")}
    if options.get("type") != "s3" or options.get("env_auth") != "true":
        raise SystemExit(f"FAKE rclone: remote {remote} is {options} (only an env_auth s3 remote runs here)")
    bucket, _, prefix = rest.partition("/")
    return remote, bucket, prefix.strip("/")


def _client() -> object:
    os.environ["AWS_ENDPOINT_URL"] = os.environ["FAKE_S3_ENDPOINT"]  # every AWS service of this process: moto
    session = boto3.Session(region_name="us-east-1")
    who = session.client("sts").get_caller_identity()["Arn"]
    with open(os.environ["FAKE_RCLONE_LOG"], "a") as log:
        log.write(json.dumps({"argv": sys.argv[1:], "caller": who}) + "\n")
    return session.client("s3")


def _wanted(name: str, flags: dict[str, str]) -> bool:
    if "include" in flags and not fnmatch.fnmatch(name, flags["include"]):
        return False
    return not ("exclude" in flags and fnmatch.fnmatch(name, flags["exclude"]))


def main(argv: list[str]) -> int:
    flags = dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)
    args = [a for a in argv if not a.startswith("-")]
    cutoff = time.time() - float(flags.get("min-age", "0s").rstrip("s"))
    command, s3 = args[0], _client()
    if command == "lsjson":
        _, bucket, prefix = _remote(args[1])  # type: ignore[misc]
        listed = s3.list_objects_v2(Bucket=bucket, Prefix=prefix + "/").get("Contents", [])
        out = [{"Path": o["Key"][len(prefix) + 1:], "ModTime": s3.head_object(Bucket=bucket, Key=o["Key"])[
            "Metadata"]["mtime"]} for o in listed]
        print(json.dumps(out))
        return 0
    source, target = args[1], args[2]
    if _remote(source) is None:  # upload
        _, bucket, prefix = _remote(target)  # type: ignore[misc]
        for root, _, files in os.walk(source):
            for name in files:
                path = os.path.join(root, name)
                mtime = os.path.getmtime(path)
                if mtime <= cutoff and _wanted(name, flags):
                    key = f"{prefix}/{os.path.relpath(path, source)}"
                    stamp = dt.datetime.fromtimestamp(mtime, dt.UTC).isoformat()
                    s3.upload_file(path, bucket, key, ExtraArgs={"Metadata": {"mtime": stamp}})
        return 0
    _, bucket, prefix = _remote(source)  # type: ignore[misc]  # download
    for o in s3.list_objects_v2(Bucket=bucket, Prefix=prefix + "/").get("Contents", []):
        name = o["Key"].rsplit("/", 1)[-1]
        # rclone's modification time of an object is its mtime metadata, not the upload time (LastModified)
        mtime = dt.datetime.fromisoformat(s3.head_object(Bucket=bucket, Key=o["Key"])["Metadata"]["mtime"])
        if mtime.timestamp() <= cutoff and _wanted(name, flags):
            path = os.path.join(target, o["Key"][len(prefix) + 1:])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            s3.download_file(bucket, o["Key"], path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
