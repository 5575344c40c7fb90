"""The health gate's measure: its all-reduce script compares the BUS bandwidth with the catalogue's bus-bandwidth
threshold, with algbw and busbw as nccl-tests defines them for all-reduce (NVIDIA/nccl-tests v2.19.6,
src/all_reduce.cu AllReduceGetBw, doc/PERFORMANCE.md): algbw = S / t, busbw = algbw * 2 (n - 1) / n.

By hand, a healthy 16-rank run (2 nodes x 8 GPUs) of 1 GiB = 1,073,741,824 bytes in 5 ms:
  algbw = 1,073,741,824 / 0.005 / 1e9 = 214.748 GB/s
  busbw = 214.748 x 2 x 15 / 16 = 214.748 x 1.875 = 402.653 GB/s
p5.48xlarge's threshold is 350 GB/s of bus bandwidth: the run passes. Its algbw is 16 / 30 of its busbw, 46.7 % lower:
compared with the threshold it would fail a healthy run.

The script itself is also executed: torch's own launcher (torchrun) runs it on 4 and 2 CPU ranks with the gloo
backend over loopback, the same code path but for the device (the gate runs NCCL on GPUs, which no test machine has);
its printed line then goes through the gate's own shell into the metric node exporter reads.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from components.catalog import Cloud, by_name
from components.k8s import healthgate
from tests.components.k8s.test_gate_busbw_metric import _fake_torchrun, _gate, samples
from tests.components.k8s.test_gate_quarantine import _sh

GIB = 1_073_741_824
LINE = re.compile(r"(PASS|FAIL): all-reduce of (\d+) bytes over (\d+) ranks in ([0-9.]+) ms: ([0-9.]+) GB/s bus "
                  r"bandwidth \(([0-9.]+) GB/s algorithm bandwidth\), threshold ([0-9.]+) GB/s")


@pytest.fixture(scope="module")
def script() -> ModuleType:
    """The gate's script as a module: importing it runs nothing (torch is imported in main())."""
    spec = importlib.util.spec_from_file_location("gate_allreduce", healthgate.SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("ranks", "busbw"), [(16, 402.653184), (8, 214.7483648 * 1.75), (2, 214.7483648)])
def test_bus_bandwidth_is_algorithm_bandwidth_times_2_n_minus_1_over_n(script: ModuleType, ranks: int,
                                                                       busbw: float) -> None:
    algbw, bus = script.bandwidths(GIB, 0.005, ranks)
    assert algbw == pytest.approx(214.7483648)
    assert bus == pytest.approx(busbw)


def test_a_healthy_16_rank_run_passes_on_its_bus_bandwidth(script: ModuleType) -> None:
    threshold = by_name(Cloud.AWS, "p5.48xlarge").nccl_busbw_gbyte_per_s
    assert threshold == 350
    passed, line = script.judge(GIB, 0.005, 16, threshold)
    assert passed, line
    assert line == ("PASS: all-reduce of 1073741824 bytes over 16 ranks in 5 ms: 402.653 GB/s bus bandwidth "
                    "(214.748 GB/s algorithm bandwidth), threshold 350.0 GB/s")
    algbw, busbw = script.bandwidths(GIB, 0.005, 16)
    assert algbw < threshold < busbw  # compared on algbw (46.7 % lower) this healthy run would fail


def test_a_run_below_the_threshold_fails(script: ModuleType) -> None:
    """Bus bandwidth 350 GB/s exactly passes; 1 % slower (t x 1.01) fails."""
    at = GIB / (350e9 * 16 / 30)  # the time at which busbw is exactly 350
    assert script.judge(GIB, at, 16, 350.0)[0]
    passed, line = script.judge(GIB, at * 1.01, 16, 350.0)
    assert not passed and line.startswith("FAIL: ") and "346.535 GB/s bus bandwidth" in line


def run_gate(tmp_path: Path, ranks: int, threshold: float) -> subprocess.CompletedProcess[str]:
    """torchrun (torch.distributed.run) on this machine: ``ranks`` CPU processes, gloo over loopback."""
    env = {**os.environ, "GATE_BACKEND": "gloo", "GATE_BYTES": str(1 << 20), "GATE_ITERATIONS": "5",
           "GATE_BUSBW_GBYTE_PER_S": str(threshold), "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                           f"--nproc-per-node={ranks}", str(healthgate.SCRIPT)], env=env, cwd=tmp_path, text=True,
                          capture_output=True, timeout=240, check=False)


def test_the_script_runs_and_reports_bus_bandwidth_by_the_definition(tmp_path: Path) -> None:
    done = run_gate(tmp_path, 4, 0.0)
    assert done.returncode == 0, done.stderr[-2000:]
    [line] = [m for m in map(LINE.fullmatch, done.stdout.splitlines()) if m]  # one line per node: LOCAL_RANK 0
    verdict, size, ranks, ms, busbw, algbw, _ = line.groups()
    assert (verdict, int(size), int(ranks)) == ("PASS", 1 << 20, 4)
    # from the time it printed, by the definition (every figure is printed to 6 significant digits)
    by_definition = (1 << 20) / (float(ms) / 1e3) / 1e9
    assert float(algbw) == pytest.approx(by_definition, rel=1e-5)
    assert float(busbw) == pytest.approx(by_definition * 2 * 3 / 4, rel=1e-5)  # 1.5 x algbw at 4 ranks

    # the same line, through the gate container's shell: the metric is the bus bandwidth the script printed
    script, in_gate, _ = _gate(tmp_path)
    published = _sh(script, in_gate, tmp_path, _fake_torchrun(tmp_path, line.group(0), 0))
    assert published.returncode == 0, published.stderr
    metric = samples((tmp_path / "host" / "gpufleet_health_gate.prom").read_text())
    assert metric["gpufleet_health_gate_nccl_busbw_gbytes_per_second"][1] == float(busbw)


def test_the_script_exits_1_below_its_threshold(tmp_path: Path) -> None:
    done = run_gate(tmp_path, 2, 1e6)
    assert done.returncode != 0
    [line] = [m for m in map(LINE.fullmatch, done.stdout.splitlines()) if m]
    assert line.group(1) == "FAIL" and line.group(3) == "2"
    assert line.group(5) == line.group(6)  # 2 ranks: 2 (n - 1) / n = 1, bus and algorithm bandwidth are equal
