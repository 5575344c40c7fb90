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
                usd_total=nodes * c.usd_per_node)
            for (c, start), nodes in sorted(self.bought.items(), key=lambda kv: (kv[0][0].offer.key, kv[0][1]))
        ]
        shortfall = []
        for i, d in enumerate(problem.demand):
            unmet = d.gpu_hours - served_by_row.get(i, 0.0)
            if unmet > EPS_GPU_HOURS * max(1.0, d.gpu_hours):
                shortfall.append(ShortfallLine.model_construct(
                    month=d.month, team=d.team, gpu=d.gpu, gang_gpus=d.gang_gpus, spot_ok=d.spot_ok,
                    unmet_gpu_hours=unmet, reason=shortfall_reason(problem, d)))
        return Plan(lines, commitments, shortfall, problem.penalty)


def shortfall_reason(problem: Problem, row: DemandRow) -> str:
    sites = problem.sites_for(row.gpu)
    if not sites:
        return f"no offer sells {row.gpu}"
    usable = [s for s in sites if s.on_demand or s.commits or (row.spot_ok and s.spot)]
    if not usable:
        return f"only spot offers sell {row.gpu} and the row is not spot_ok"
    if row.gang_gpus > 1 and not any(s.quota_on_demand >= row.gang_gpus for s in usable):
        return f"no region's on-demand quota reaches the gang of {row.gang_gpus} GPUs"
    return "quota exhausted"
