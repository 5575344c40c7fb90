"""Brute force for tiny planning instances: enumerate every discrete choice, solve the rest exactly.

Independent of the planner's code: it reads the input rows itself, enumerates commitment node counts per
(offer, start month), the region of every gang row and whether it runs on prepaid capacity there, and prices
each month's usage with its own min-cost flow (successive shortest paths). Only for instances small enough to
enumerate.

Concurrency (docs/capacity.md): a gang of G GPUs and H GPU-hours on prepaid capacity of C < G GPUs gets at most
C/G x H from it, less what it leaves unserved; in the flow its prepaid and unserved hours share one arc of
that capacity, and its paid hours must carry the rest (else the choice is infeasible).
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Callable, Sequence

from capacity.schema import DemandRow, OfferRow, QuotaRow, add_months, charged_hours, hours


def _min_cost_flow(n: int, edges: list[list], source: int, sink: int, need: float) -> float:
    """edges: [u, v, capacity, cost]; returns the cost of sending ``need``, infinite when it cannot be sent."""
    graph: list[list[int]] = [[] for _ in range(n)]
    arcs: list[list] = []
    for u, v, cap, cost in edges:
        graph[u].append(len(arcs))
        arcs.append([v, cap, cost])
        graph[v].append(len(arcs))
        arcs.append([u, 0.0, -cost])
    total = 0.0
    while need > 1e-9:
        dist = [math.inf] * n
        prev: list[int | None] = [None] * n
        dist[source] = 0.0
        for _ in range(n):  # Bellman-Ford: residual arcs carry negative costs
            changed = False
            for u in range(n):
                if dist[u] == math.inf:
                    continue
                for a in graph[u]:
                    v, cap, cost = arcs[a]
                    if cap > 1e-9 and dist[u] + cost < dist[v] - 1e-12:
                        dist[v], prev[v], changed = dist[u] + cost, a, True
            if not changed:
                break
        if dist[sink] == math.inf:
            return math.inf
        push, v = need, sink
        while v != source:
            a = prev[v]
            push = min(push, arcs[a][1])
            v = arcs[a ^ 1][0]
        v = sink
        while v != source:
            a = prev[v]
            arcs[a][1] -= push
            arcs[a ^ 1][1] += push
            v = arcs[a ^ 1][0]
        total += push * dist[sink]
        need -= push
    return total


def optimum(demand: Sequence[DemandRow], offers: Sequence[OfferRow], quotas: Sequence[QuotaRow] | None,
            penalty: float) -> float:
    months = [min(d.month for d in demand)]
    while months[-1] < max(d.month for d in demand):
        months.append(add_months(months[-1], 1))
    price: dict[tuple, float] = {}
    commits: list[OfferRow] = []
    sites: set[tuple] = set()
    for o in offers:
        site = (o.cloud.value, o.region, o.gpu)
        sites.add(site)
        if o.option.is_commit:
            commits.append(o)
        else:
            price[(*site, o.option.value)] = min(price.get((*site, o.option.value), math.inf), o.usd_per_gpu_hour)
    limit = None if quotas is None else {(q.cloud.value, q.region, q.gpu, q.market.value): q.max_gpus for q in quotas}

    def quota(site: tuple, market: str) -> float:
        return math.inf if limit is None else limit.get((*site, market), 0)

    peak = max(max(sum(d.gpu_hours for d in demand if d.month == m) / hours(m),
                   max((d.gang_gpus for d in demand if d.month == m and d.gpu_hours > 0), default=0)) for m in months)
    choices = []
    for o in commits:
        q = quota((o.cloud.value, o.region, o.gpu), "on_demand")
        most = math.floor(q / o.gpus_per_node) if math.isfinite(q) else math.ceil(peak / o.gpus_per_node)
        for start in range(len(months)):
            choices.append((o, start, range(most + 1)))
    gangs = [i for i, d in enumerate(demand) if d.gang_gpus > 1 and d.gpu_hours > 0]
    prepaid_sites = {(o.cloud.value, o.region, o.gpu) for o in commits}
    gang_options = [[None, *sorted((s, on_prepaid) for s in sites if s[2] == demand[i].gpu
                                   and quota(s, "on_demand") >= demand[i].gang_gpus
                                   for on_prepaid in ((False, True) if s in prepaid_sites else (False,)))]
                    for i in gangs]
    best = math.inf
    for nodes in itertools.product(*(c[2] for c in choices)):
        committed: dict[tuple, float] = defaultdict(float)
        charge = 0.0
        for (o, start, _), k in zip(choices, nodes, strict=True):
            if not k:
                continue
            term = o.option.term_months
            charge += k * o.gpus_per_node * charged_hours(o.option, months[start]) * o.usd_per_gpu_hour
            for m in range(start, min(start + term, len(months))):
                committed[(m, o.cloud.value, o.region, o.gpu)] += k * o.gpus_per_node
        if any(v > quota(key[1:], "on_demand") for key, v in committed.items()):
            continue
        for placement in itertools.product(*gang_options):
            where = dict(zip(gangs, placement, strict=True))
            cost = charge + sum(_month(m, months[m], demand, sites, price, committed, quota, where, penalty)
                                for m in range(len(months)))
            best = min(best, cost)
    return best


def _month(m: int, month: str, demand: Sequence[DemandRow], sites: set[tuple], price: dict, committed: dict,
           quota: Callable[[tuple, str], float], where: dict, penalty: float) -> float:
    h = hours(month)
    rows = [(i, d) for i, d in enumerate(demand) if d.month == month and d.gpu_hours > 0]
    if not rows:
        return 0.0
    ordered = sorted(sites)
    n_rows = len(rows)
    source, sink = 0, 1
    node = {s: 2 + n_rows + 3 * k for k, s in enumerate(ordered)}  # commit, on-demand, spot nodes per site
    edges: list[list] = []
    extra = 2 + n_rows + 3 * len(ordered)  # one more node per gang row on prepaid capacity
    for r, (i, d) in enumerate(rows):
        row_node = 2 + r
        edges.append([source, row_node, d.gpu_hours, 0.0])
        placed = where.get(i)
        if d.gang_gpus > 1 and placed is not None and placed[1]:  # on prepaid: its prepaid + unserved <= C/G x H
            s = placed[0]
            held = committed.get((m, *s), 0.0)
            share = d.gpu_hours if held >= d.gang_gpus else held / d.gang_gpus * d.gpu_hours
            edges += [[row_node, extra, share, 0.0], [extra, node[s], d.gpu_hours, 0.0],
                      [extra, sink, d.gpu_hours, penalty]]
            extra += 1
        else:
            edges.append([row_node, sink, d.gpu_hours, penalty])
        allowed = [placed[0] if placed else None] if i in where else \
            ([] if d.gang_gpus > 1 else [s for s in ordered if s[2] == d.gpu])
        for s in allowed:
            if s is None:
                continue
            if d.gang_gpus == 1:  # a gang reaches prepaid capacity only through its arc above
                edges.append([row_node, node[s], d.gpu_hours, 0.0])
            if (*s, "on_demand") in price:
                edges.append([row_node, node[s] + 1, d.gpu_hours, price[(*s, "on_demand")]])
            if d.spot_ok and (*s, "spot") in price:
                edges.append([row_node, node[s] + 2, d.gpu_hours, price[(*s, "spot")]])
    for s in ordered:
        c = committed.get((m, *s), 0.0)
        edges.append([node[s], sink, c * h, 0.0])
        od = quota(s, "on_demand")
        edges.append([node[s] + 1, sink, (od - c) * h if math.isfinite(od) else 1e18, 0.0])
        sp = quota(s, "spot")
        edges.append([node[s] + 2, sink, sp * h if math.isfinite(sp) else 1e18, 0.0])
    return _min_cost_flow(extra, edges, source, sink, sum(d.gpu_hours for _, d in rows))
