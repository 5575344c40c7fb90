"""`gpufleet netsim estimate` on the example stacks' profiles: numbers by hand, files written, clear errors."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.cli import app

runner = CliRunner()


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["netsim", "estimate", *args])
    return result.exit_code, result.output


def test_estimate_json_by_hand() -> None:
    # aws-train 'intercontinental': 1000 Mbit/s, 80 ms one-way (RTT 0.16 s), 0.1 % loss.
    # Mathis: 1448*8/0.16 * sqrt(1.5)/sqrt(0.001) = 72,400 * 38.729833 = 2,804,039.9 b/s, below the rate.
    # 8e8 b / 2,804,039.9 b/s = 285.30265 s. All-reduce, 4 workers: 6*0.08 + 1.5*285.30265 = 428.43397 s
    # checkpoint 1e8 B: 0.16 + 285.30265 = 285.46265 s
    code, out = run("--profile", "intercontinental", "--workers", "4", "--bytes", "100MB", "--format", "json")
    assert code == 0, out
    doc = json.loads(out)
    assert doc["schema"] == "gpufleet.netsim.estimate/v1" and (doc["stack"], doc["cluster"]) == ("aws-train", "train")
    assert doc["mathis_bound_mbps"] == pytest.approx(2.8040399, rel=1e-6)
    assert doc["goodput_mbps"] == pytest.approx(2.8040399, rel=1e-6)
    assert doc["allreduce_s"] == pytest.approx(428.43397, rel=1e-6)
    assert doc["checkpoint_s"] == pytest.approx(285.46265, rel=1e-6)
    # aws-train is on AWS: NCCL's socket transport opens 2 threads x 8 sockets there (net_socket.cc, v2.23.4-1)
    assert doc["streams"] == 16 and doc["multi_stream_allreduce_s"] == pytest.approx(27.227123, rel=1e-6)
    code, out = run("--profile", "intercontinental", "--workers", "4", "--bytes", "100MB", "--streams", "1",
                    "--format", "json")
    assert json.loads(out)["multi_stream_allreduce_s"] == pytest.approx(428.43397, rel=1e-6)
    assert doc["link"] == {"bandwidth_mbps": 1000.0, "latency_ms": 80.0, "jitter_ms": 5.0, "loss_pct": 0.1}


def test_estimate_text_names_the_profile_and_its_stack() -> None:
    code, out = run("--profile", "lab-50mbps", "--stack", "dev", "--workers", "3", "--bytes", "3MB")
    assert code == 0, out
    assert "lab-50mbps (dev/dev): model" in out and "0.64" in out  # 2*2/3 * 24e6 b / 50e6 b/s = 0.64 s


def test_sweep_writes_csv_json_and_png(tmp_path: Path) -> None:
    code, out = run("--profile", "lab-50mbps", "--workers", "3", "--bytes", "3MB", "--sweep", "latency_ms=0,10,50",
                    "--out", str(tmp_path))
    assert code == 0, out
    rows = list(csv.DictReader((tmp_path / "sweep.csv").open()))
    assert [float(r["latency_ms"]) for r in rows] == [0, 10, 50]
    # 0.64 s of transfer + 4 steps x latency: 0.64, 0.68, 0.84
    assert [float(r["allreduce_s"]) for r in rows] == pytest.approx([0.64, 0.68, 0.84])
    doc = json.loads((tmp_path / "sweep.json").read_text())
    assert doc["schema"] == "gpufleet.netsim.sweep/v1" and doc["swept"] == "latency_ms" and len(doc["rows"]) == 3
    assert (tmp_path / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_sweep_over_workers(tmp_path: Path) -> None:
    code, out = run("--profile", "lab-50mbps", "--bytes", "3MB", "--sweep", "workers=2,4", "--out", str(tmp_path),
                    "--format", "json")
    assert code == 0, out
    # n=2: 1 * 24e6/50e6 = 0.48 s; n=4: 1.5 * 0.48 = 0.72 s
    assert [r["allreduce_s"] for r in json.loads(out)["rows"]] == pytest.approx([0.48, 0.72])


@pytest.mark.parametrize(("args", "expected"), [
    (["--profile", "intercontinentl"], "no network profile 'intercontinentl' in the stacks in"),
    (["--profile", "intercontinentl"], "Did you mean 'intercontinental'?"),
    (["--profile", "lab-wan", "--stack", "aws-train"], "no network profile 'lab-wan' in stack 'aws-train'"),
    (["--profile", "lab-wan", "--stack", "prod"], "no stack file for 'prod'"),
    (["--profile", "lab-wan", "--bytes", "12XB"], "--bytes: '12XB' is not a size."),
    (["--profile", "lab-wan", "--sweep", "latency=1,2"], "'latency' cannot be swept. Did you mean 'latency_ms'?"),
    (["--profile", "lab-wan", "--sweep", "loss_pct=1,100"], "loss_pct=100 is out of range; allowed: 0 <= x < 100"),
    (["--profile", "lab-wan", "--sweep", "bandwidth_mbps=0"], "bandwidth_mbps=0 is out of range; allowed: >= 0.001"),
    (["--profile", "lab-wan", "--sweep", "workers=2.5"], "workers=2.5 is not a whole number"),
    (["--profile", "lab-wan", "--sweep", "latency_ms=a,b"], "is not a comma-separated list of numbers"),
])
def test_bad_options_exit_2_with_a_clear_message(args: list[str], expected: str, tmp_path: Path) -> None:
    code, out = run(*args, "--out", str(tmp_path))
    assert code == 2 and expected in " ".join(out.split()), out
    assert not (tmp_path / "sweep.png").exists()


def test_an_invalid_fleet_exits_1_with_its_problems(tmp_path: Path) -> None:
    text = (Path("stacks") / "Pulumi.dev.yaml").read_text().replace("pools: [l4]}", "pools: [l5]}")
    (tmp_path / "Pulumi.dev.yaml").write_text(text)
    code, out = run("--profile", "lab-wan", "--stacks-dir", str(tmp_path))
    assert code == 1 and "network_profiles[0].pools[0]: 'l5' is not a known node pool" in " ".join(out.split())


def test_table_checks_every_profile_before_measuring() -> None:
    result = runner.invoke(app, ["netsim", "table", "--profile", "lab-20mbps", "--profile", "lab-2mbps"])
    assert result.exit_code == 2 and "no network profile 'lab-2mbps'" in result.output
    assert "| profile |" not in result.output  # nothing measured, no half table
