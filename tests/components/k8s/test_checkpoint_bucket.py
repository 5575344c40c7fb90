"""The checkpoint probe's bucket target: the probe script really uploads, downloads, compares and deletes an object
through an rclone binary (here the FAKE one, tests/components/k8s/fake_rclone.py, over a local directory standing in
for the bucket) and serves both targets' series; the rendered tools (ServiceAccount, rclone init container, env-only
remote) hold to the rclone and azure-workload-identity digests and to the Kubernetes schema."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from components import checkpoint_tools
from components.catalog import Cloud
from components.k8s import checkpoints, probe, upstream
from components.k8s.checkpoints import CheckpointBucket
from components.k8s.inputs import AddonInputs, LustreVolume
from components.k8s.render import render
from tests.components.k8s.conftest import clusters
from tests.components.k8s.test_probe import script
from tests.components.k8s.validation import validate

REMOTE = "checkpoints:ckpt-bucket/.gpufleet-probe"


def _calls(tmp_path: Path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]


def test_one_bucket_probe_uploads_reads_back_compares_and_deletes(tmp_path: Path, fake_rclone: Path) -> None:
    size = 3 * 2**20 + 7  # not a whole number of 8 MiB blocks
    result = script().probe_bucket(str(fake_rclone), REMOTE, str(tmp_path / "staging"), size)
    assert result["write_seconds"] > 0 and result["read_seconds"] > 0
    assert result["write_bytes_per_second"] == pytest.approx(size / result["write_seconds"])
    assert result["read_bytes_per_second"] == pytest.approx(size / result["read_seconds"])
    commands = [c["argv"] for c in _calls(tmp_path)]
    name = f"probe-{os.uname().nodename}.bin"
    assert [c[:2] for c in commands] == [["--config=", "copyto"], ["--config=", "copyto"], ["--config=", "deletefile"]]
    assert commands[0][3] == commands[1][2] == commands[2][2] == f"{REMOTE}/{name}"
    assert list((tmp_path / "bucket" / "ckpt-bucket" / ".gpufleet-probe").iterdir()) == []  # deleted
    assert list((tmp_path / "staging").iterdir()) == []  # local copies removed


@pytest.mark.parametrize(("mode", "message"), [("deny", "AccessDenied"), ("corrupt", "differs")])
def test_a_refused_or_corrupted_transfer_raises_and_leaves_no_local_copy(
        tmp_path: Path, fake_rclone: Path, monkeypatch: pytest.MonkeyPatch, mode: str, message: str) -> None:
    monkeypatch.setenv("FAKE_RCLONE_MODE", mode)
    with pytest.raises(OSError, match=message):
        script().probe_bucket(str(fake_rclone), REMOTE, str(tmp_path / "staging"), 2**20)
    assert list((tmp_path / "staging").iterdir()) == []


def test_a_missing_rclone_is_a_probe_failure_not_a_crash(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        script().probe_bucket(str(tmp_path / "no-rclone"), REMOTE, str(tmp_path / "staging"), 1024)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _scrape(port: int, until: str) -> str:
    deadline, text = time.monotonic() + 30, ""
    while time.monotonic() < deadline and until not in text:
        with contextlib.suppress(OSError):
            text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
        time.sleep(0.2)
    return text


@pytest.mark.parametrize("mode", ["ok", "deny"])
def test_the_running_probe_serves_both_targets(tmp_path: Path, fake_rclone: Path, mode: str) -> None:
    port = _free_port()
    env = {**os.environ, "PROBE_DIR": str(tmp_path / "lustre"), "PROBE_SIZE_MIB": "2", "PROBE_INTERVAL_S": "3600",
           "PROBE_PORT": str(port), "PROBE_REMOTE": REMOTE, "PROBE_RCLONE": str(fake_rclone),
           "PROBE_STAGING": str(tmp_path / "staging"), "PROBE_BUCKET_SIZE_MIB": "1", "FAKE_RCLONE_MODE": mode}
    proc = subprocess.Popen([sys.executable, str(probe.SCRIPT)], env=env)
    try:
        text = _scrape(port, f'{probe.PREFIX}last_success_timestamp_seconds{{target="bucket"}}' if mode == "ok"
                       else f'{probe.PREFIX}errors_total{{target="bucket"}} 1.0')
    finally:
        proc.terminate()
        proc.wait(10)
    samples = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line and not line.startswith("#")}
    for name in probe.metric_names():
        assert f'{name}{{target="lustre"}}' in samples, name
    bucket = {k for k in samples if 'target="bucket"' in k}
    if mode == "ok":
        assert bucket == {f'{name}{{target="bucket"}}' for name in probe.metric_names()}
        assert samples[f'{probe.PREFIX}errors_total{{target="bucket"}}'] == 0
    else:  # a refused bucket counts against the bucket only; the Lustre probe still succeeds
        assert bucket == {f'{probe.PREFIX}errors_total{{target="bucket"}}'}
        assert samples[f'{probe.PREFIX}errors_total{{target="bucket"}}'] == 1
        assert samples[f'{probe.PREFIX}errors_total{{target="lustre"}}'] == 0


BUCKETS = {
    Cloud.AWS: CheckpointBucket(Cloud.AWS, "ckpt-bucket", "us-east-1"),
    Cloud.GCP: CheckpointBucket(Cloud.GCP, "ckpt-bucket", "us-central1"),
    Cloud.AZURE: CheckpointBucket(Cloud.AZURE, "checkpoints", "eastus2", account="ckptaccount",
                                  client_id="00000000-0000-0000-0000-000000000001"),
}
STACK = {Cloud.AWS: "aws-train", Cloud.GCP: "gcp-train", Cloud.AZURE: "azure-train"}


def _probe_objects(cloud: Cloud, bucket: CheckpointBucket | None) -> list[dict]:
    [cluster] = clusters(STACK[cloud])
    volume = LustreVolume("fs-0123/train", {"dnsname": "fs.example", "mountname": "abcd"}, 4800)
    rendered = render(cluster, AddonInputs(kubeconfig="{}", lustre=volume, checkpoints=bucket))
    return [m.obj for m in rendered.manifests if m.obj["metadata"].get("namespace") == checkpoint_tools.NAMESPACE]


def _deployment(objs: list[dict]) -> dict:
    [deployment] = [o for o in objs if o["kind"] == "Deployment"]
    return deployment


@pytest.mark.parametrize("cloud", list(Cloud), ids=lambda c: c.value)
def test_rendered_tools_validate_and_use_only_the_pinned_rclones_names(cloud: Cloud) -> None:
    objs = _probe_objects(cloud, BUCKETS[cloud])
    for o in objs:
        if not o["apiVersion"].startswith("monitoring.coreos.com/"):
            validate(o, "1.33")
    pod = _deployment(objs)["spec"]["template"]["spec"]
    digest = upstream.digest("rclone")
    tool = digest["tool"]
    [copy] = [c for c in pod["initContainers"] if c["name"] == "rclone"]
    assert copy["image"] == f"{tool['image']}:{tool['tag']}" == "rclone/rclone:1.74.4"  # docs/content/install.md
    assert copy["command"][1] == tool["binary"]
    env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
    config = {k.removeprefix("RCLONE_CONFIG_CHECKPOINTS_").lower(): v for k, v in env.items()
              if k.startswith("RCLONE_CONFIG_CHECKPOINTS_")}
    backend = tool["backends"][checkpoints.BACKEND[cloud]]
    known = set(backend["options"]) | {"type", digest["constants"]["fs/config.go"]["ConfigProvider"]}
    if cloud is Cloud.AZURE:  # the azureblob backend takes its auth options from backend/azureblob/auth
        known |= set(tool["backends"]["backend/azureblob/auth/auth.go"]["options"])
    assert set(config) <= known
    assert config["type"] == backend["registers"] and config["env_auth"] == "true"
    assert env["PROBE_REMOTE"] == f"checkpoints:{BUCKETS[cloud].bucket}/.gpufleet-probe"
    assert {"copyto", "deletefile", "copy"} <= set(tool["commands"]) and "config" in tool["flags"]
    assert pod["serviceAccountName"] == checkpoint_tools.SERVICE_ACCOUNT
    [sa] = [o for o in objs if o["kind"] == "ServiceAccount"]
    assert sa["metadata"]["name"] == checkpoint_tools.SERVICE_ACCOUNT


def test_each_clouds_remote_is_what_its_bucket_needs() -> None:
    """Hand-read from the backends at v1.74.4: s3 needs the AWS provider and the region (provider/AWS.yaml); GCS
    with uniform bucket-level access must not send object ACLs (bucket_policy_only); Azure needs the account."""
    aws = checkpoints.options(BUCKETS[Cloud.AWS])
    assert (aws["provider"], aws["region"]) == ("AWS", "us-east-1")
    assert "AWS" in upstream.digest("rclone")["tool"]["s3_providers"]
    assert checkpoints.options(BUCKETS[Cloud.GCP])["bucket_policy_only"] == "true"
    assert checkpoints.options(BUCKETS[Cloud.AZURE])["account"] == "ckptaccount"
    for bucket in BUCKETS.values():
        assert not {"key", "access_key_id", "secret_access_key", "service_account_credentials", "sas_url"} & set(
            checkpoints.options(bucket))  # identity only, never a secret


def test_without_a_bound_bucket_the_probe_measures_lustre_only() -> None:
    objs = _probe_objects(Cloud.AWS, None)
    pod = _deployment(objs)["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["initContainers"]] == ["probe-dir"]
    assert not [e for e in pod["containers"][0]["env"] if e["name"].startswith(("RCLONE_", "PROBE_REMOTE"))]
    assert "serviceAccountName" not in pod and not [o for o in objs if o["kind"] == "ServiceAccount"]


def test_only_aks_pods_carry_the_workload_identity_label() -> None:
    for cloud, bucket in BUCKETS.items():
        labels = _deployment(_probe_objects(cloud, bucket))["spec"]["template"]["metadata"]["labels"]
        assert ("azure.workload.identity/use" in labels) is (cloud is Cloud.AZURE)


def test_alerts_cover_both_targets() -> None:
    """The alerts carry no target matcher: a bucket series fires them as a Lustre one does."""
    for alert in probe.probe_alerts():
        assert "target=" not in alert.expr
    assert "{{ $labels.target }}" in probe.probe_alerts()[0].summary
