"""The checkpoint I/O probe: the script really writes, evicts and reads back a file and serves what it measured;
its alerts name only its own series; it is deployed exactly where a Lustre volume and monitoring exist."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import ModuleType

import pytest

from components.k8s import probe
from components.k8s.inputs import AddonInputs, LustreVolume
from components.k8s.render import render
from components.k8s.upstream import crd
from tests.components.k8s.conftest import clusters
from tests.components.k8s.promql import metric_names
from tests.components.k8s.validation import validate


def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("checkpoint_probe", probe.SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def series(text: str) -> dict[str, float]:
    """name -> value of a Prometheus text exposition (labels dropped: the probe sets only target)."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name_labels, value = line.rsplit(" ", 1)
            out[name_labels.split("{")[0]] = float(value)
    return out


def test_one_probe_writes_reads_back_and_cleans_up(tmp_path: Path) -> None:
    size = 3 * 2**20 + 5  # not a whole number of 8 MiB blocks
    result = script().probe_once(str(tmp_path / "probe"), size)
    assert result["write_seconds"] > 0 and result["read_seconds"] > 0
    assert result["write_bytes_per_second"] == pytest.approx(size / result["write_seconds"])
    assert result["read_bytes_per_second"] == pytest.approx(size / result["read_seconds"])
    assert abs(result["last_success_timestamp_seconds"] - time.time()) < 60
    assert list((tmp_path / "probe").iterdir()) == []


def test_a_failing_volume_raises(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(OSError):
        script().probe_once(str(blocker / "probe"), 1024)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_running_probe_serves_its_series(tmp_path: Path) -> None:
    port = _free_port()
    env = {**os.environ, "PROBE_DIR": str(tmp_path), "PROBE_SIZE_MIB": "2", "PROBE_INTERVAL_S": "3600",
           "PROBE_PORT": str(port)}
    proc = subprocess.Popen([sys.executable, str(probe.SCRIPT)], env=env)
    try:
        deadline, text = time.monotonic() + 20, ""
        while time.monotonic() < deadline and "last_success" not in text:
            try:
                text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
            except OSError:
                time.sleep(0.2)
        got = series(text)
    finally:
        proc.terminate()
        proc.wait(10)
    assert set(got) == set(probe.metric_names())
    assert got[f"{probe.PREFIX}errors_total"] == 0
    assert got[f"{probe.PREFIX}write_bytes_per_second"] > 0


def test_alerts_parse_and_read_only_the_probes_series() -> None:
    for alert in probe.probe_alerts():
        assert metric_names(alert.expr) <= set(probe.metric_names()), alert.name
    assert probe.metric_names() == [f"{probe.PREFIX}{n}" for n in script().METRICS]


def _rendered(lustre: bool, monitoring: bool) -> list[dict]:
    [cluster] = clusters("aws-train")
    cluster = type(cluster)(**{**cluster.__dict__, "spec": cluster.spec.model_copy(update={
        "addons": cluster.spec.addons.model_copy(update={"monitoring": monitoring})})})
    volume = LustreVolume("fs-0123/train", {"dnsname": "fs.example", "mountname": "abcd"}, 4800) if lustre else None
    return [m.obj for m in render(cluster, AddonInputs(kubeconfig="{}", lustre=volume)).manifests]


@pytest.mark.parametrize(("lustre", "monitoring", "deployed"), [
    (True, True, True), (True, False, False), (False, True, False)])
def test_deployed_where_there_is_a_volume_to_probe_and_a_prometheus_to_tell(
        lustre: bool, monitoring: bool, deployed: bool) -> None:
    objs = _rendered(lustre, monitoring)
    ours = [o for o in objs if o["metadata"].get("namespace") == probe.NAMESPACE]
    assert bool(ours) is deployed
    if deployed:
        claims = {o["metadata"]["name"] for o in ours if o["kind"] == "PersistentVolumeClaim"}
        [deployment] = [o for o in ours if o["kind"] == "Deployment"]
        [volume] = [v for v in deployment["spec"]["template"]["spec"]["volumes"] if "persistentVolumeClaim" in v]
        assert volume["persistentVolumeClaim"]["claimName"] in claims
        for o in ours:
            if o["apiVersion"].startswith("monitoring.coreos.com/"):
                assert crd.problems(o) == []
            else:
                validate(o, "1.33")
