"""The simulated fleet from stack files: each cluster a worker, each GPU pool a flavor priced from the price table,
each team's quota per flavor as components/k8s/kueue.py lays it out, and the teams' MultiKueueConfig orders."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from capacity import dispatch
from capacity.dispatch import TIER_OF_CAPACITY, Tier
from capacity.fleetsim.model import Job, Policy, Pool, Worker
from capacity.prices.table import Prices
from components.fleet import Cluster, Fleet
from components.k8s.kueue import gpu_shares


def _pool_price(cluster: Cluster, pool_name: str, prices: Prices, strict: bool = True) -> float | None:
    """The pool's rate per GPU-hour; unknown: an error when ``strict`` (a simulated cost needs every rate), else
    None (capacity.dispatch ranks an unknown rate last, never as free)."""
    pool = next(p for p in cluster.pools if p.name == pool_name)
    offer = prices.price(cluster.cloud.value, cluster.spec.region, pool.machine.name, pool.capacity.value)
    if offer is None and not strict:
        return None
    if offer is None:
        raise ValueError(f"{cluster.name}/{pool.name}: no price for {pool.machine.name} ({pool.capacity.value}) in "
                         f"{cluster.spec.region}; add it to capacity/data/offers.csv (`gpufleet capacity prices`)")
    return offer.usd_per_node_hour / pool.machine.gpus


def worker(name: str, cluster: Cluster, prices: Prices, strict: bool = True) -> Worker:
    pools = tuple(Pool(p.name, p.machine.gpu, TIER_OF_CAPACITY[p.capacity], p.max_gpus,
                       _pool_price(cluster, p.name, prices, strict)) for p in cluster.pools)
    shares = gpu_shares(cluster)
    quotas: dict[tuple[str, str], int] = {}
    for team in cluster.spec.addons.kueue_teams:
        for pool in cluster.pools:
            others = sum(shares[t.name][pool.name] for t in cluster.spec.addons.kueue_teams if t.name != team.name)
            limit = others if team.borrowing_limit_gpus is None else min(others, team.borrowing_limit_gpus)
            quotas[(team.name, pool.name)] = shares[team.name][pool.name] + limit
    return Worker(name, pools, quotas)


def workers(stacks: Mapping[str, Fleet], prices: Prices) -> list[Worker]:
    """One worker per cluster of each stack, named ``<stack>/<cluster>``."""
    return [worker(f"{stack}/{c.name}", c, prices) for stack, fleet in sorted(stacks.items()) for c in fleet.clusters]


def offers(w: Worker, team: str) -> list[dispatch.Offer]:
    """What ``w`` can give ``team``: per flavor, the GPUs its quota there allows, at the flavor's rate."""
    return [dispatch.Offer(w.name, p.gpu, p.tier, min(w.quotas.get((team, p.name), 0), p.gpus), p.usd_per_gpu_hour)
            for p in w.pools]


def planned_prepaid(w: Worker, team: str, gpu: str) -> float:
    """Without a plan file: the team's prepaid quota there stands for where the plan put its prepaid capacity."""
    return float(sum(min(w.quotas.get((team, p.name), 0), p.gpus) for p in w.offers(gpu) if p.tier is Tier.PREPAID))


def team_demand(jobs: Iterable[Job]) -> dict[str, tuple[str, bool]]:
    """team -> (the GPU most of its jobs ask for, whether its work may run on spot)."""
    gpus: dict[str, Counter[str]] = {}
    spot: dict[str, bool] = {}
    for job in jobs:
        gpus.setdefault(job.team, Counter())[job.gpu] += job.gpus
        spot[job.team] = spot.get(job.team, True) and job.spot_ok
    return {team: (count.most_common(1)[0][0], spot[team]) for team, count in gpus.items()}


def orders(fleet: Sequence[Worker], policy: Policy, demand: Mapping[str, tuple[str, bool]]) -> dict[str, list[str]]:
    """Each team's MultiKueueConfig: the workers with its queue and a flavor of its GPU it may use, in the policy's
    order (by name, or capacity.dispatch's plan order)."""
    out: dict[str, list[str]] = {}
    for team, (gpu, spot_ok) in sorted(demand.items()):
        mine = [w for w in fleet if team in w.teams]
        ranked = dispatch.rank(gpu, spot_ok, (o for w in mine for o in offers(w, team)),
                               {w.name: planned_prepaid(w, team, gpu) for w in mine})
        names = [r.worker for r in ranked]
        out[team] = names if policy.order == "plan" else sorted(names)
    return out


def with_on_demand_burst(stacks: Mapping[str, Fleet], prices: Prices, nodes: int) -> list[Worker]:
    """A what-if of the same fleet: each prepaid pool gets an on-demand pool of ``nodes`` nodes of its machine
    beside it (a last flavor of its ClusterQueues, for the teams with quota in the prepaid pool), priced at the
    machine's on-demand rate: where a policy's spill to on-demand shows."""
    out = []
    for w, (stack, cluster) in zip(workers(stacks, prices), ((s, c) for s, f in sorted(stacks.items())
                                                             for c in f.clusters), strict=True):
        extra, quotas = [], dict(w.quotas)
        for pool in (p for p in cluster.pools if TIER_OF_CAPACITY[p.capacity] is Tier.PREPAID):
            offer = prices.price(cluster.cloud.value, cluster.spec.region, pool.machine.name, "on_demand")
            if offer is None:
                raise ValueError(f"{stack}/{cluster.name}/{pool.name}: no on-demand price for {pool.machine.name}")
            burst = Pool(f"{pool.name}-burst", pool.machine.gpu, Tier.ON_DEMAND, nodes * pool.machine.gpus,
                         offer.usd_per_node_hour / pool.machine.gpus)
            extra.append(burst)
            for team in {t for t, p in w.quotas if p == pool.name and w.quotas[(t, p)] > 0}:
                quotas[(team, burst.name)] = burst.gpus
        out.append(Worker(w.name, (*w.pools, *extra), quotas))
    return out
