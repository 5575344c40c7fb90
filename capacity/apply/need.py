"""What an accepted plan asks of the stacks in one month, per (cloud, region, GPU).

Plan lines are GPU-hours per month. The capacity that carries them is the month's peak of concurrent GPUs:
a demand row of spreadable work (gang_gpus 1) needs its average (GPU-hours / hours in the month), a gang row
needs whole gangs (at least one gang, however few its hours: a gang runs all at once or not at all). A row
served by several options at one site (a gang on a capacity block with an on-demand top-up) is one set of
gangs: its peak is split over the options in proportion to their hours, never rounded up per option (a
top-up of 8 GPUs is 8 GPUs, not another 64-GPU gang).

Capacity the fleet already held (the plan directory's held.csv) may cover only part of the month (a block that
ends on the 16th): the plan's prepaid hours there run inside that window, so they need their GPU-hours over the
hours it covers, not over the month (held first, shared over the rows in proportion to their prepaid hours).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from capacity.schema import CommitmentLine, HeldRow, Option, PlanLine, add_months, covered_hours, hours

Key = tuple[str, str, str]  # (cloud, region, gpu)
EPS = 1e-6


def peak_gpus(gpu_hours: float, gang_gpus: int, month: str) -> float:
    """Concurrent GPUs a line needs: its average, rounded up to whole gangs for gang work."""
    return whole_gangs(gpu_hours / hours(month), gang_gpus)


def whole_gangs(average: float, gang_gpus: int) -> float:
    if gang_gpus <= 1 or average <= EPS:
        return average
    return math.ceil(average / gang_gpus - EPS) * gang_gpus


@dataclass
class Need:
    """One (cloud, region, GPU) in one month."""

    gpus_by_option: dict[str, float] = field(default_factory=lambda: defaultdict(float))  # peak GPUs per option
    average_gpus: float = 0.0
    gpus_by_team: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    # (machine type, option, start month) -> nodes of commitments active in the month
    committed_nodes: dict[tuple[str, str, str], int] = field(default_factory=lambda: defaultdict(int))


def held_windows(held: Sequence[HeldRow], month: str) -> dict[Key, tuple[float, float]]:
    """(cloud, region, GPU) -> (GPU-hours held there in ``month``, the hours they cover: GPU-hours / GPUs)."""
    found: dict[Key, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for r in held:
        covered = covered_hours(r.start, r.end, month)
        if covered > 0:
            found[(r.cloud.value, r.region, r.gpu)][0] += r.gpus * covered
            found[(r.cloud.value, r.region, r.gpu)][1] += r.gpus
    return {key: (gpu_hours, gpu_hours / gpus) for key, (gpu_hours, gpus) in found.items()}


def month_needs(lines: Sequence[PlanLine], commitments: Sequence[CommitmentLine], month: str,
                held: Sequence[HeldRow] = ()) -> dict[Key, Need]:
    """Every (cloud, region, GPU) the plan runs or commits in ``month``."""
    out: dict[Key, Need] = defaultdict(Need)
    rows: dict[tuple, dict[str, float]] = defaultdict(lambda: defaultdict(float))  # (site, row) -> option: hours
    prepaid_at: dict[Key, float] = defaultdict(float)
    for line in lines:
        if line.month == month and line.gpu_hours > EPS:
            key = (line.cloud.value, line.region, line.gpu)
            rows[(key, line.demand_key)][line.option.value] += line.gpu_hours
            prepaid_at[key] += line.gpu_hours if line.option.is_commit else 0.0
    windows, h = held_windows(held, month), hours(month)
    for (key, (_, team, _, gang, _)), by_option in rows.items():
        need = out[key]
        total = sum(by_option.values())
        held_hours, window = windows.get(key, (0.0, h))
        share = min(1.0, held_hours / prepaid_at[key]) if prepaid_at[key] > EPS else 0.0  # of prepaid: on held
        gpus = {o: x / h + (share * x / window - share * x / h if Option(o).is_commit else 0.0)
                for o, x in by_option.items()}  # concurrent GPUs each option needs, before whole gangs
        peak = whole_gangs(sum(gpus.values()), gang)
        for option, each in gpus.items():
            need.gpus_by_option[option] += peak * each / sum(gpus.values())
        need.gpus_by_team[team] += peak
        need.average_gpus += total / hours(month)
    for c in commitments:
        if active(c, month):
            need = out[(c.cloud.value, c.region, c.gpu)]
            need.committed_nodes[(c.machine_type, c.option.value, c.start_month)] += c.nodes
    return dict(out)


def month_cost(lines: Sequence[PlanLine], commitments: Sequence[CommitmentLine], month: str) -> dict[Key, float]:
    """USD the plan spends in ``month`` per (cloud, region, GPU): its usage lines, and every commitment active
    then for the month's share of its charge (its hours over the calendar hours of its whole term)."""
    out: dict[Key, float] = defaultdict(float)
    for line in lines:
        if line.month == month:
            out[(line.cloud.value, line.region, line.gpu)] += line.usd
    for c in commitments:
        if active(c, month):
            term = sum(hours(add_months(c.start_month, k)) for k in range(max(c.option.term_months, 1)))
            out[(c.cloud.value, c.region, c.gpu)] += c.usd_total * hours(month) / term
    return dict(out)


def active(c: CommitmentLine, month: str) -> bool:
    """A commitment charges from its start month for its term."""
    return any(add_months(c.start_month, k) == month for k in range(max(c.option.term_months, 1)))


def plan_months(lines: Sequence[PlanLine]) -> list[str]:
    return sorted({line.month for line in lines})
