"""The order in which the fleet's MultiKueue manager tries a team's workers, from the capacity plan.

Kueue's incremental dispatcher nominates a MultiKueueConfig's clusters a step at a time, in the config's order
when the MultiKueueIncrementalDispatcherRespectConfigOrder gate is on (Beta, on by default in 0.19; alphabetical
without it), adding the next step every 5 minutes while no nominated worker has admitted the workload
(pkg/controller/workloaddispatcher/incrementaldispatcher.go at v0.19.2). So the order IS the policy: workers
that hold capacity the team has already paid for come first, then spot where the work may run on spot, then
on-demand, cheapest first within each tier.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum

from components.spec import CapacityType


class Tier(IntEnum):
    """How a GPU-hour is paid for, in the order dispatch should prefer it."""

    PREPAID = 0  # reservations, capacity blocks, commitments: paid whether used or not
    SPOT = 1
    ON_DEMAND = 2  # on-demand and flex-start: paid per hour used, at the highest rate


TIER_OF_CAPACITY = {CapacityType.RESERVATION: Tier.PREPAID, CapacityType.CAPACITY_BLOCK: Tier.PREPAID,
                    CapacityType.SPOT: Tier.SPOT, CapacityType.ON_DEMAND: Tier.ON_DEMAND,
                    CapacityType.FLEX_START: Tier.ON_DEMAND}
TIER_OF_OPTION = {"capacity_block": Tier.PREPAID, "reservation": Tier.PREPAID, "commit_1y": Tier.PREPAID,
                  "commit_3y": Tier.PREPAID, "spot": Tier.SPOT, "on_demand": Tier.ON_DEMAND,
                  "flex_start": Tier.ON_DEMAND}


@dataclass(frozen=True)
class Offer:
    """GPUs of one model a worker can give a team, how they are paid, and at what rate (None: unknown)."""

    worker: str
    gpu: str
    tier: Tier
    gpus: int
    usd_per_gpu_hour: float | None


@dataclass(frozen=True)
class Ranked:
    worker: str
    tier: Tier
    planned_gpus: float  # the plan's prepaid GPUs for the team there
    usd_per_gpu_hour: float | None  # the worker's best rate in its tier; None when unknown

    def key(self) -> tuple[int, float, float, str]:
        unknown_last = float("inf") if self.usd_per_gpu_hour is None else self.usd_per_gpu_hour
        return (int(self.tier), -self.planned_gpus, unknown_last, self.worker)


def rank(gpu: str, spot_ok: bool, offers: Iterable[Offer], planned: Mapping[str, float] | None = None) -> list[Ranked]:
    """A team's workers for ``gpu``, best first: each by the best tier it offers (spot only when ``spot_ok``),
    then by the prepaid GPUs the plan put there for the team (``planned``: worker -> GPUs), then by its rate in
    that tier (unknown last), then by name. Workers with nothing the team may use are left out."""
    planned = planned or {}
    best: dict[str, Ranked] = {}
    for offer in offers:
        if offer.gpu != gpu or offer.gpus <= 0 or (offer.tier is Tier.SPOT and not spot_ok):
            continue
        mine = Ranked(offer.worker, offer.tier, planned.get(offer.worker, 0.0), offer.usd_per_gpu_hour)
        held = best.get(offer.worker)
        if held is None or (mine.tier, mine.key()[2]) < (held.tier, held.key()[2]):
            best[offer.worker] = mine
    return sorted(best.values(), key=Ranked.key)


def order(gpu: str, spot_ok: bool, offers: Iterable[Offer], planned: Mapping[str, float] | None = None) -> list[str]:
    """The worker names of :func:`rank`: what a team's MultiKueueConfig lists, in this order."""
    return [r.worker for r in rank(gpu, spot_ok, offers, planned)]
