"""A plan: which demand row runs where, on what, and which commitments are bought.

Solvers (the MILP and the greedy baseline) record allocations into a PlanBuilder; it turns them into the
rows written to plan.csv, commitments.csv and shortfall.csv.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from capacity.problem import CommitOffer, Problem, Site
from capacity.schema import CommitmentLine, DemandRow, Option, PlanLine, ShortfallLine

EPS_GPU_HOURS = 1e-6
K = TypeVar("K", bound=Hashable)
S = TypeVar("S", bound=Hashable)


@dataclass
class Plan:
    lines: list[PlanLine]
    commitments: list[CommitmentLine]
    shortfall: list[ShortfallLine]
    penalty: float

    @property
    def usage_usd(self) -> float:
        return sum(line.usd for line in self.lines)

    @property
    def commitment_usd(self) -> float:
        return sum(c.usd_total for c in self.commitments)

    @property
    def total_usd(self) -> float:
        """Money spent: usage plus commitment charges."""
        return self.usage_usd + self.commitment_usd

    @property
    def unmet_gpu_hours(self) -> float:
        return sum(s.unmet_gpu_hours for s in self.shortfall)

    @property
    def objective_usd(self) -> float:
        """What the planner minimises: money spent plus the penalty on unserved GPU-hours."""
        return self.total_usd + self.penalty * self.unmet_gpu_hours


def northwest(demands: Sequence[tuple[K, float]], supplies: Sequence[tuple[S, float]]) -> list[tuple[K, S, float]]:
    """Split supplies over demands in order (each demand filled before the next): few pieces, exact sums."""
    out: list[tuple[K, S, float]] = []
    si, left = 0, supplies[0][1] if supplies else 0.0
    for key, need in demands:
        while need > EPS_GPU_HOURS and si < len(supplies):
            take = min(need, left)
            if take > EPS_GPU_HOURS:
                out.append((key, supplies[si][0], take))
            need -= take
            left -= take
            if left <= EPS_GPU_HOURS:
                si += 1
                left = supplies[si][1] if si < len(supplies) else 0.0
    return out


@dataclass
class PlanBuilder:
    problem: Problem
    served: dict[tuple[int, Site, Option], float] = field(default_factory=lambda: defaultdict(float))
    bought: dict[tuple[CommitOffer, int], int] = field(default_factory=lambda: defaultdict(int))

    def serve(self, row: int, site: Site, option: Option, gpu_hours: float) -> None:
        if gpu_hours > EPS_GPU_HOURS:
            self.served[(row, site, option)] += gpu_hours

    def buy(self, commit: CommitOffer, start: int, nodes: int) -> None:
        if nodes > 0:
            self.bought[(commit, start)] += nodes

    def finish(self) -> Plan:
        problem = self.problem
        lines: list[PlanLine] = []
        served_by_row: dict[int, float] = defaultdict(float)
        for (row, site, option), amount in sorted(self.served.items(), key=lambda kv: (kv[0][0], kv[0][1].key,
                                                                                         kv[0][2].value)):
            d = problem.demand[row]
            served_by_row[row] += amount
            lines.append(PlanLine.model_construct(
                month=d.month, team=d.team, gpu=d.gpu, cloud=site.cloud, region=site.region, option=option,
                gpu_hours=amount, usd=amount * site.price(option), gang_gpus=d.gang_gpus, spot_ok=d.spot_ok))
        commitments = [
            CommitmentLine.model_construct(
                cloud=c.offer.cloud, region=c.offer.region, machine_type=c.offer.machine_type, gpu=c.offer.gpu,
                option=c.offer.option, start_month=problem.months[start], nodes=nodes, gpus=nodes * c.gpus,
                usd_total=nodes * problem.charge(c, start))
            for (c, start), nodes in sorted(self.bought.items(), key=lambda kv: (kv[0][0].offer.key, kv[0][1]))
        ]
        shortfall = []
        room = _Room(problem, self.served, self.bought)
        for i, d in enumerate(problem.demand):
            unmet = d.gpu_hours - served_by_row.get(i, 0.0)
            if unmet > EPS_GPU_HOURS * max(1.0, d.gpu_hours):
                shortfall.append(ShortfallLine.model_construct(
                    month=d.month, team=d.team, gpu=d.gpu, gang_gpus=d.gang_gpus, spot_ok=d.spot_ok,
                    unmet_gpu_hours=unmet, reason=shortfall_reason(problem, d, room, i)))
        return Plan(lines, commitments, shortfall, problem.penalty)


class _Room:
    """Per (month, site): the GPU-hours of on-demand quota (less commitments) and spot quota the plan
    leaves idle, and where each row was served; what a shortfall reason is read from."""

    def __init__(self, problem: Problem, served: dict[tuple[int, Site, Option], float],
                 bought: dict[tuple[CommitOffer, int], int]) -> None:
        self.problem = problem
        self.month = {m: i for i, m in enumerate(problem.months)}
        self.used: dict[tuple[int, Site, str], float] = defaultdict(float)
        self.sites_of: dict[int, set[Site]] = defaultdict(set)
        for (row, site, option), amount in served.items():
            m = self.month[problem.demand[row].month]
            kind = "spot" if option is Option.SPOT else "commit" if option.is_commit else "od"
            self.used[(m, site, kind)] += amount
            self.sites_of[row].add(site)
        for (commit, start), nodes in bought.items():
            site = problem.sites[(commit.offer.cloud, commit.offer.region, commit.offer.gpu)]
            for m in range(start, min(start + commit.term_months, len(problem.months))):
                # committed GPUs hold the on-demand quota all month, used or not
                self.used[(m, site, "held")] += nodes * commit.gpus * problem.hours[m]
        for site in problem.sites.values():  # and capacity held before the plan
            for m in site.held:
                self.used[(m, site, "held")] += site.held_hours(m)

    def idle(self, m: int, site: Site, spot: bool) -> float:
        h = self.problem.hours[m]
        if spot:
            return 0.0 if site.spot is None else max(0.0, h * site.quota_spot - self.used[(m, site, "spot")])
        idle_commit = max(0.0, self.used[(m, site, "held")] - self.used[(m, site, "commit")])
        quota_left = h * site.quota_on_demand - self.used[(m, site, "held")] - self.used[(m, site, "od")]
        return idle_commit + (max(0.0, quota_left) if site.on_demand is not None else 0.0)


def shortfall_reason(problem: Problem, row: DemandRow, room: _Room | None = None, index: int = -1) -> str:
    """Why a row is (partly) unserved, in the order a reader checks: offers, gang size against quotas, then
    what the plan did with the quota that could have served it."""
    sites = problem.sites_for(row.gpu)
    if not sites:
        return f"no offer sells {row.gpu}"
    usable = [s for s in sites if s.on_demand or s.commits or s.held or (row.spot_ok and s.spot)]
    if not usable:
        return f"only spot offers sell {row.gpu} and the row is not spot_ok"
    if row.gang_gpus > 1 and not any(s.quota_on_demand >= row.gang_gpus for s in usable):
        largest = max(usable, key=lambda s: s.quota_on_demand)
        return (f"no region's on-demand quota reaches the gang of {row.gang_gpus} GPUs (largest: "
                f"{largest.quota_on_demand:g} in {largest.cloud.value}/{largest.region})")
    if room is None:
        return "quota exhausted"
    m = room.month[row.month]
    fits = [s for s in usable if row.gang_gpus <= s.quota_on_demand or row.gang_gpus == 1]
    free = {s: room.idle(m, s, False) + (room.idle(m, s, True) if row.spot_ok else 0.0) for s in fits}
    idle = [s for s in fits if free[s] > EPS_GPU_HOURS * problem.hours[m]]
    small = [s for s in usable if s not in fits and room.idle(m, s, False) > EPS_GPU_HOURS * problem.hours[m]]
    where = room.sites_of.get(index, set())
    if row.gang_gpus > 1 and where and idle:
        here = next(iter(where))
        return (f"a gang runs in one region: served in {here.cloud.value}/{here.region}, whose quota is full; "
                f"idle quota in {_names(idle)} would split it")
    if idle:
        return (f"cheaper unserved: using the idle quota in {_names(idle)} costs more than the penalty of "
                f"{problem.penalty:g} USD/GPU-hour")
    text = f"quota full that month in {_names(fits)} (used by rows the plan serves at a lower total cost)"
    if small:
        text += f"; idle quota in {_names(small)} is below the gang of {row.gang_gpus} GPUs"
    return text


def _names(sites: Sequence[Site]) -> str:
    names = sorted(f"{s.cloud.value}/{s.region}" for s in sites)
    return ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
