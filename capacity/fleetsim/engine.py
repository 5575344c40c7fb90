"""The event loop: arrivals, MultiKueue nominations, worker admission, finishes and evictions.

What each dispatcher does is read from Kueue v0.19.2 (pkg/controller/admissionchecks/multikueue/workload.go,
pkg/controller/workloaddispatcher/incrementaldispatcher.go):
- all-at-once: the workload is copied to every worker of its MultiKueueConfig at once; the copy admitted first
  wins and the others are deleted. Who wins when several admit at the same instant is a race between API
  servers: modelled as a uniform draw (seeded).
- incremental: ``step`` workers are nominated (config order, or alphabetical without the RespectConfigOrder gate),
  and ``step`` more every 5 minutes while none has admitted; nominations accumulate.
A worker admits its pending copies in arrival order, skipping those that do not fit (BestEffortFIFO), into the
first flavor (pool) of its ClusterQueue with room for the whole gang, within the team's quota there. A job
evicted from a worker (a spot interruption here) goes back to the manager, is dispatched again from the start
of the order, and resumes from its last checkpoint: the work since then is lost and run again.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from capacity.dispatch import Tier
from capacity.fleetsim.model import ROUND_S, Dispatcher, Job, Policy, Pool, Worker

Klass = tuple[str, str, int, bool]  # (team, GPU model, GPUs, spot_ok): jobs a worker cannot tell apart
ARRIVE, FINISH, ROUND, EVICT = 0, 1, 2, 3  # FINISH before ROUND at the same second: freed GPUs are seen first


@dataclass
class Run:
    """What one policy did with one trace (seconds and GPU-seconds; metrics.py turns them into the table)."""

    policy: str
    waits_s: list[float] = field(default_factory=list)  # per finished job: time queued, all dispatches
    busy_gpu_s: dict[Tier, float] = field(default_factory=lambda: defaultdict(float))  # including lost work
    lost_gpu_s: float = 0.0  # work done after the last checkpoint of an evicted job
    usage_usd: float = 0.0  # spot and on-demand GPU-hours run, at their pool's rate
    end_s: float = 0.0  # the last finish
    evictions: int = 0
    by_worker_gpu_s: dict[str, float] = field(default_factory=lambda: defaultdict(float))


@dataclass
class _Live:
    job: Job
    remaining_s: float
    queued_at: float
    order: list[str]
    nominated: list[str] = field(default_factory=list)
    where: tuple[str, Pool] | None = None
    started: float = 0.0
    waited_s: float = 0.0  # queued so far, over every dispatch
    token: int = 0  # bumps on every dispatch: a ROUND or EVICT event of an older one is stale


class Simulation:
    def __init__(self, workers: Sequence[Worker], orders: Mapping[str, Sequence[str]], policy: Policy, seed: int = 0,
                 spot_interruptions_per_hour: float = 0.0, checkpoint_every_s: float = 1800.0):
        self.workers = {w.name: w for w in workers}
        self.orders = orders  # team -> the workers of its MultiKueueConfig, in the policy's order
        self.policy = policy
        self.rng = random.Random(seed)
        self.spot_rate_per_s = spot_interruptions_per_hour / 3600.0
        self.checkpoint_every_s = checkpoint_every_s
        self.free = {(w.name, p.name): p.gpus for w in workers for p in w.pools}
        self.held: dict[tuple[str, str, str], int] = defaultdict(int)  # (worker, team, pool) -> GPUs
        # worker -> job class -> heap of (queued_at, id, dispatch token); a class's jobs all fit or none does, so a
        # worker looks at the head of each class only (entries of admitted or re-dispatched jobs are skipped late)
        self.pending: dict[str, dict[Klass, list[tuple[float, int, int]]]] = defaultdict(lambda: defaultdict(list))
        self.live: dict[int, _Live] = {}
        self.events: list[tuple[float, int, int, int, int]] = []
        self.seq = 0
        self.run = Run(policy.name)

    def _push(self, at: float, kind: int, job_id: int, token: int = 0) -> None:
        self.seq += 1
        heapq.heappush(self.events, (at, kind, self.seq, job_id, token))

    def fit(self, worker: Worker, job: Job) -> Pool | None:
        """The first flavor of the team's ClusterQueue on ``worker`` with room for the whole gang, if any."""
        for pool in worker.offers(job.gpu):
            quota = worker.quotas.get((job.team, pool.name), 0)
            if ((pool.tier is not Tier.SPOT or job.spot_ok) and self.free[(worker.name, pool.name)] >= job.gpus
                    and self.held[(worker.name, job.team, pool.name)] + job.gpus <= quota):
                return pool
        return None

    def replay(self, jobs: Sequence[Job], progress: Callable[[int], None] | None = None) -> Run:
        for job in jobs:
            self._push(job.arrival_s, ARRIVE, job.id)
        by_id = {j.id: j for j in jobs}
        done = 0
        while self.events:
            now, kind, _, job_id, token = heapq.heappop(self.events)
            if kind == ARRIVE:
                job = by_id[job_id]
                self.live[job_id] = _Live(job, job.duration_s, now, list(self.orders.get(job.team, ())))
                self._dispatch(self.live[job_id], now)
            elif kind == ROUND:
                live = self.live.get(job_id)
                if live is not None and live.where is None and live.token == token:
                    self._nominate(live, now)
            elif kind == FINISH:
                live = self.live[job_id]
                if live.token == token:
                    worker = self._release(live, now)
                    del self.live[job_id]
                    self.run.waits_s.append(live.waited_s)
                    self.run.end_s = max(self.run.end_s, now)
                    done += 1
                    if progress:
                        progress(done)
                    self._scan(worker, now)
            elif kind == EVICT:
                live = self.live.get(job_id)
                if live is not None and live.token == token and live.where is not None:
                    self._evict(live, now)
        return self.run

    def _dispatch(self, live: _Live, now: float) -> None:
        if not live.order:
            raise ValueError(f"team {live.job.team!r} has no worker for {live.job.gpu}: nothing would admit job "
                             f"{live.job.id}")
        live.token += 1
        live.nominated = []
        live.queued_at = now
        self._nominate(live, now)

    def _nominate(self, live: _Live, now: float) -> None:
        rest = [w for w in live.order if w not in live.nominated]
        step = len(rest) if self.policy.dispatcher is Dispatcher.ALL_AT_ONCE else self.policy.step
        batch = rest[:step]
        live.nominated += batch
        for name in batch:
            heapq.heappush(self.pending[name][_klass(live.job)], (live.queued_at, live.job.id, live.token))
        ready = [(name, pool) for name in batch if (pool := self.fit(self.workers[name], live.job)) is not None]
        if ready:
            self._admit(live, *self.rng.choice(ready), now)
        elif len(rest) > step:
            self._push(now + ROUND_S, ROUND, live.job.id, live.token)

    def _admit(self, live: _Live, worker: str, pool: Pool, now: float) -> None:
        self.free[(worker, pool.name)] -= live.job.gpus
        self.held[(worker, live.job.team, pool.name)] += live.job.gpus
        live.where, live.started = (worker, pool), now
        live.waited_s += now - live.queued_at
        self._push(now + live.remaining_s, FINISH, live.job.id, live.token)
        if pool.tier is Tier.SPOT and self.spot_rate_per_s > 0:
            self._push(now + self.rng.expovariate(self.spot_rate_per_s), EVICT, live.job.id, live.token)

    def _release(self, live: _Live, now: float) -> str:
        assert live.where is not None
        worker, pool = live.where
        gpu_s = live.job.gpus * (now - live.started)
        self.free[(worker, pool.name)] += live.job.gpus
        self.held[(worker, live.job.team, pool.name)] -= live.job.gpus
        self.run.busy_gpu_s[pool.tier] += gpu_s
        self.run.by_worker_gpu_s[worker] += gpu_s
        if pool.tier is not Tier.PREPAID:
            self.run.usage_usd += gpu_s / 3600.0 * pool.usd_per_gpu_hour
        live.where = None
        return worker

    def _evict(self, live: _Live, now: float) -> None:
        ran = now - live.started
        kept = math.floor(ran / self.checkpoint_every_s) * self.checkpoint_every_s
        worker = self._release(live, now)
        self.run.evictions += 1
        self.run.lost_gpu_s += live.job.gpus * (ran - kept)
        live.remaining_s -= kept
        live.token += 1  # its copies still queued elsewhere are gone with the eviction
        self._scan(worker, now)  # work waiting there takes the freed GPUs before the evicted job comes back
        self._dispatch(live, now)

    def _head(self, queue: list[tuple[float, int, int]]) -> _Live | None:
        while queue:
            _, job_id, token = queue[0]
            live = self.live.get(job_id)
            if live is not None and live.where is None and live.token == token:
                return live
            heapq.heappop(queue)
        return None

    def _scan(self, name: str, now: float) -> None:
        """Admit pending copies in arrival order, skipping those that do not fit (BestEffortFIFO): the same as
        admitting, again and again, the earliest head of a class that fits."""
        worker = self.workers[name]
        while any(self.free[(name, p.name)] for p in worker.pools):
            best: tuple[float, _Live, Pool] | None = None
            for queue in self.pending[name].values():
                live = self._head(queue)
                if live is not None and (best is None or queue[0][:2] < (best[0], best[1].job.id)):
                    pool = self.fit(worker, live.job)
                    if pool is not None:
                        best = (queue[0][0], live, pool)
            if best is None:
                return
            self._admit(best[1], name, best[2], now)


def _klass(job: Job) -> Klass:
    return (job.team, job.gpu, job.gpus, job.spot_ok)


def simulate(workers: Sequence[Worker], orders: Mapping[str, Sequence[str]], policy: Policy, jobs: Sequence[Job],
             seed: int = 0, spot_interruptions_per_hour: float = 0.0, checkpoint_every_s: float = 1800.0,
             progress: Callable[[int], None] | None = None) -> Run:
    return Simulation(workers, orders, policy, seed, spot_interruptions_per_hour, checkpoint_every_s).replay(
        jobs, progress)
