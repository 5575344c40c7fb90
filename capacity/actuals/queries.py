"""Finance's questions over the charges a load kept (capacity/actuals/load.py), as plain SQL over one table so the
same queries can run on a warehouse holding it.

Utilisation follows the FOCUS specification's commitment discount appendix: a commitment's (or capacity
reservation's) Usage charges are split by CommitmentDiscountStatus (CapacityReservationStatus) into Used and Unused;
utilisation = used cost / (used + unused cost), Purchase charges excluded (the spec's aggregation guidance, so a
prepaid purchase is not counted twice). A commitment with neither is unknown (None), never 0 %.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import duckdb
from pydantic import BaseModel, ConfigDict

from capacity.schema import CommitmentLine, PlanLine, add_months

UNTAGGED = "(untagged)"


class Out(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Utilisation(Out):
    """One commitment (CommitmentDiscountId) or capacity reservation (CapacityReservationId)."""

    id: str
    cloud: str | None  # aws, gcp, azure; None when the export does not say (no ProviderName, no telling id)
    used_cost_usd: float
    unused_cost_usd: float
    utilization: float | None  # used / (used + unused); None when both are 0


class TeamSpend(Out):
    """GPU spend of one team in one month on one cloud and GPU product: charges naming a catalogue GPU machine."""

    month: str
    team: str  # the team tag's value, or "(untagged)"
    cloud: str | None
    gpu: str
    usd: float  # EffectiveCost: amortised, unused reservation hours included
    gpu_hours: float | None  # used machine-hours x GPUs per node; None when a charge's unit is not a time


class PlanMonth(Out):
    month: str
    plan_usd: float | None  # None: the plan does not cover this month
    billed_usd: float | None  # None: no export covers it
    plan_gpu_hours: float | None
    billed_gpu_hours: float | None


class PlanVsBill(Out):
    months: list[PlanMonth]
    wape: float | None  # sum |billed - plan| / sum billed over the months both cover; None when none
    months_compared: int


def _files(keys: Sequence[str]) -> tuple[str, list[list[str]]]:
    return "file IN (SELECT unnest(?))", [list(keys)]


def utilisation(con: duckdb.DuckDBPyConnection, keys: Sequence[str], kind: str) -> list[Utilisation]:
    """kind: 'commitment' or 'reservation' (the charges columns <kind>_id and <kind>_status)."""
    where, args = _files(keys)
    rows = con.execute(f"""
        SELECT {kind}_id, mode(cloud) FILTER (WHERE cloud IS NOT NULL),
               coalesce(sum(effective_cost) FILTER (WHERE {kind}_status = 'Used'), 0),
               coalesce(sum(effective_cost) FILTER (WHERE {kind}_status = 'Unused'), 0)
        FROM charges WHERE {where} AND category = 'Usage' AND {kind}_id IS NOT NULL AND {kind}_status IS NOT NULL
        GROUP BY 1 ORDER BY 1""", args).fetchall()
    return [Utilisation(id=i, cloud=cloud, used_cost_usd=round(used, 6), unused_cost_usd=round(unused, 6),
                        utilization=None if used + unused == 0 else round(used / (used + unused), 6))
            for i, cloud, used, unused in rows]


def gpu_spend(con: duckdb.DuckDBPyConnection, keys: Sequence[str]) -> list[TeamSpend]:
    where, args = _files(keys)
    rows = con.execute(f"""
        SELECT month, coalesce(team, '{UNTAGGED}'), cloud, gpu, sum(effective_cost),
               CASE WHEN count(*) FILTER (WHERE category = 'Usage' AND gpu_hours IS NULL
                                          AND coalesce(commitment_status, '') <> 'Unused'
                                          AND coalesce(reservation_status, '') <> 'Unused') = 0
                    THEN coalesce(sum(gpu_hours), 0) END
        FROM charges WHERE {where} AND machine_type IS NOT NULL GROUP BY ALL ORDER BY 1, 2, 3, 4""", args).fetchall()
    return [TeamSpend(month=m, team=t, cloud=c, gpu=g, usd=round(usd, 6),
                      gpu_hours=None if h is None else round(h, 6)) for m, t, c, g, usd, h in rows]


def plan_months(lines: Sequence[PlanLine], commitments: Sequence[CommitmentLine]) -> dict[str, tuple[float, float]]:
    """month -> (plan spend, planned GPU-hours): usage lines, plus each commitment's charge spread evenly over its
    term months, as the finance report spreads it (capacity/finance/model.py)."""
    usd: dict[str, float] = defaultdict(float)
    gpu_hours: dict[str, float] = defaultdict(float)
    for line in lines:
        usd[line.month] += line.usd
        gpu_hours[line.month] += line.gpu_hours
    for c in commitments:
        for k in range(c.option.term_months):
            usd[add_months(c.start_month, k)] += c.usd_total / c.option.term_months
    return {m: (usd[m], gpu_hours.get(m, 0.0)) for m in usd}


def plan_vs_bill(spend: Sequence[TeamSpend], plan: dict[str, tuple[float, float]]) -> PlanVsBill:
    billed: dict[str, float] = defaultdict(float)
    hours: dict[str, float | None] = defaultdict(float)
    for s in spend:
        billed[s.month] += s.usd
        known = hours[s.month]
        hours[s.month] = None if known is None or s.gpu_hours is None else known + s.gpu_hours
    months = []
    for m in sorted(set(billed) | set(plan)):
        p = plan.get(m)
        months.append(PlanMonth(month=m, plan_usd=None if p is None else round(p[0], 2),
                                billed_usd=round(billed[m], 2) if m in billed else None,
                                plan_gpu_hours=None if p is None else round(p[1], 3),
                                billed_gpu_hours=None if m not in billed or hours[m] is None else round(hours[m], 3)))
    both = [m for m in months if m.plan_usd is not None and m.billed_usd is not None]
    total = sum(abs(m.billed_usd or 0) for m in both)
    wape = (sum(abs((m.billed_usd or 0) - (m.plan_usd or 0)) for m in both) / total) if total else None
    return PlanVsBill(months=months, wape=None if wape is None else round(wape, 6), months_compared=len(both))
