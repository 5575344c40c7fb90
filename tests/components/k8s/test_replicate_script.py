"""The replicate script (components/k8s/data/replicate_checkpoints.py) run against the FAKE rclone
(tests/components/k8s/fake_rclone.py, local directories for buckets): a marker never reaches a peer before its
checkpoint's files, a peer's call sees only that peer's identity, a pending peer is skipped, a failed peer fails the
run without stopping the others, and the restore takes each run's newest complete checkpoint."""

from __future__ import annotations

import importlib.util
import json
import os
import time
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.k8s.replicate import SCRIPT

MARKER = ".metadata"  # PyTorch DCP's, typed from its FileSystemWriter (written after every shard)
MIN_AGE_S = 300


def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("replicate_checkpoints", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write(path: Path, age_s: float, data: bytes = b"x") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.utime(path, (time.time() - age_s,) * 2)


def peer(name: str, bucket: str, env: dict[str, str] | None = None, files: dict[str, str] | None = None) -> dict:
    return {"name": name, "target": f"peer:{bucket}/checkpoints", "env": env or {}, "files": files or {}}


def calls(tmp_path: Path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]


def test_a_marker_follows_its_files_and_a_checkpoint_in_progress_waits(tmp_path: Path, fake_rclone: Path) -> None:
    lustre = tmp_path / "lustre"
    write(lustre / "run" / "s1" / "shard", 900)
    write(lustre / "run" / "s1" / MARKER, 890)  # complete, old enough
    write(lustre / "run" / "s2" / "shard", 400)
    write(lustre / "run" / "s2" / MARKER, 20)  # complete seconds ago: waits for the next run, whole
    write(lustre / "run" / "s3" / "shard", 10)  # still being written
    code = script().replicate(str(fake_rclone), str(lustre), [peer("b", "bucket-b")], MARKER, MIN_AGE_S, [])
    assert code == 0
    got = {str(p.relative_to(tmp_path / "bucket" / "bucket-b" / "checkpoints"))
           for p in (tmp_path / "bucket" / "bucket-b").rglob("*") if p.is_file()}
    assert got == {"run/s1/shard", f"run/s1/{MARKER}", "run/s2/shard"}
    first, second = (c["argv"] for c in calls(tmp_path))
    assert f"--exclude={MARKER}" in first and f"--min-age={MIN_AGE_S}s" in first
    assert f"--include={MARKER}" in second
    assert int(next(a for a in second if a.startswith("--min-age="))[10:-1]) > MIN_AGE_S  # a cutoff no later


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shard_ages=st.lists(st.integers(0, 1200), min_size=1, max_size=4), lag=st.integers(0, 1200))
def test_a_marker_at_a_peer_means_every_file_of_its_checkpoint_is_there(
        tmp_path: Path, fake_rclone: Path, shard_ages: list[int], lag: int) -> None:
    """The marker is written after the shards (DCP), so it is younger than each: whatever the ages, the peer never
    holds a marker without every shard."""
    root = tmp_path / f"case-{time.monotonic_ns()}"
    for i, age in enumerate(shard_ages):
        write(root / "lustre" / "run" / "s" / f"shard-{i}", age)
    write(root / "lustre" / "run" / "s" / MARKER, max(min(shard_ages) - lag, 0))
    bucket = f"{root.name}"
    script().replicate(str(fake_rclone), str(root / "lustre"), [peer("b", bucket)], MARKER, MIN_AGE_S, [])
    there = tmp_path / "bucket" / bucket / "checkpoints" / "run" / "s"
    if (there / MARKER).exists():
        assert all((there / f"shard-{i}").exists() for i in range(len(shard_ages)))


