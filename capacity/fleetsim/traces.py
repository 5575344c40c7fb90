"""Job traces for the simulator: the public Alibaba GPU trace (digest derived by scripts/derive_fleet_trace.py)
mapped onto the fleet's teams, and generated training traces (seeded)."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from capacity.fleetsim.model import Job

ALIBABA = Path(__file__).resolve().parents[1] / "data" / "traces" / "alibaba-gpu-v2023.json"


@dataclass(frozen=True)
class TeamLoad:
    """A team's work in a generated trace."""

    team: str
    gpu: str
    spot_ok: bool
    share: float  # of the trace's GPU-hours
    gangs: tuple[int, ...]  # gang sizes drawn uniformly
    median_hours: float  # job length: lognormal around this median


def generated(loads: Sequence[TeamLoad], jobs: int, seed: int = 0, sigma: float = 1.0) -> list[Job]:
    """``jobs`` jobs, Poisson arrivals at one job per hour on average (scale_to_load sets the real rate)."""
    rng = random.Random(seed)
    weights = [load.share for load in loads]
    out, now = [], 0.0
    for i in range(jobs):
        now += rng.expovariate(1.0 / 3600.0)
        load = rng.choices(loads, weights)[0]
        hours = load.median_hours * math.exp(rng.gauss(0.0, sigma))
        out.append(Job(i, now, load.team, load.gpu, rng.choice(load.gangs), max(hours, 1 / 60) * 3600.0,
                       load.spot_ok))
    return out


def alibaba(teams: Mapping[str, tuple[str, str, bool]], path: Path = ALIBABA) -> tuple[list[Job], dict]:
    """The digest's jobs with each QoS class given a (team, GPU model, spot_ok) of the fleet; and its source."""
    digest = json.loads(path.read_text())
    missing = sorted({qos for _, qos, _, _ in digest["jobs"]} - set(teams))
    if missing:
        raise ValueError(f"{path.name}: QoS classes {', '.join(missing)} have no team; map each to one")
    jobs = [Job(i, float(arrival), teams[qos][0], teams[qos][1], gpus, float(duration), teams[qos][2])
            for i, (arrival, qos, gpus, duration) in enumerate(digest["jobs"])]
    return jobs, digest["source"]


def offered_gpu_hours(jobs: Sequence[Job]) -> float:
    return sum(j.gpus * j.duration_s for j in jobs) / 3600.0


def scale_to_load(jobs: Sequence[Job], gpus: int, load: float) -> list[Job]:
    """Stretch or squeeze arrival times (lengths kept) so the trace offers ``load`` x ``gpus`` GPUs on average
    over its arrival span: the trace's shape at the fleet's size."""
    first, last = jobs[0].arrival_s, jobs[-1].arrival_s
    span_s = offered_gpu_hours(jobs) * 3600.0 / (gpus * load)
    factor = span_s / max(last - first, 1.0)
    return [Job(j.id, (j.arrival_s - first) * factor, j.team, j.gpu, j.gpus, j.duration_s, j.spot_ok) for j in jobs]


def last_days(jobs: Sequence[Job], days: float) -> list[Job]:
    """The jobs that arrived in the trace's last ``days``, ended no later than the trace's cut, times from 0.

    The Alibaba trace is a snapshot: the pods alive when it was taken, so its early days hold a few long-lived pods
    and most jobs arrived in its last weeks."""
    cut = max(j.arrival_s + j.duration_s for j in jobs)
    start = max(j.arrival_s for j in jobs) - days * 86400.0
    return [Job(j.id, j.arrival_s - start, j.team, j.gpu, j.gpus, min(j.duration_s, cut - j.arrival_s), j.spot_ok)
            for j in jobs if j.arrival_s >= start]


def amplify(jobs: Sequence[Job], gpus: int, load: float, seed: int = 0) -> list[Job]:
    """Enough copies of the trace, each rotated by a seeded offset within its span (lengths kept), to offer about
    ``load`` x ``gpus``; then scale_to_load for the rest. A small trace reaches a large fleet with its shape kept."""
    span = max(jobs[-1].arrival_s - jobs[0].arrival_s, 1.0)
    copies = max(1, round(load * gpus * span / (offered_gpu_hours(jobs) * 3600.0)))
    rng = random.Random(seed)
    out = []
    for copy in range(copies):
        shift = 0.0 if copy == 0 else rng.uniform(0.0, span)
        out += [Job(0, jobs[0].arrival_s + (j.arrival_s - jobs[0].arrival_s + shift) % span, j.team, j.gpu, j.gpus,
                    j.duration_s, j.spot_ok) for j in jobs]
    out.sort(key=lambda j: j.arrival_s)
    numbered = [Job(i, j.arrival_s, j.team, j.gpu, j.gpus, j.duration_s, j.spot_ok) for i, j in enumerate(out)]
    return scale_to_load(numbered, gpus, load)


def per_team(jobs: Sequence[Job], gpus_by_team: Mapping[str, int], load: float, seed: int = 0,
             copies: bool = False) -> list[Job]:
    """Each team's jobs scaled to ``load`` x the GPUs its queues may hold (``amplify`` with ``copies``, else
    scale_to_load), merged in arrival order and numbered again."""
    merged: list[Job] = []
    for team in sorted({j.team for j in jobs}):
        mine = [j for j in jobs if j.team == team]
        if gpus_by_team.get(team, 0) <= 0:
            raise ValueError(f"team {team!r} has no GPUs of {mine[0].gpu} in the fleet's queues")
        merged += (amplify(mine, gpus_by_team[team], load, seed) if copies
                   else scale_to_load(mine, gpus_by_team[team], load))
    merged.sort(key=lambda j: (j.arrival_s, j.team))
    return [Job(i, j.arrival_s, j.team, j.gpu, j.gpus, j.duration_s, j.spot_ok) for i, j in enumerate(merged)]
