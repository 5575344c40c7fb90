"""A pretraining job survives losing its worker (docs/fleet-queue.md "Recovery across clusters"), following the
objects: the job on worker A (gcp-train) writes a checkpoint to Lustre; A's checkpoint sync, as rendered by the
stack, replicates it to worker B's bucket (aws-train, S3 on a moto server) as A's checkpoint-tools identity through
B's IAM role (botocore's web identity chain, the variables the stack wrote); A's copy of the workload is evicted,
the manager's MultiKueue check goes to Retry and the next worker in the team's order, B, admits it; B's restore,
as rendered by B's stack, lists the replicated checkpoint in B's bucket and brings it onto B's Lustre, where the
job resumes from it. A checkpoint still being written when the sync ran never arrives as a complete one.

Real here: the stacks' previews, the rendered script and its variables, S3 and STS (moto server), botocore's
credential chain. FAKE: rclone (tests/journeys/fake_rclone_s3.py; it cannot run here), the projected token (a dummy
JWT moto does not verify), Lustre (a local directory each side), B's own Pod Identity credentials (moto's test keys).
MODEL: Kueue's MultiKueue manager (``kueue_model`` below: what the doc cites from v0.19.2's workload.go, not Kueue)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto.server import ThreadedMotoServer

from components.k8s import kueue
from tests.components.replica_fleet import previews, three_cloud_fleet
from tests.conftest import one

FAKE_RCLONE = Path(__file__).parent / "fake_rclone_s3.py"
CONFIG = "kubernetes:kueue.x-k8s.io/v1beta2:MultiKueueConfig"
RUN = "pretrain-llama-70b"


@pytest.fixture(scope="module")
def moto() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


STATES = "apis/kueue/v1beta2/admissioncheck_types.go"  # Kueue's CheckState constants, from the kueue digest


def kueue_model(order: list[str], admitted: str, room: dict[str, bool]) -> tuple[list[tuple[str, str]], str]:
    """MODEL of Kueue v0.19.2's MultiKueue manager on an eviction, not Kueue: as workload.go reads (the branch "workload
    evicted on worker cluster"), a Ready check whose remote copy was evicted is set to Retry with the message
    "Workload evicted on worker cluster: <name>, resetting for re-admission"; the workload queues on the manager
    again and is dispatched from the start of the config's order (incremental, stepSize 1, the config's order:
    docs/fleet-queue.md); the first worker with room admits it and the check is Ready again. Returns the check's
    (state, message) history and the worker that admitted it."""
    ready, retry, pending = (kueue.constant(STATES, f"CheckState{s}") for s in ("Ready", "Retry", "Pending"))
    history = [(ready, f"admitted on {admitted}")]
    assert room[admitted] is False  # its nodes failed: no room there now
    history += [(retry, f'Workload evicted on worker cluster: "{admitted}", resetting for re-admission. '
                        f'Previously: "{ready}"'), (pending, "dispatching")]
    now_on = next(w for w in order if room[w])
    return [*history, (ready, f"admitted on {now_on}")], now_on


def container(graph: Any, name: str) -> dict[str, Any]:
    cronjob = one(graph, ":CronJob", "train-addons-cronjob-gpufleet-probe-checkpoint-sync").inputs
    pod = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    [found] = [c for c in pod["containers"] if c["name"] == name]
    return found


def env_of(c: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in c["env"]}


def run(script: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(script), *args], env=env, capture_output=True, text=True, timeout=300,
                          check=False)


def write(path: Path, data: bytes, age_s: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.utime(path, (time.time() - age_s, time.time() - age_s))


def test_an_evicted_job_resumes_on_another_clouds_worker_from_its_replicated_checkpoint(
        tmp_path: Path, moto: str) -> None:
    graphs = previews(three_cloud_fleet(tmp_path / "stacks"), ("fleet", "gcp-train", "aws-train"))
    a, b = graphs["gcp-train"], graphs["aws-train"]
    data = one(a, ":ConfigMap", "train-addons-configmap-gpufleet-probe-checkpoint-replicas").inputs["data"]
    script = tmp_path / "replicate_checkpoints.py"
    script.write_text(data["replicate_checkpoints.py"])  # the script as the stack renders it, not a copy
    rclone = tmp_path / "rclone"
    rclone.write_text(f"#!/bin/sh\nexec {sys.executable} {FAKE_RCLONE} \"$@\"\n")
    rclone.chmod(0o755)
    log = tmp_path / "rclone.jsonl"
    base = {"PATH": os.environ["PATH"], "FAKE_S3_ENDPOINT": moto, "FAKE_RCLONE_LOG": str(log)}

    # 1. the job on A writes step 100 (complete: shards, then DCP's .metadata) and is writing step 200
    lustre_a = tmp_path / "lustre-a" / "checkpoints"
    write(lustre_a / RUN / "step-100" / "__0_0.distcp", b"weights-100", age_s=900)
    write(lustre_a / RUN / "step-100" / ".metadata", b"dcp-metadata-100", age_s=890)
    write(lustre_a / RUN / "step-200" / "__0_0.distcp", b"weights-200-partial", age_s=10)

    # 2. A's sync replicates to B's bucket, as A's tools through B's role (only the S3 peer can run here)
    peers = {p["name"]: p for p in json.loads(data["peers.json"])}
    to_b = peers["aws-train-train"]
    bucket = to_b["target"].split(":", 1)[1].split("/", 1)[0]
    s3 = boto3.client("s3", endpoint_url=moto, region_name="us-east-1", aws_access_key_id="testing",
                      aws_secret_access_key="testing")
    s3.create_bucket(Bucket=bucket)
    token = tmp_path / "token-b"
    token.write_text("eyJhbGciOiJub25lIn0.eyJzdWIiOiJGQUtFIn0.")  # FAKE projected token: moto does not verify it
    to_b["env"]["AWS_WEB_IDENTITY_TOKEN_FILE"] = str(token)
    (tmp_path / "peers.json").write_text(json.dumps([to_b]))
    env = {**base, **env_of(container(a, "replicate")), "REPLICA_SOURCE": str(lustre_a),
           "REPLICA_PEERS": str(tmp_path / "peers.json"), "REPLICA_RCLONE": str(rclone)}
    done = run(script, env)
    assert done.returncode == 0, done.stdout + done.stderr
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]}
    assert keys == {f"checkpoints/{RUN}/step-100/__0_0.distcp", f"checkpoints/{RUN}/step-100/.metadata"}
    callers = {json.loads(line)["caller"] for line in log.read_text().splitlines()}
    role = to_b["env"]["AWS_ROLE_ARN"].rsplit("/", 1)[-1]
    assert len(callers) == 1 and f":assumed-role/{role}/" in callers.pop()  # the role B's stack made for A

    # 3. A loses its nodes: the manager (MODEL) retries pretrain's workload on the next worker of its order, read
    # from the manager's objects: the team's ClusterQueue -> its MultiKueue AdmissionCheck -> MultiKueueConfig
    fleet = graphs["fleet"]
    queue = one(fleet, ":ClusterQueue", "queue-addons-clusterqueue-pretrain").inputs["spec"]
    [check] = queue["admissionChecksStrategy"]["admissionChecks"]
    params = one(fleet, ":AdmissionCheck", f"queue-addons-admissioncheck-{check['name']}").inputs["spec"]["parameters"]
    order = one(fleet, CONFIG, f"queue-addons-multikueueconfig-{params['name']}").inputs["spec"]["clusters"]
    assert order[:2] == ["gcp-train-train", "aws-train-train"]
    history, now_on = kueue_model(order, "gcp-train-train", {w: w != "gcp-train-train" for w in order})
    assert [state for state, _ in history] == ["Ready", "Retry", "Pending", "Ready"]  # Kueue's CheckState values
    assert "resetting for re-admission" in history[1][1] and now_on == "aws-train-train"

    # 4. on B, the restore (as B's stack renders it) lists B's bucket and brings the newest complete step to Lustre
    restore = container(b, "restore")
    lustre_b = tmp_path / "lustre-b" / "checkpoints"
    own = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}  # FAKE: B's Pod Identity
    env = {**base, **own, **env_of(restore), "REPLICA_TARGET": str(lustre_b), "REPLICA_RCLONE": str(rclone)}
    assert env["REPLICA_REMOTE"] == f"checkpoints:{bucket}/checkpoints"  # B's own bucket: the one A wrote to
    done = run(script, env, "restore")
    assert done.returncode == 0, done.stdout + done.stderr

    # 5. the job resumes on B from the newest complete checkpoint in its checkpoint directory
    complete = sorted(p.parent.name for p in (lustre_b / RUN).glob("*/.metadata"))
    assert complete == ["step-100"]
    assert (lustre_b / RUN / "step-100" / "__0_0.distcp").read_bytes() == b"weights-100"
    assert not (lustre_b / RUN / "step-200").exists()  # never taken for complete
    again = run(script, env, "restore")  # a second run finds the marker and copies nothing
    assert again.returncode == 0 and "restored" not in again.stdout
