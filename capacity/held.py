"""How a plan uses the capacity the fleet already holds: per held block or reservation, the GPU-hours it holds in the
horizon, what the plan runs on it and what sits idle, its sunk cost, and whether it ends while the plan still needs
it (then what the plan runs from elsewhere from its end on).

Held and bought prepaid capacity of one option at one site serve alike; the plan's prepaid hours there are counted
against the held capacity first (the planner fills it first: docs/capacity.md, "Held capacity"), the earliest to
end first.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from capacity.plan import EPS_GPU_HOURS, Plan
from capacity.schema import HeldRow, add_months, covered_hours, month_start

Key = tuple[str, str, str, str, str]  # (month, cloud, region, gpu, option)


@dataclass
class After:
    """GPU-hours of the held capacity's GPU model the plan serves from elsewhere, from its end on."""

    cloud: str | None  # None: unserved
    region: str | None
    option: str  # a plan option, or "unserved"
    gpu_hours: float


@dataclass
class HeldUse:
    row: HeldRow
    months: list[str]  # horizon months it holds capacity in
    gpu_hours: float  # what it holds in the horizon
    used_gpu_hours: float
    sunk_usd: float | None  # what it bills over those hours, paid whatever the plan does; None: rate unknown
    ends_inside: bool  # it ends inside the horizon while the plan still runs on it
    after: list[After] = field(default_factory=list)

    @property
    def idle_gpu_hours(self) -> float:
        return max(0.0, self.gpu_hours - self.used_gpu_hours)

    @property
    def end_month(self) -> str | None:
        return None if self.row.end is None else self.row.end.strftime("%Y-%m")


def uses(held: Sequence[HeldRow], plan: Plan, months: Sequence[str]) -> list[HeldUse]:
    """One HeldUse per held row, in the order given."""
    prepaid: dict[Key, float] = defaultdict(float)
    for line in plan.lines:
        if line.option.is_commit:
            prepaid[(line.month, line.cloud.value, line.region, line.gpu, line.option.value)] += line.gpu_hours
    out = [HeldUse(r, [], 0.0, 0.0, None, False) for r in held]
    on_held: dict[Key, float] = defaultdict(float)
    for month in months:
        for i in sorted(range(len(held)), key=lambda k: (_end_key(held[k]), k)):  # earliest to end first
            r = held[i]
            hours = r.gpus * covered_hours(r.start, r.end, month)
            if hours <= 0:
                continue
            key = (month, r.cloud.value, r.region, r.gpu, r.option.value)
            take = min(hours, prepaid[key] - on_held[key])
            on_held[key] += take
            use = out[i]
            use.months.append(month)
            use.gpu_hours += hours
            use.used_gpu_hours += take
    horizon_end = month_start(add_months(months[-1], 1))
    for use in out:
        r = use.row
        use.sunk_usd = None if r.usd_per_hour is None else r.usd_per_hour * use.gpu_hours / r.gpus
        if r.end is None or r.end >= horizon_end or not use.months:
            continue
        # the plan runs on it in the last month it holds capacity: its end cuts into the plan's use of it
        last = (use.months[-1], r.cloud.value, r.region, r.gpu, r.option.value)
        if on_held.get(last, 0.0) > EPS_GPU_HOURS:
            use.ends_inside = True
            use.after = _after_end(plan, r.gpu, [m for m in months if m >= r.end.strftime("%Y-%m")], on_held)
    return out


def span(months: Sequence[str]) -> str:
    return months[0] if len(months) == 1 else f"{months[0]}..{months[-1]}"


def _end_key(r: HeldRow) -> str:
    return r.end.isoformat() if r.end is not None else "9999"


def _after_end(plan: Plan, gpu: str, months: list[str], on_held: dict[Key, float]) -> list[After]:
    """What the plan serves of ``gpu`` in ``months`` other than on held capacity, by site and option; then unserved."""
    by: dict[tuple[str, str, str], float] = defaultdict(float)
    left = dict(on_held)
    for line in plan.lines:
        if line.gpu != gpu or line.month not in months:
            continue
        hours = line.gpu_hours
        key = (line.month, line.cloud.value, line.region, line.gpu, line.option.value)
        if line.option.is_commit and left.get(key, 0.0) > 0:
            taken = min(hours, left[key])
            left[key] -= taken
            hours -= taken
        if hours > EPS_GPU_HOURS:
            by[(line.cloud.value, line.region, line.option.value)] += hours
    out = [After(c, r, o, h) for (c, r, o), h in sorted(by.items())]
    unserved = sum(s.unmet_gpu_hours for s in plan.shortfall if s.gpu == gpu and s.month in months)
    if unserved > EPS_GPU_HOURS:
        out.append(After(None, None, "unserved", unserved))
    return out


def as_json(found: Sequence[HeldUse], left_out: Sequence[str] = ()) -> dict[str, Any]:
    """summary.json's "held" (docs/capacity.md): totals, one entry per held row, and the ledger entries left out."""
    sunk = [u.sunk_usd for u in found]
    return {
        "gpu_hours": round(sum(u.gpu_hours for u in found), 3),
        "used_gpu_hours": round(sum(u.used_gpu_hours for u in found), 3),
        "idle_gpu_hours": round(sum(u.idle_gpu_hours for u in found), 3),
        "sunk_usd": None if None in sunk else round(sum(s for s in sunk if s is not None), 2),
        "capacity": [{
            "id": u.row.id, "cloud": u.row.cloud.value, "region": u.row.region, "machine_type": u.row.machine_type,
            "gpu": u.row.gpu, "gpus": u.row.gpus, "option": u.row.option.value,
            "start": None if u.row.start is None else u.row.start.isoformat(),
            "end": None if u.row.end is None else u.row.end.isoformat(),
            "months": u.months, "gpu_hours": round(u.gpu_hours, 3), "used_gpu_hours": round(u.used_gpu_hours, 3),
            "idle_gpu_hours": round(u.idle_gpu_hours, 3),
            "sunk_usd": None if u.sunk_usd is None else round(u.sunk_usd, 2), "ends_inside_plan": u.ends_inside,
            "after_end": [{"cloud": a.cloud, "region": a.region, "option": a.option,
                           "gpu_hours": round(a.gpu_hours, 3)} for a in u.after],
        } for u in found],
        "left_out": list(left_out),
    }


def ending(u: dict[str, Any]) -> str:
    """The sentence for a held block or reservation (an entry of ``as_json``) that ends inside the plan's use of it:
    which, when, and what the plan runs from elsewhere from then on."""
    where = ", ".join(f"{a['gpu_hours']:,.0f} {a['option']}" + (f" in {a['cloud']}/{a['region']}" if a["cloud"] else "")
                      for a in u["after_end"]) or "nothing more of it"
    return (f"{u['id']} ({u['option']}, {u['gpus']} {u['gpu']} GPUs in {u['cloud']}/{u['region']}) ends {u['end']}, "
            f"inside the plan's use of it ({span(u['months'])}). From {u['end'][:7]} on the plan runs its {u['gpu']} "
            f"work from elsewhere: {where} GPU-hours.")
