"""The health gate's bus bandwidth as a metric: each gate container writes a .prom file into the host directory it
shares with node exporter, whose textfile collector (flag derived from node_exporter's collector/textfile.go at the
pinned tag) reads it. The gate's shell runs for real against a temporary directory, with a FAKE torchrun."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from components.k8s import healthgate, observability, upstream
from components.k8s.observability import kps_values
from tests.components.k8s.conftest import STACKS, clusters
from tests.components.k8s.test_gate_quarantine import _sh, gate_pods, host_mounts

NODE_EXPORTER = "prometheus-node-exporter"
# Prometheus text exposition format (https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format):
# comment lines, and `name{label="value",...} value`
HELP = re.compile(r"# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .+")
TYPE = re.compile(r"# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)")
SAMPLE = re.compile(r'([a-zA-Z_:][a-zA-Z0-9_:]*)\{([a-zA-Z_]\w*="[^"\\]*"(?:,[a-zA-Z_]\w*="[^"\\]*")*)\} (\S+)')
# the line the gate's allreduce.py prints on each node (components/k8s/data/allreduce.py)
PASS_LINE = ("PASS: all-reduce of 1073741824 bytes over 16 ranks in 5.41934 ms: 371.5 GB/s bus bandwidth (198.133 GB/s "
             "algorithm bandwidth), threshold 300.0 GB/s")


def samples(text: str) -> dict[str, tuple[str, float]]:
    """Series name -> (labels, value) of a text-format file; fails on any line outside the format."""
    out: dict[str, tuple[str, float]] = {}
    typed: set[str] = set()
    for line in text.splitlines():
        if m := TYPE.fullmatch(line):
            typed.add(m[1])
        elif HELP.fullmatch(line):
            continue
        else:
            m = SAMPLE.fullmatch(line)
            assert m, f"not text exposition format: {line!r}"
            assert m[1] in typed and m[1] not in out, line  # TYPE before its samples, one series per name
            out[m[1]] = (m[2], float(m[3]))
    return out


def _fake_torchrun(tmp: Path, output: str, code: int) -> dict[str, str]:
    """FAKE torchrun on PATH: prints ``output``, exits ``code``."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    exe = bin_dir / "torchrun"
    exe.write_text(f"#!/bin/sh\nprintf '%s\\n' '{output}'\nexit {code}\n")
    exe.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "JOB_COMPLETION_INDEX": "0",
            "GATE_BUSBW_GBYTE_PER_S": "300.0"}


def _gate(tmp_path: Path) -> tuple[str, str, str]:
    """The all-reduce container's shell, where it sees the host directory, and the machine type."""
    cluster = clusters("aws-train")[0]  # EFA: no fabric prelude in the command
    pod = gate_pods(cluster)[0]
    main = pod["containers"][0]
    [(_, in_gate)] = host_mounts(pod, main).items()
    (tmp_path / "host").mkdir(exist_ok=True)
    return main["command"][-1], in_gate, cluster.pools[0].machine.name


def test_the_gate_writes_its_bus_bandwidth_in_text_format(tmp_path: Path) -> None:
    script, in_gate, machine = _gate(tmp_path)
    done = _sh(script, in_gate, tmp_path, _fake_torchrun(tmp_path, PASS_LINE, 0))
    assert done.returncode == 0 and PASS_LINE in done.stdout  # the log still shows the line
    files = sorted(p.name for p in (tmp_path / "host").iterdir())
    assert files == ["gpufleet_health_gate.prom"]  # the temporary file was renamed, not left behind
    got = samples((tmp_path / "host" / files[0]).read_text())
    assert got["gpufleet_health_gate_nccl_busbw_gbytes_per_second"] == (f'machine_type="{machine}"', 371.5)
    assert got["gpufleet_health_gate_nccl_busbw_threshold_gbytes_per_second"][1] == 300.0
    assert got["gpufleet_health_gate_last_run_timestamp_seconds"][1] > 1.7e9


def test_a_failing_and_a_crashed_run_still_publish_what_they_know(tmp_path: Path) -> None:
    script, in_gate, _ = _gate(tmp_path)
    slow = PASS_LINE.replace("PASS", "FAIL").replace("371.5", "12.25")
    assert _sh(script, in_gate, tmp_path, _fake_torchrun(tmp_path, slow, 1)).returncode == 1
    prom = tmp_path / "host" / "gpufleet_health_gate.prom"
    assert samples(prom.read_text())["gpufleet_health_gate_nccl_busbw_gbytes_per_second"][1] == 12.25
    assert (tmp_path / "host" / "failed").exists()
    # no bus bandwidth line (NCCL init failed): the old value goes, the run's time stays
    assert _sh(script, in_gate, tmp_path, _fake_torchrun(tmp_path, "NCCL error", 1)).returncode == 1
    got = samples(prom.read_text())
    assert "gpufleet_health_gate_nccl_busbw_gbytes_per_second" not in got
    assert "gpufleet_health_gate_last_run_timestamp_seconds" in got


@pytest.mark.parametrize("stack", STACKS)
def test_node_exporter_reads_the_directory_the_gate_writes(stack: str) -> None:
    for cluster in clusters(stack):
        if not cluster.pools:
            continue
        values = kps_values(cluster)[NODE_EXPORTER]
        read = {a.split("=", 1)[1] for a in values["extraArgs"] if a.startswith("--collector.textfile.directory=")}
        for mount in values["extraHostVolumeMounts"]:
            assert mount["mountPath"] in read and mount["readOnly"] is True
        [mount] = [m for m in values["extraHostVolumeMounts"] if m["hostPath"] == healthgate.MARKER_DIR]
        for pod in gate_pods(cluster):
            main = pod["containers"][0]
            in_gate = host_mounts(pod, main)[mount["hostPath"]]  # KeyError: the gate does not mount it
            assert f"mv {in_gate}/gpufleet_health_gate.prom.tmp {in_gate}/gpufleet_health_gate.prom" in \
                main["command"][-1]


def test_the_textfile_flag_and_the_chart_keys_are_upstreams() -> None:
    flags = upstream.digest("node-exporter")["flags"]["collector/textfile.go"]
    values = observability.kps_values(clusters("aws-train")[0])[NODE_EXPORTER]
    assert {a[2:].split("=", 1)[0] for a in values["extraArgs"]} <= set(flags)
    keys = set(upstream.digest("kube-prometheus-stack")["chart"]["keys"])
    assert {f"{NODE_EXPORTER}.{k}" for k in values} <= keys
