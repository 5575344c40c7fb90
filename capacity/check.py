"""Check a plan against the planning semantics, from the input rows alone.

Written apart from the solvers on purpose: it shares no code with capacity/milp.py, optimize.py,
heuristic.py, greedy.py or problem.py, so a modelling mistake there cannot hide here. Every plan the
planner writes, and every test plan, goes through ``check``.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from capacity.schema import (
    CommitmentLine,
    DemandRow,
    HeldRow,
    Market,
    OfferRow,
    Option,
    PlanLine,
    QuotaRow,
    ShortfallLine,
    add_months,
    charged_hours,
    hours,
)

REL_TOL = 1e-6


@dataclass
class Verdict:
    violations: list[str] = field(default_factory=list)
    usage_usd: float = 0.0
    commitment_usd: float = 0.0
    unmet_gpu_hours: float = 0.0
    penalty: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def total_usd(self) -> float:
        return self.usage_usd + self.commitment_usd

    @property
    def objective_usd(self) -> float:
        return self.total_usd + self.penalty * self.unmet_gpu_hours


def _close(a: float, b: float, scale: float = 1.0) -> bool:
    return abs(a - b) <= REL_TOL * max(1.0, abs(a), abs(b), scale)


def _months(first: str, last: str) -> list[str]:
    out = [first]
    while out[-1] < last:
        out.append(add_months(out[-1], 1))
    return out


def _concurrency(v: Verdict, row: DemandRow, cloud: str, region: str, hours_of: list[float], held: float) -> None:
    """A gang holds all its GPUs while it runs: on fewer prepaid GPUs than the gang, its paid top-up covers the
    difference for the whole row, (gang - prepaid) / gang of its GPU-hours (docs/capacity.md, "Concurrency")."""
    prepaid, paid = hours_of
    if prepaid <= 1e-6 or held >= row.gang_gpus:
        return
    need = (row.gang_gpus - held) / row.gang_gpus * row.gpu_hours
    if paid < need * (1 - REL_TOL) - 1e-6:
        v.violations.append(f"gang row {row.key}: runs {prepaid:.3f} GPU-hours on {held:g} prepaid GPUs in "
                            f"{cloud}/{region}, fewer than its {row.gang_gpus}; the paid top-up must be at least "
                            f"({row.gang_gpus} - {held:g}) / {row.gang_gpus} x {row.gpu_hours:.3f} = {need:.3f} "
                            f"GPU-hours, the plan has {paid:.3f}")


def _held_hours(row: HeldRow, month: str) -> float:
    """Hours of the calendar month inside the held row's [start, end), counted here, apart from the planner."""
    begin = dt.datetime.fromisoformat(f"{month}-01T00:00:00+00:00")
    after = dt.datetime.fromisoformat(f"{add_months(month, 1)}-01T00:00:00+00:00")
    lo = begin if row.start is None or row.start < begin else row.start
    hi = after if row.end is None or row.end > after else row.end
    return max(0.0, (hi - lo).total_seconds() / 3600)


