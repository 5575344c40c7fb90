"""The simulator's table: one row per dispatch policy, over one horizon shared by every policy of a trace."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from capacity.dispatch import Tier
from capacity.fleetsim.engine import Run
from capacity.fleetsim.model import Worker


@dataclass(frozen=True)
class Row:
    policy: str
    jobs: int
    wait_median_min: float
    wait_p95_min: float
    gpu_utilisation: float  # GPU-hours run / GPU-hours paid for (prepaid capacity over the horizon + pay-per-use)
    prepaid_utilisation: float  # prepaid GPU-hours run / prepaid GPU-hours over the horizon
    on_demand_share: float  # share of the GPU-hours run on on-demand (spill)
    spot_share: float
    lost_gpu_hours: float  # work since the last checkpoint of evicted jobs, run again
    cost_usd: float  # prepaid capacity over the horizon + spot and on-demand GPU-hours run
    makespan_h: float

    def as_dict(self) -> dict[str, float | str | int]:
        return asdict(self)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-quantile by the nearest-rank method (q in 0..1)."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 1))
    return ordered[int(rank) - 1]


def summarise(run: Run, workers: Sequence[Worker], horizon_s: float) -> Row:
    prepaid = [p for w in workers for p in w.pools if p.tier is Tier.PREPAID]
    prepaid_gpu_h = sum(p.gpus for p in prepaid) * horizon_s / 3600.0
    prepaid_usd = sum(p.gpus * p.usd_per_gpu_hour for p in prepaid) * horizon_s / 3600.0
    busy = {tier: run.busy_gpu_s.get(tier, 0.0) / 3600.0 for tier in Tier}
    ran = sum(busy.values())
    paid = prepaid_gpu_h + busy[Tier.SPOT] + busy[Tier.ON_DEMAND]
    return Row(run.policy, len(run.waits_s), statistics.median(run.waits_s) / 60.0,
               percentile(run.waits_s, 0.95) / 60.0, ran / paid if paid else float("nan"),
               busy[Tier.PREPAID] / prepaid_gpu_h if prepaid_gpu_h else float("nan"),
               busy[Tier.ON_DEMAND] / ran if ran else 0.0, busy[Tier.SPOT] / ran if ran else 0.0,
               run.lost_gpu_s / 3600.0, prepaid_usd + run.usage_usd, run.end_s / 3600.0)
