"""Regenerate the bundled capacity example deterministically: `python examples/capacity/generate.py`.

history.csv: 24 months (2024-11 .. 2026-10) of GPU-hours for five teams across H100, H200, A100-40GB and L4,
with growth, a yearly pattern and seeded noise. quotas.csv: on-demand and spot GPU quotas on AWS, GCP and
Azure (deliberately short for the pretraining gang, so the report has quota requests to show).
budget.csv: a monthly budget per cost center (= team) for the 12 forecast months.
"""

from __future__ import annotations

import calendar
import math
import random
from pathlib import Path

HERE = Path(__file__).parent
FIRST = (2024, 11)
MONTHS = 24
HORIZON = 12
# team: (gpu, average GPUs at the start, growth per month, yearly amplitude, gang_gpus, spot_ok, budget USD/GPU-hour)
TEAMS = {
    "pretrain": ("H100", 150.0, 4.0, 0.06, 64, False, 4.4),
    "posttrain": ("H200", 24.0, 0.8, 0.10, 8, False, 5.6),
    "research": ("A100-40GB", 48.0, 0.6, 0.15, 1, True, 1.6),
    "inference": ("L4", 90.0, 2.5, 0.08, 1, False, 0.75),
    "eval": ("H100", 16.0, 0.3, 0.20, 1, True, 3.0),
}
QUOTAS = [
    ("aws", "us-east-1", "H100", "on_demand", 256), ("aws", "us-east-1", "H100", "spot", 32),
    ("aws", "us-west-2", "H200", "on_demand", 32), ("aws", "us-east-1", "A100-40GB", "on_demand", 32),
    ("aws", "us-east-1", "L4", "on_demand", 96), ("aws", "us-west-2", "L4", "on_demand", 48),
    ("gcp", "us-central1", "H100", "on_demand", 64), ("gcp", "us-central1", "A100-40GB", "on_demand", 32),
    ("gcp", "us-central1", "A100-40GB", "spot", 64), ("gcp", "us-central1", "L4", "on_demand", 64),
    ("azure", "eastus", "H100", "on_demand", 96), ("azure", "eastus", "H200", "on_demand", 16),
    ("azure", "eastus", "A100-40GB", "on_demand", 32),
]


def month(i: int) -> str:
    index = FIRST[0] * 12 + FIRST[1] - 1 + i
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


def hours(m: str) -> int:
    return calendar.monthrange(int(m[:4]), int(m[5:]))[1] * 24


def gpus(team: str, i: int, rng: random.Random | None) -> float:
    _, base, growth, amplitude, *_ = TEAMS[team]
    level = (base + growth * i) * (1 + amplitude * math.sin(2 * math.pi * (i + 2) / 12))
    return level * (1 + rng.gauss(0, 0.04)) if rng else level


def main() -> None:
    rng = random.Random(8)
    lines = ["month,team,gpu,gpu_hours,gang_gpus,spot_ok"]
    for i in range(MONTHS):
        m = month(i)
        for team, (gpu, *_, gang, spot, _rate) in TEAMS.items():
            lines.append(f"{m},{team},{gpu},{gpus(team, i, rng) * hours(m):.1f},{gang},{str(spot).lower()}")
    (HERE / "history.csv").write_text("\n".join(lines) + "\n")
    quota_lines = ["cloud,region,gpu,market,max_gpus", *(",".join(map(str, q)) for q in QUOTAS)]
    (HERE / "quotas.csv").write_text("\n".join(quota_lines) + "\n")
    budget = ["month,cost_center,usd"]
    for i in range(MONTHS, MONTHS + HORIZON):
        m = month(i)
        for team, (*_, rate) in TEAMS.items():
            budget.append(f"{m},{team},{round(gpus(team, i, None) * hours(m) * rate, -3):.2f}")
    (HERE / "budget.csv").write_text("\n".join(budget) + "\n")


if __name__ == "__main__":
    main()
