"""The planning MILP: variables, constraints and the maps needed to read a solution back.

Model (docs/capacity.md states it in prose):
  units u      demand rows of one (month, gpu); rows with gang_gpus == 1 are pooled per spot_ok (exact:
               their cost does not depend on the team), gang rows stay single;
  S[u,s] >= 0  GPU-hours of unit u served at site s (cloud, region, gpu); U[u] >= 0 unserved, at the penalty;
  Z[u,s] in {0,1} a gang row's one site;  sum_s Z[u,s] <= 1,  S[u,s] <= H_u Z[u,s];
  OD, SP, CM   per (month, site): on-demand, spot and committed GPU-hours; OD + SP + CM = sum_u S[u,s];
               SP <= sum of S over spot_ok units;
  Y[c,t] int   nodes of commit offer c starting in month t; CM <= h(m) * sum_active gpus(c) Y;
  quotas       h(m) * sum_active gpus(c) Y + OD <= h(m) Q_od;  SP <= h(m) Q_sp;
  concurrency  a gang row u (G GPUs, H GPU-hours) where C = sum_active gpus(c) Y prepaid GPUs may be fewer than
               G: T[u,s] paid GPU-hours (its top-up), W[u,s] in {0,1} "uses prepaid capacity";
               S - T <= H W,  T + (H/G) C >= H W,  S - T <= (H/G) C,  T <= S;  per (month, site) the top-ups
               fit the paid hours: sum T <= OD + SP, sum of the not spot_ok T <= OD (with the balance row,
               exactly what lets the hours be split so no gang holds more prepaid GPUs than there are);
  held         capacity the fleet already holds, K GPU-hours at (month, site) (C0 = K / h GPUs): no column and no
               cost (sunk); CM <= K + h sum gpus Y, it fills the quota first (OD <= h Q_od - K) and counts in C;
  objective    price_od OD + price_sp SP + sum charge(c) Y + penalty U.
In relaxed mode every quota gets a priced increase E[s, market] (in GPUs), and gang rows may go to sites
whose on-demand quota is below the gang if E covers the difference.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from capacity.problem import CommitOffer, Problem, Site
from capacity.schema import Market

INF = math.inf


@dataclass
class Unit:
    month: int
    gpu: str
    spot_ok: bool
    gang: int
    rows: list[int]
    hours: float


@dataclass
class Model:
    """Columns and a row-wise matrix, plus where each variable of the formulation lives."""

    cost: list[float] = field(default_factory=list)
    lower: list[float] = field(default_factory=list)
    upper: list[float] = field(default_factory=list)
    integer: list[int] = field(default_factory=list)
    starts: list[int] = field(default_factory=lambda: [0])
    index: list[int] = field(default_factory=list)
    value: list[float] = field(default_factory=list)
    row_lower: list[float] = field(default_factory=list)
    row_upper: list[float] = field(default_factory=list)
    units: list[Unit] = field(default_factory=list)
    unserved: list[int] = field(default_factory=list)  # per unit
    served: dict[tuple[int, Site], int] = field(default_factory=dict)  # (unit, site) -> S
    chosen: dict[tuple[int, Site], int] = field(default_factory=dict)  # (unit, site) -> Z
    od: dict[tuple[int, Site], int] = field(default_factory=dict)
    sp: dict[tuple[int, Site], int] = field(default_factory=dict)
    cm: dict[tuple[int, Site], int] = field(default_factory=dict)
    nodes: dict[tuple[CommitOffer, Site, int], int] = field(default_factory=dict)
    topup: dict[tuple[int, Site], int] = field(default_factory=dict)  # (gang unit, site) -> T
    prepaid: dict[tuple[int, Site], int] = field(default_factory=dict)  # (gang unit, site) -> W
    held: dict[tuple[int, Site], list[tuple[int, int]]] = field(default_factory=dict)  # (month, site) -> (Y, GPUs)
    sunk: dict[tuple[int, Site], float] = field(default_factory=dict)  # (month, site) -> GPUs already held (C0)
    increase: dict[tuple[Site, Market], int] = field(default_factory=dict)
    balance: dict[tuple[int, Site], int] = field(default_factory=dict)  # (month, site) -> its balance row
    hours: list[int] = field(default_factory=list)  # per month of the horizon
    _arrays: tuple[tuple[int, int, int], dict[str, np.ndarray]] | None = field(default=None, repr=False)

    def col(self, cost: float, lower: float, upper: float, integer: bool = False) -> int:
        self.cost.append(cost)
        self.lower.append(lower)
        self.upper.append(upper)
        if integer:
            self.integer.append(len(self.cost) - 1)
        return len(self.cost) - 1

    def row(self, entries: list[tuple[int, float]], lower: float, upper: float) -> None:
        for col, coef in entries:
            self.index.append(col)
            self.value.append(coef)
        self.starts.append(len(self.index))
        self.row_lower.append(lower)
        self.row_upper.append(upper)

    def stats(self) -> dict[str, int]:
        return {"columns": self.num_col, "rows": self.num_row, "nonzeros": len(self.index),
                "integers": len(self.integer), "units": len(self.units)}

    @property
    def num_col(self) -> int:
        return len(self.cost)

    @property
    def num_row(self) -> int:
        return len(self.row_lower)

    def arrays(self) -> dict[str, np.ndarray]:
        """The model as read-only numpy arrays, made once per shape: solvers ask for them many times, and a
        copy per call of every nonzero was what made memory grow with the solve, not with the rows."""
        shape = (self.num_col, self.num_row, len(self.index))
        if self._arrays is None or self._arrays[0] != shape:
            made = {"cost": np.asarray(self.cost, dtype=float), "lower": np.asarray(self.lower, dtype=float),
                    "upper": np.asarray(self.upper, dtype=float), "starts": np.asarray(self.starts, dtype=np.int32),
                    "index": np.asarray(self.index, dtype=np.int32), "value": np.asarray(self.value, dtype=float),
                    "row_lower": np.asarray(self.row_lower, dtype=float),
                    "row_upper": np.asarray(self.row_upper, dtype=float),
                    "integer": np.asarray(self.integer, dtype=np.int32)}
            for array in made.values():
                array.flags.writeable = False
            self._arrays = (shape, made)
        return self._arrays[1]


def request_weight(problem: Problem) -> float:
    """USD charged per GPU of quota increase in the relaxed solve: half the penalty of one GPU left idle for
    the shortest month, so an increase is only worth it to serve demand, not to save a few dollars."""
    return 0.5 * problem.penalty * min(problem.hours)


def units_of(problem: Problem, gpu: str | None = None) -> list[Unit]:
    index = {m: i for i, m in enumerate(problem.months)}
    pooled: dict[tuple[int, str, bool], Unit] = {}
    out: list[Unit] = []
    for r, d in enumerate(problem.demand):
        if d.gpu_hours <= 0 or (gpu is not None and d.gpu != gpu):
            continue
        m = index[d.month]
        if d.gang_gpus == 1:
            unit = pooled.get((m, d.gpu, d.spot_ok))
            if unit is None:
                unit = pooled[(m, d.gpu, d.spot_ok)] = Unit(m, d.gpu, d.spot_ok, 1, [], 0.0)
                out.append(unit)
            unit.rows.append(r)
            unit.hours += d.gpu_hours
        else:
            out.append(Unit(m, d.gpu, d.spot_ok, d.gang_gpus, [r], d.gpu_hours))
    return out


def eligible(site: Site, unit: Unit, relax: bool, held_gpus: float = 0.0) -> bool:
    reserved = site.on_demand is not None or bool(site.commits)
    if relax:
        return reserved or held_gpus > 0 or (unit.spot_ok and site.spot is not None)
    if unit.gang > 1 and unit.gang > max(site.quota_on_demand, held_gpus):
        return False
    return held_gpus > 0 or (reserved and site.quota_on_demand > 0) or (unit.spot_ok and site.spot is not None
                                                                        and site.quota_spot > 0)


def build(problem: Problem, relax: bool = False, gpu: str | None = None) -> Model:
    """The model for one GPU model (the problem splits exactly by GPU: no site, quota or offer is shared),
    or for all of them when ``gpu`` is None."""
    model = Model()
    hours = model.hours = list(problem.hours)
    by_gpu: dict[str, list[Site]] = defaultdict(list)
    for site in problem.sites.values():
        by_gpu[site.gpu].append(site)
    at: dict[tuple[int, Site], list[int]] = defaultdict(list)  # (month, site) -> units served there
    model.units = units_of(problem, gpu)
    weight = request_weight(problem) if relax else 0.0

    def increase(site: Site, market: Market) -> int:
        key = (site, market)
        if key not in model.increase:
            model.increase[key] = model.col(weight, 0.0, INF)
        return model.increase[key]

    for u, unit in enumerate(model.units):
        model.unserved.append(model.col(problem.penalty, 0.0, unit.hours))
        sites = [s for s in by_gpu.get(unit.gpu, [])
                 if eligible(s, unit, relax, problem.held_gpus(unit.month, s))]
        entries = [(model.unserved[u], 1.0)]
        choices = []
        for site in sites:
            s = model.served[(u, site)] = model.col(0.0, 0.0, unit.hours)
            entries.append((s, 1.0))
            at[(unit.month, site)].append(u)
            short = unit.gang > 1 and unit.gang > max(site.quota_on_demand, problem.held_gpus(unit.month, site))
            if unit.gang > 1 and (len(sites) > 1 or short):
                z = model.chosen[(u, site)] = model.col(0.0, 0.0, 1.0, integer=True)
                model.row([(s, 1.0), (z, -unit.hours)], -INF, 0.0)
                choices.append((z, 1.0))
                if short:  # relaxed only: the quota must grow to the gang
                    model.row([(increase(site, Market.ON_DEMAND), 1.0), (z, site.quota_on_demand - unit.gang)],
                              0.0, INF)
        if len(choices) > 1:
            model.row(choices, -INF, 1.0)
        model.row(entries, unit.hours, unit.hours)

    _supply(problem, model, at, hours, relax, increase)
    return model


def _supply(problem: Problem, model: Model, at: dict[tuple[int, Site], list[int]], hours: list[int],
            relax: bool, increase: Callable[[Site, Market], int]) -> None:
    for (m, site), units in at.items():
        h, sunk = hours[m], site.held_hours(m)
        if sunk > 0:
            model.sunk[(m, site)] = sunk / h
        spot_units = [u for u in units if model.units[u].spot_ok]
        q_od, q_sp = site.quota_on_demand, site.quota_spot
        balance = [(model.served[(u, site)], -1.0) for u in units]
        if site.on_demand is not None and (relax or q_od > 0):
            bound = INF if relax or math.isinf(q_od) else max(0.0, h * q_od - sunk)
            model.od[(m, site)] = model.col(site.on_demand.usd_per_gpu_hour, 0.0, bound)
            balance.append((model.od[(m, site)], 1.0))
        if site.spot is not None and spot_units and (relax or q_sp > 0):
            bound = INF if relax or math.isinf(q_sp) else h * q_sp
            sp = model.sp[(m, site)] = model.col(site.spot.usd_per_gpu_hour, 0.0, bound)
            balance.append((sp, 1.0))
            if len(spot_units) < len(units):
                model.row([(sp, 1.0)] + [(model.served[(u, site)], -1.0) for u in spot_units], -INF, 0.0)
            if relax and not math.isinf(q_sp):
                model.row([(sp, 1.0), (increase(site, Market.SPOT), -h)], -INF, h * q_sp)
        if (site.commits and (relax or q_od > 0)) or sunk > 0:
            model.cm[(m, site)] = model.col(0.0, 0.0, INF)
            balance.append((model.cm[(m, site)], 1.0))
        model.balance[(m, site)] = model.num_row
        model.row(balance, 0.0, 0.0)
    active = model.held = _commitments(problem, model, hours, relax)
    for m, site in sorted(set(model.od) | set(model.cm) | set(active), key=lambda k: (k[0], k[1].key)):
        h, q_od = hours[m], site.quota_on_demand
        terms, sunk = active.get((m, site), []), model.sunk.get((m, site), 0.0) * h
        if (m, site) in model.cm:
            model.row([(model.cm[(m, site)], 1.0)] + [(y, -h * g) for y, g in terms], -INF, sunk)
        if math.isinf(q_od) or not (relax or terms):
            continue
        entries = [(y, float(h * g)) for y, g in terms]
        if (m, site) in model.od:
            entries.append((model.od[(m, site)], 1.0))
        if relax:
            entries.append((increase(site, Market.ON_DEMAND), -h))
        model.row(entries, -INF, max(0.0, h * q_od - sunk))
    _concurrency(model, at, active)


def _concurrency(model: Model, at: dict[tuple[int, Site], list[int]],
                 active: dict[tuple[int, Site], list[tuple[int, int]]]) -> None:
    """While a gang runs it holds all its GPUs at once: prepaid capacity of C < G GPUs serves at most C/G of it,
    the rest is paid per hour used (docs/capacity.md, "Concurrency"). Held capacity (C0 GPUs) counts in C. Only
    gangs larger than C0 and than the smallest node they could find prepaid need the rows: otherwise any prepaid
    capacity there already holds the gang."""
    for (m, site), units in sorted(at.items(), key=lambda kv: (kv[0][0], kv[0][1].key)):
        terms, c0 = active.get((m, site), []), model.sunk.get((m, site), 0.0)
        if not terms and c0 <= 0:
            continue
        smallest = min((g for _, g in terms), default=INF)
        gangs = [u for u in units if model.units[u].gang > c0 and (c0 > 0 or model.units[u].gang > smallest)]
        for u in gangs:
            unit = model.units[u]
            s, share = model.served[(u, site)], unit.hours / unit.gang
            t = model.topup[(u, site)] = model.col(0.0, 0.0, unit.hours)
            w = model.prepaid[(u, site)] = model.col(0.0, 0.0, 1.0, integer=True)
            held = [(y, share * g) for y, g in terms]
            model.row([(s, 1.0), (t, -1.0), (w, -unit.hours)], -INF, 0.0)
            model.row([(t, 1.0), *held, (w, -unit.hours)], -share * c0, INF)
            model.row([(s, 1.0), (t, -1.0)] + [(y, -c) for y, c in held], -INF, share * c0)
            model.row([(t, 1.0), (s, -1.0)], -INF, 0.0)
        if not gangs:
            continue
        paid = [(model.od[(m, site)], -1.0)] if (m, site) in model.od else []
        model.row([(model.topup[(u, site)], 1.0) for u in gangs] + paid
                  + ([(model.sp[(m, site)], -1.0)] if (m, site) in model.sp else []), -INF, 0.0)
        fixed = [u for u in gangs if not model.units[u].spot_ok]
        if (m, site) in model.sp and fixed:
            model.row([(model.topup[(u, site)], 1.0) for u in fixed] + paid, -INF, 0.0)


def _commitments(problem: Problem, model: Model, hours: list[int],
                 relax: bool) -> dict[tuple[int, Site], list[tuple[int, int]]]:
    """Y columns for every commit offer and start month that overlaps a month the site is used in."""
    horizon = len(problem.months)
    peak = _peak_gpus(model, hours)
    used: dict[Site, set[int]] = defaultdict(set)
    for m, site in model.cm:
        used[site].add(m)
    active: dict[tuple[int, Site], list[tuple[int, int]]] = defaultdict(list)
    for site, months in used.items():
        for commit in site.commits:
            upper = math.ceil(peak.get(site.gpu, 0.0) / commit.gpus - 1e-9)
            if not relax and not math.isinf(site.quota_on_demand):
                upper = min(upper, math.floor(site.quota_on_demand / commit.gpus + 1e-9))
            if upper <= 0:
                continue
            for start in range(horizon):
                span = range(start, min(start + commit.term_months, horizon))
                if not any(m in months for m in span):
                    continue
                y = model.nodes[(commit, site, start)] = model.col(problem.charge(commit, start), 0.0, upper,
                                                                     integer=True)
                for m in span:
                    active[(m, site)].append((y, commit.gpus))
    return active


def _peak_gpus(model: Model, hours: list[int]) -> dict[str, float]:
    """The most GPUs of each model any month asks for, on average or held at once by its largest gang: prepaid
    capacity beyond both serves nothing more (docs/capacity.md, "Concurrency"), so no commitment needs more."""
    per: dict[tuple[str, int], float] = defaultdict(float)
    gangs: dict[tuple[str, int], float] = defaultdict(float)
    for unit in model.units:
        per[(unit.gpu, unit.month)] += unit.hours / hours[unit.month]
        gangs[(unit.gpu, unit.month)] = max(gangs[(unit.gpu, unit.month)], unit.gang)
    for key, gang in gangs.items():
        per[key] = max(per[key], gang)
    peak: dict[str, float] = defaultdict(float)
    for (gpu, _), gpus in per.items():
        peak[gpu] = max(peak[gpu], gpus)
    return peak