def test_each_peers_call_sees_its_own_identity_and_nothing_of_the_pods(
        tmp_path: Path, fake_rclone: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # what the pod's own identity webhooks inject (EKS Pod Identity, AKS workload identity)
    monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://169.254.170.23/v1/credentials")
    monkeypatch.setenv("AZURE_CLIENT_ID", "this-workers-own-identity")
    lustre = tmp_path / "lustre"
    write(lustre / "run" / "s1" / MARKER, 900)
    to_aws = peer("aws", "b1", env={"AWS_ROLE_ARN": "arn:aws:iam::1:role/r", "RCLONE_CONFIG_PEER_TYPE": "s3"})
    to_gcp = peer("gcp", "b2", files={"GOOGLE_APPLICATION_CREDENTIALS": '{"type": "external_account"}'})
    assert script().replicate(str(fake_rclone), str(lustre), [to_aws, to_gcp], MARKER, MIN_AGE_S, []) == 0
    aws, _, gcp, _ = calls(tmp_path)
    assert aws["identity"] == {"AWS_ROLE_ARN": "arn:aws:iam::1:role/r"}
    assert aws["config"] == {"RCLONE_CONFIG_PEER_TYPE": "s3"}
    assert set(gcp["identity"]) == {"GOOGLE_APPLICATION_CREDENTIALS"} and gcp["config"] == {}
    assert gcp["credentials"] == '{"type": "external_account"}'
    assert not Path(gcp["identity"]["GOOGLE_APPLICATION_CREDENTIALS"]).exists()  # gone after the call


def test_a_pending_peer_is_skipped_and_a_failed_one_fails_the_run_but_not_the_others(
        tmp_path: Path, fake_rclone: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lustre = tmp_path / "lustre"
    write(lustre / "run" / "s1" / "shard", 900)
    write(lustre / "run" / "s1" / MARKER, 900)
    (tmp_path / "bucket" / "blocked").write_text("a file where the bucket's directory would be")
    peers = [{"name": "new", "pending": True}, peer("broken", "blocked"), peer("fine", "b3")]
    assert script().replicate(str(fake_rclone), str(lustre), peers, MARKER, MIN_AGE_S, []) == 1
    out = capsys.readouterr().out
    assert "peer new: pending" in out and "peer broken: FAILED" in out and "peer fine: replicated" in out
    assert (tmp_path / "bucket" / "b3" / "checkpoints" / "run" / "s1" / MARKER).exists()
    assert len([c for c in calls(tmp_path) if "blocked" in " ".join(c["argv"])]) == 1  # no marker pass after it


def test_newest_complete_picks_by_the_markers_time_per_run() -> None:
    entries = [{"Path": "a/step-9/.metadata", "ModTime": "2026-12-01T10:00:00Z"},
               {"Path": "a/step-10/.metadata", "ModTime": "2026-12-01T11:00:00Z"},  # newer, though "smaller" name
               {"Path": "a/step-11/shard", "ModTime": "2026-12-01T12:00:00Z"},  # no marker: incomplete
               {"Path": "b/x/y/.metadata", "ModTime": "2026-12-01T09:00:00Z"},  # nested checkpoint dirs
               {"Path": "c/.metadata", "ModTime": "2026-12-01T09:00:00Z"}]  # a marker at a run's root: no checkpoint
    assert script().newest_complete(entries, MARKER) == {"a": "a/step-10", "b": "b/x/y"}


def test_newest_complete_compares_times_not_their_text() -> None:
    """rclone's ModTime is RFC 3339 with a trimmed fraction and the backend's offset: as text, 10:00:00Z sorts
    after 10:00:00.5Z and 10:30:00+01:00 after 10:00:00Z, though both are earlier."""
    entries = [{"Path": "a/s1/.metadata", "ModTime": "2026-12-01T10:00:00.5Z"},
               {"Path": "a/s2/.metadata", "ModTime": "2026-12-01T10:00:00Z"},
               {"Path": "b/s1/.metadata", "ModTime": "2026-12-01T10:00:00Z"},
               {"Path": "b/s2/.metadata", "ModTime": "2026-12-01T10:30:00+01:00"}]
    assert script().newest_complete(entries, MARKER) == {"a": "a/s1", "b": "b/s1"}


def test_the_restore_brings_the_newest_complete_checkpoint_once(tmp_path: Path, fake_rclone: Path) -> None:
    own = tmp_path / "bucket" / "own" / "checkpoints"
    write(own / "run" / "s1" / "shard", 900, b"old")
    write(own / "run" / "s1" / MARKER, 890)
    write(own / "run" / "s2" / "shard", 600, b"new")
    write(own / "run" / "s2" / MARKER, 590)
    write(own / "run" / "s3" / "shard", 100)  # arriving: no marker yet
    lustre = tmp_path / "lustre"
    module = script()
    assert module.restore(str(fake_rclone), "checkpoints:own/checkpoints", str(lustre), MARKER, []) == 0
    assert sorted(str(p.relative_to(lustre)) for p in lustre.rglob("*") if p.is_file()) == [
        f"run/s2/{MARKER}", "run/s2/shard"]
    before = len(calls(tmp_path))
    assert module.restore(str(fake_rclone), "checkpoints:own/checkpoints", str(lustre), MARKER, []) == 0
    assert len(calls(tmp_path)) == before + 1  # only the listing: Lustre already has it


def test_every_command_and_flag_it_runs_is_the_pinned_rclones(tmp_path: Path, fake_rclone: Path) -> None:
    """The calls of a replicate and a restore with the flags the stack renders (REPLICA_FLAGS), against the rclone
    digest: its commands, its global flags and each command's own (docs/content/commands at the pin)."""
    from components.k8s import replicate, upstream

    flags = json.loads(next(e["value"] for e in replicate.replicate_container([], "checkpoints", MIN_AGE_S)["env"]
                            if e["name"] == "REPLICA_FLAGS"))
    lustre = tmp_path / "lustre"
    write(lustre / "run" / "s1" / MARKER, 900)
    module = script()
    module.replicate(str(fake_rclone), str(lustre), [peer("b", "b4")], MARKER, MIN_AGE_S, flags)
    module.restore(str(fake_rclone), "checkpoints:b4/checkpoints", str(tmp_path / "restored"), MARKER, flags)
    tool = upstream.digest("rclone")["tool"]
    ran = [c["argv"] for c in calls(tmp_path)]
    assert {a[0] for a in ran} == {"copy", "lsjson"} <= set(tool["commands"])
    for argv in ran:
        used = {a[2:].split("=", 1)[0] for a in argv if a.startswith("--")}
        assert used <= set(tool["flags"]) | set(tool["command_flags"][argv[0]]), argv
        assert not [a for a in argv if a.startswith("-") and not a.startswith("--")]  # no short flags to misread
