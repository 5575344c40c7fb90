"""What the simulator replays: jobs, the workers they may run on, and the dispatch policies compared."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from capacity.dispatch import Tier

ROUND_S = 300.0  # the incremental dispatcher's round: incrementalDispatcherRoundTimeout, 5 minutes (v0.19.2)
DEFAULT_STEP = 3  # DefaultStepSize (v0.19.2)


@dataclass(frozen=True)
class Job:
    id: int
    arrival_s: float
    team: str
    gpu: str
    gpus: int  # a gang: all at once, in one pool (one flavor), or not at all
    duration_s: float
    spot_ok: bool = False


@dataclass(frozen=True)
class Pool:
    name: str
    gpu: str
    tier: Tier
    gpus: int
    usd_per_gpu_hour: float | None  # None only outside the simulator (capacity apply's ranking: unknown last)


@dataclass(frozen=True)
class Worker:
    """A worker cluster: its GPU pools in the order its ClusterQueues list their flavors (one flavor per pool), the
    teams with a queue there, and per (team, pool) the most GPUs the team's ClusterQueue may hold in that flavor:
    its nominal quota plus what it may borrow in the cohort (the other teams' nominal quota there, capped by its
    borrowing limit)."""

    name: str
    pools: tuple[Pool, ...]
    quotas: dict[tuple[str, str], int] = field(default_factory=dict)

    @property
    def teams(self) -> set[str]:
        return {team for team, _ in self.quotas}

    def offers(self, gpu: str) -> list[Pool]:
        return [p for p in self.pools if p.gpu == gpu]


class Dispatcher(StrEnum):
    ALL_AT_ONCE = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
    INCREMENTAL = "kueue.x-k8s.io/multikueue-dispatcher-incremental"


@dataclass(frozen=True)
class Policy:
    """A dispatcher and the worker order of each team's MultiKueueConfig.

    ``order`` is "alphabetical" (the incremental dispatcher without MultiKueueIncrementalDispatcherRespectConfigOrder,
    and the order a hand-written config has when its clusters are listed by name) or "plan" (capacity.dispatch)."""

    name: str
    dispatcher: Dispatcher
    order: str = "alphabetical"
    step: int = DEFAULT_STEP


POLICIES = (
    Policy("all-at-once", Dispatcher.ALL_AT_ONCE),
    Policy("incremental", Dispatcher.INCREMENTAL),
    Policy("plan-order", Dispatcher.INCREMENTAL, order="plan", step=1),
)