def check(demand: Sequence[DemandRow], offers: Sequence[OfferRow], quotas: Sequence[QuotaRow] | None,
          lines: Sequence[PlanLine], commitments: Sequence[CommitmentLine],
          shortfall: Sequence[ShortfallLine] = (), penalty: float = 1000.0,
          held: Sequence[HeldRow] = ()) -> Verdict:
    """Every way the plan breaks the semantics in docs/capacity.md, and its cost recomputed. Capacity ``held``
    before the plan is prepaid capacity at no charge, from its start to its end only."""
    v = Verdict(penalty=penalty)
    months = _months(min(d.month for d in demand), max(d.month for d in demand))
    rows = {d.key: d for d in demand}
    price: dict[tuple[str, str, str, str], float] = {}
    for o in offers:
        if not o.option.is_commit:
            key = (o.cloud.value, o.region, o.gpu, o.option.value)
            price[key] = min(price.get(key, math.inf), o.usd_per_gpu_hour)
    by_offer = {(o.cloud.value, o.region, o.machine_type, o.option.value): o for o in offers}
    limit: dict[tuple[str, str, str, str], float] | None = None
    if quotas is not None:
        limit = {(q.cloud.value, q.region, q.gpu, q.market.value): float(q.max_gpus) for q in quotas}

    # commitments: offer exists, whole nodes, the term charged in full; capacity per month and option
    committed_gpus: dict[tuple[str, str, str, str], float] = defaultdict(float)  # (month, cloud, region, gpu)
    commit_hours: dict[tuple[str, str, str, str, str], float] = defaultdict(float)  # + option
    for c in commitments:
        offer = by_offer.get((c.cloud.value, c.region, c.machine_type, c.option.value))
        if offer is None or not c.option.is_commit:
            v.violations.append(f"commitment {c.cloud.value}/{c.region}/{c.machine_type}/{c.option.value}: "
                                "no such commitment offer")
            continue
        if c.start_month not in months:
            v.violations.append(f"commitment starting {c.start_month} is outside the horizon {months[0]}..{months[-1]}")
        if c.nodes < 1 or c.gpus != c.nodes * offer.gpus_per_node or offer.gpu != c.gpu:
            v.violations.append(f"commitment {c.machine_type} from {c.start_month}: {c.nodes} nodes must be "
                                f"{c.nodes * offer.gpus_per_node} {offer.gpu} GPUs, not {c.gpus} {c.gpu}")
        term_months, term_hours = c.option.term_months, charged_hours(c.option, c.start_month)
        charge = c.gpus * term_hours * offer.usd_per_gpu_hour
        if not _close(charge, c.usd_total):
            v.violations.append(f"commitment {c.machine_type} from {c.start_month} charges {c.usd_total:.2f}, "
                                f"the full term is {charge:.2f}")
        v.commitment_usd += charge
        for k in range(term_months):
            month = add_months(c.start_month, k)
            committed_gpus[(month, c.cloud.value, c.region, c.gpu)] += c.gpus
            commit_hours[(month, c.cloud.value, c.region, c.gpu, c.option.value)] += c.gpus * hours(month)
    held_gpus: dict[tuple[str, str, str, str], float] = defaultdict(float)  # part-months count their share
    for r in held:
        for month in months:
            covered = _held_hours(r, month)
            if covered > 0:
                held_gpus[(month, r.cloud.value, r.region, r.gpu)] += r.gpus * covered / hours(month)
                commit_hours[(month, r.cloud.value, r.region, r.gpu, r.option.value)] += r.gpus * covered

    served: dict[tuple[str, str, str, int, bool], float] = defaultdict(float)
    regions_of: dict[tuple[str, str, str, int, bool], set[tuple[str, str]]] = defaultdict(set)
    use: dict[tuple[str, str, str, str, str], float] = defaultdict(float)  # (month, cloud, region, gpu, option)
    held_by: dict[tuple[tuple, str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])  # row, site: prepaid, paid
    for line in lines:
        row = rows.get(line.demand_key)
        where = f"plan line {line.month}/{line.team}/{line.gpu}@{line.cloud.value}/{line.region}/{line.option.value}"
        if row is None:
            v.violations.append(f"{where}: no such demand row")
            continue
        if line.gpu_hours < 0:
            v.violations.append(f"{where}: negative GPU-hours")
        if line.option is Option.SPOT and not row.spot_ok:
            v.violations.append(f"{where}: spot for a row that is not spot_ok")
        served[row.key] += line.gpu_hours
        regions_of[row.key].add((line.cloud.value, line.region))
        held_by[(row.key, line.cloud.value, line.region)][0 if line.option.is_commit else 1] += line.gpu_hours
        use[(line.month, line.cloud.value, line.region, line.gpu, line.option.value)] += line.gpu_hours
        if line.option.is_commit:
            expected = 0.0
        else:
            p = price.get((line.cloud.value, line.region, line.gpu, line.option.value))
            if p is None:
                v.violations.append(f"{where}: no {line.option.value} offer of {line.gpu} there")
                continue
            expected = p * line.gpu_hours
        if not _close(expected, line.usd):
            v.violations.append(f"{where}: usd {line.usd:.4f}, the price says {expected:.4f}")
        v.usage_usd += expected

    for key, row in rows.items():
        got = served.get(key, 0.0)
        if got > row.gpu_hours * (1 + REL_TOL) + 1e-6:
            v.violations.append(f"demand {key}: served {got:.3f} of {row.gpu_hours:.3f} GPU-hours")
        v.unmet_gpu_hours += max(0.0, row.gpu_hours - got)
        if row.gang_gpus > 1 and got > 0:
            where = regions_of[key]
            if len(where) > 1:
                v.violations.append(f"gang row {key}: split over {sorted(where)}")
            for cloud, region in where:
                q = None if limit is None else limit.get((cloud, region, row.gpu, Market.ON_DEMAND.value), 0.0)
                owned = held_gpus.get((row.month, cloud, region, row.gpu), 0.0)
                if q is not None and max(q, owned) < row.gang_gpus:
                    v.violations.append(f"gang row {key}: {cloud}/{region} on-demand quota {q:g} < {row.gang_gpus}")
                _concurrency(v, row, cloud, region, held_by[(key, cloud, region)],
                             committed_gpus.get((row.month, cloud, region, row.gpu), 0.0) + owned)

    sites = {(c, r, g) for (_, c, r, g, _) in use} | {(c, r, g) for (_, c, r, g) in committed_gpus}
    sites |= {(c, r, g) for (_, c, r, g) in held_gpus}
    for month in months:
        h = hours(month)
        for cloud, region, gpu in sites:
            committed = committed_gpus.get((month, cloud, region, gpu), 0.0)
            od = sum(use.get((month, cloud, region, gpu, o.value), 0.0) for o in (Option.ON_DEMAND, Option.FLEX_START))
            sp = use.get((month, cloud, region, gpu, Option.SPOT.value), 0.0)
            for option in (o for o in Option if o.is_commit):
                got = use.get((month, cloud, region, gpu, option.value), 0.0)
                cap = commit_hours.get((month, cloud, region, gpu, option.value), 0.0)
                if got > cap * (1 + REL_TOL) + 1e-6:
                    v.violations.append(f"{month} {cloud}/{region}/{gpu}: {got:.3f} {option.value} GPU-hours "
                                        f"used, {cap:.3f} committed or held")
            if limit is None:
                continue
            q_od = limit.get((cloud, region, gpu, Market.ON_DEMAND.value), 0.0)
            q_sp = limit.get((cloud, region, gpu, Market.SPOT.value), 0.0)
            owned = held_gpus.get((month, cloud, region, gpu), 0.0)  # held fills the quota first
            if committed + od / h > max(0.0, q_od - owned) * (1 + REL_TOL) + 1e-6:
                v.violations.append(f"{month} {cloud}/{region}/{gpu}: {committed:g} committed + "
                                    f"{od / h:.3f} on-demand GPUs > on_demand quota {q_od:g} less {owned:g} held")
            if sp / h > q_sp * (1 + REL_TOL) + 1e-6:
                v.violations.append(f"{month} {cloud}/{region}/{gpu}: {sp / h:.3f} spot GPUs > spot quota {q_sp:g}")

    reported = sum(s.unmet_gpu_hours for s in shortfall)
    if shortfall and not _close(reported, v.unmet_gpu_hours, scale=sum(d.gpu_hours for d in demand)):
        v.violations.append(f"shortfall lists {reported:.3f} GPU-hours unmet, the plan leaves {v.unmet_gpu_hours:.3f}")
    return v
