"""The bundled example, dated from the day it is made: `gpufleet capacity example --out DIR`.

history.csv: 24 months of GPU-hours for five teams across H100, H200, A100-40GB and L4, with growth, a yearly
pattern and seeded noise. quotas.csv: on-demand and spot GPU quotas on AWS, GCP and Azure (deliberately short
for the pretraining gang, so the report has quota requests to show). budget.csv: a monthly budget per cost
center (= team) for the 12 months the plan covers.

The plan starts with the first month whose quota requests can still be filed on time: its first day minus the
longest usual lead time (capacity/requests.py, Azure's 14 days) is not past. The history is the 24 months
before it: it runs to the month before the plan, which may be the month in progress or, late in a month, the
next one (the example is synthetic). The same day always gives the same files.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from pathlib import Path
from typing import Annotated

import typer

from capacity.requests import LEAD_TIME_DAYS
from capacity.schema import add_months, hours

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


def first_month(today: dt.date) -> str:
    """The first month whose first day, less the longest quota lead time, is today or later."""
    lead = dt.timedelta(days=max(LEAD_TIME_DAYS.values()))
    month = f"{today.year:04d}-{today.month:02d}"
    while dt.date(int(month[:4]), int(month[5:]), 1) - lead < today:
        month = add_months(month, 1)
    return month


def _gpus(team: str, i: int, rng: random.Random | None) -> float:
    _, base, growth, amplitude, *_ = TEAMS[team]
    level = (base + growth * i) * (1 + amplitude * math.sin(2 * math.pi * (i + 2) / 12))
    return level * (1 + rng.gauss(0, 0.04)) if rng else level


def files(today: dt.date) -> dict[str, str]:
    """history.csv, quotas.csv and budget.csv, for a plan starting at first_month(today)."""
    first = add_months(first_month(today), -MONTHS)
    rng = random.Random(8)
    history = ["month,team,gpu,gpu_hours,gang_gpus,spot_ok"]
    for i in range(MONTHS):
        m = add_months(first, i)
        for team, (gpu, *_, gang, spot, _rate) in TEAMS.items():
            history.append(f"{m},{team},{gpu},{_gpus(team, i, rng) * hours(m):.1f},{gang},{str(spot).lower()}")
    quotas = ["cloud,region,gpu,market,max_gpus", *(",".join(map(str, q)) for q in QUOTAS)]
    budget = ["month,cost_center,usd"]
    for i in range(MONTHS, MONTHS + HORIZON):
        m = add_months(first, i)
        for team, (*_, rate) in TEAMS.items():
            budget.append(f"{m},{team},{round(_gpus(team, i, None) * hours(m) * rate, -3):.2f}")
    return {name: "\n".join(lines) + "\n" for name, lines in
            (("history.csv", history), ("quotas.csv", quotas), ("budget.csv", budget))}


def command(
    out: Annotated[Path, typer.Option(help="directory for history.csv, quotas.csv and budget.csv")],
    today: Annotated[str | None, typer.Option(help="the day to date the example from, YYYY-MM-DD; default: today "
                                              "(UTC)")] = None,
) -> None:
    """Write the example history, quotas and budget, dated so the plan starts on time: no quota request overdue."""
    try:
        day = dt.date.fromisoformat(today) if today else dt.datetime.now(dt.UTC).date()
    except ValueError:
        typer.echo(f"--today: {today!r} is not a day. Write it YYYY-MM-DD, e.g. 2027-01-15.", err=True)
        raise typer.Exit(2) from None
    out.mkdir(parents=True, exist_ok=True)
    for name, text in files(day).items():
        (out / name).write_text(text, encoding="utf-8")
    first = first_month(day)
    typer.echo(f"Wrote history.csv ({add_months(first, -MONTHS)} to {add_months(first, -1)}), quotas.csv and "
               f"budget.csv ({first} to {add_months(first, HORIZON - 1)}) to {out}. Next: gpufleet capacity report "
               f"--history {out / 'history.csv'} --quotas {out / 'quotas.csv'} --budget {out / 'budget.csv'} "
               "--out capacity-report/")
