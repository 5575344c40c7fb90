"""A sweep of one profile field: the model's predictions per value, as CSV, JSON and a PNG chart."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from gpufleet.netsim.model import Link, estimate
from gpufleet.netsim.profiles import ProfileError, with_value

SCHEMA = "gpufleet.netsim.sweep/v1"
COLUMNS = ("workers", "bandwidth_mbps", "latency_ms", "jitter_ms", "loss_pct", "allreduce_bytes",
           "checkpoint_bytes", "mathis_bound_mbps", "goodput_mbps", "allreduce_s", "allreduce_worst_s",
           "checkpoint_s", "streams", "multi_stream_goodput_mbps", "multi_stream_allreduce_s")


def sweep(link: Link, field: str, points: list[float], workers: int, allreduce_bytes: float,
          checkpoint_bytes: float) -> list[dict[str, Any]]:
    """One row per swept value, with the link's numbers and every prediction."""
    rows = []
    for value in points:
        n = workers
        point = link
        if field == "workers":
            if value != int(value) or value < 1:
                raise ProfileError(f"--sweep: workers={value:g} is not a whole number of at least 1.")
            n = int(value)
        else:
            point = with_value(link, field, value)
        rows.append({"bandwidth_mbps": point.bandwidth_mbps, "latency_ms": point.latency_ms,
                     "jitter_ms": point.jitter_ms, "loss_pct": point.loss_pct,
                     **estimate(point, n, allreduce_bytes, checkpoint_bytes).as_dict()})
    return [{c: row[c] for c in COLUMNS} for row in rows]


def write(rows: list[dict[str, Any]], field: str, profile: str, out: Path) -> list[Path]:
    """sweep.csv, sweep.json and sweep.png in ``out``; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "sweep.csv", out / "sweep.json", out / "sweep.png"]
    with paths[0].open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows({k: "" if v is None else v for k, v in row.items()} for row in rows)
    paths[1].write_text(json.dumps({"schema": SCHEMA, "profile": profile, "swept": field, "rows": rows},
                                   indent=2) + "\n")
    _chart(rows, field, profile, paths[2])
    return paths


def _chart(rows: list[dict[str, Any]], field: str, profile: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")  # files only, never a window
    from matplotlib import pyplot as plt

    xs = [row[field] for row in rows]
    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    for key, label in (("allreduce_s", "ring all-reduce"), ("allreduce_worst_s", "all-reduce, latency + jitter"),
                       ("checkpoint_s", "checkpoint transfer")):
        ax.plot(xs, [row[key] for row in rows], marker="o", label=label)
    ax.set_xlabel(field)
    ax.set_ylabel("seconds (model)")
    ax.set_title(f"{profile}: {rows[0]['workers'] if field != 'workers' else 'n'} workers, "
                 f"{rows[0]['allreduce_bytes']:,.0f} B all-reduce")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
