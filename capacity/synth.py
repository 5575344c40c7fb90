"""Generated planning instances for benchmarks and tests: realistic shapes, seeded, no cloud access.

Quotas are concentrated where the clusters are: a few home regions per GPU get quota sized for the peak,
the rest a little or none (unlisted, so 0). Prices scale from per-GPU list-price levels of the bundled
snapshot (capacity/data/offers.csv) with a regional factor; spot, one- and three-year rates are drawn as
discounts off on-demand. Demand per team and GPU follows a trend with noise; gang rows model large jobs
that must share one interconnect domain. Instances start next month by default (dated from the run date);
benchmarks and tests pin ``start`` so every run draws the same instance.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field

from capacity.schema import DemandRow, Market, OfferRow, Option, QuotaRow, add_months, hours
from components.catalog import Cloud

# GPU -> (on-demand USD per GPU-hour level, GPUs per node)
GPU_LEVELS: dict[str, tuple[float, int]] = {
    "H100": (9.0, 8), "H200": (10.5, 8), "A100-40GB": (3.6, 8), "B200": (15.0, 8), "L4": (0.85, 1), "L40S": (2.0, 8),
}
CLOUDS = (Cloud.AWS, Cloud.GCP, Cloud.AZURE)


def next_month(today: dt.date | None = None) -> str:
    day = today or dt.datetime.now(dt.UTC).date()
    return add_months(f"{day.year:04d}-{day.month:02d}", 1)


@dataclass(frozen=True)
class Spec:
    name: str
    months: int
    regions: int  # in total, spread over the clouds
    gpus: int
    teams: int
    classes: int | None = None  # demand classes (team, gpu, gang, spot_ok); None: teams x gpus with gaps
    gang_share: float = 0.25
    start: str = field(default_factory=next_month)


SIZES = {
    "S": Spec("S", months=6, regions=10, gpus=4, teams=10),
    "M": Spec("M", months=24, regions=30, gpus=6, teams=50),
    "L": Spec("L", months=36, regions=60, gpus=6, teams=60, classes=100),
}


@dataclass(frozen=True)
class Instance:
    demand: list[DemandRow]
    offers: list[OfferRow]
    quotas: list[QuotaRow]


def generate(spec: Spec, seed: int = 7) -> Instance:
    rnd = random.Random(seed)
    gpus = list(GPU_LEVELS)[: spec.gpus]
    regions = [(CLOUDS[i % len(CLOUDS)], f"{CLOUDS[i % len(CLOUDS)].value}-r{i:02d}") for i in range(spec.regions)]
    offers: list[OfferRow] = []
    sites: dict[str, list[tuple[Cloud, str]]] = {g: [] for g in gpus}
    for cloud, region in regions:
        factor = rnd.uniform(0.9, 1.3)
        for gpu in gpus:
            if rnd.random() > 0.6 and len(sites[gpu]) >= 2:
                continue
            sites[gpu].append((cloud, region))
            offers.extend(_site_offers(rnd, cloud, region, gpu, factor))
    months = [add_months(spec.start, i) for i in range(spec.months)]
    demand = _demand(rnd, spec, gpus, months)
    quotas = _quotas(rnd, demand, sites, months)
    return Instance(demand, offers, quotas)


def _site_offers(rnd: random.Random, cloud: Cloud, region: str, gpu: str, factor: float) -> list[OfferRow]:
    level, per_node = GPU_LEVELS[gpu]
    od = round(level * factor * rnd.uniform(0.95, 1.05), 4)
    machine = f"{gpu.lower()}-x{per_node}"
    prices = {Option.ON_DEMAND: od}
    if rnd.random() < 0.7:
        prices[Option.SPOT] = round(od * rnd.uniform(0.3, 0.6), 4)
    if rnd.random() < 0.8:
        prices[Option.COMMIT_1Y] = round(od * rnd.uniform(0.6, 0.75), 4)
        prices[Option.COMMIT_3Y] = round(od * rnd.uniform(0.4, 0.5), 4)
    return [OfferRow(cloud=cloud, region=region, machine_type=machine, gpu=gpu, gpus_per_node=per_node,
                     option=option, usd_per_gpu_hour=price, source="synthetic", as_of="2026-01-01")
            for option, price in prices.items()]


def _demand(rnd: random.Random, spec: Spec, gpus: list[str], months: list[str]) -> list[DemandRow]:
    classes: list[tuple[str, str, int, bool]] = []
    for t in range(spec.teams):
        team = f"team-{t:03d}"
        for gpu in gpus:
            if rnd.random() < 0.5:
                classes.append((team, gpu, 1, rnd.random() < 0.3))
            if rnd.random() < spec.gang_share:
                classes.append((team, gpu, rnd.choice((16, 32, 64)), False))
    if spec.classes is not None:
        rnd.shuffle(classes)
        classes = sorted(set(classes[: spec.classes]))
    rows = []
    for team, gpu, gang, spot_ok in classes:
        base = rnd.lognormvariate(2.3, 0.8) if gang == 1 else gang * rnd.uniform(0.3, 0.8)
        trend = rnd.uniform(-0.01, 0.02)
        for i, month in enumerate(months):
            gpus_avg = max(0.0, base * (1 + trend) ** i * rnd.uniform(0.85, 1.15))
            if gang > 1:
                gpus_avg = min(gpus_avg, float(gang))  # one job of that size, running part of the month
            if gang > 1 and rnd.random() < 0.2:
                continue  # the big job did not run this month
            rows.append(DemandRow(month=month, team=team, gpu=gpu, gpu_hours=round(gpus_avg * hours(month), 1),
                                  gang_gpus=gang, spot_ok=spot_ok))
    return rows


def _quotas(rnd: random.Random, demand: list[DemandRow], sites: dict[str, list[tuple[Cloud, str]]],
            months: list[str]) -> list[QuotaRow]:
    peak: dict[str, float] = {}
    for month in months:
        per: dict[str, float] = {}
        for d in demand:
            if d.month == month:
                per[d.gpu] = per.get(d.gpu, 0.0) + d.gpu_hours / hours(month)
        for gpu, gpus in per.items():
            peak[gpu] = max(peak.get(gpu, 0.0), gpus)
    out = []
    for gpu, where in sites.items():
        homes = rnd.sample(where, k=min(len(where), 3 + len(where) // 6))
        for cloud, region in where:
            if (cloud, region) in homes:  # where the clusters are: quota sized for them
                on_demand = 8 * round(peak.get(gpu, 0.0) / len(homes) * rnd.uniform(1.1, 1.7) / 8 + 0.5)
            elif rnd.random() < 0.5:
                continue  # never asked for: the quota is 0 (an unlisted row)
            else:
                on_demand = 8 * rnd.randint(0, 3)
            out.append(QuotaRow(cloud=cloud, region=region, gpu=gpu, market=Market.ON_DEMAND, max_gpus=on_demand))
            out.append(QuotaRow(cloud=cloud, region=region, gpu=gpu, market=Market.SPOT,
                                max_gpus=int(on_demand * rnd.uniform(0.2, 0.5))))
    return out


# --- the quota-bound family --------------------------------------------------------------------------------

HARD_GPUS = ("H100", "H200", "A100-40GB", "B200")
HARD_GANGS = (8, 16, 32, 64, 128, 256, 512)


@dataclass(frozen=True)
class HardSpec:
    """Few regions, big gangs, quotas that bind: home regions get quota for part of the peak only."""

    name: str
    months: int = 24
    teams: int = 32
    regions_per_cloud: int = 3
    unservable: tuple[float, float] = (0.15, 0.20)  # share of a GPU's demand above its total quota
    start: str = field(default_factory=next_month)


HARD = {
    "H": HardSpec("H"),
    "HL": HardSpec("HL", months=48, teams=100),
}


def generate_hard(spec: HardSpec, seed: int = 7) -> Instance:
    """24 months x 9 regions over three clouds x 4 GPU models x 30+ teams, gangs of 8..512 GPUs. Every GPU
    model is sold in 5-7 regions; three are homes with most of the quota (the largest fits the largest gang),
    the others a little or none. The total quota leaves 15-20 % of the demand above it before gang packing
    (measured: 6-14 % of the demand is unserved at the optimum), so part of the demand cannot be served."""
    rnd = random.Random(seed)
    regions = [(cloud, f"{cloud.value}-h{i}") for cloud in CLOUDS for i in range(spec.regions_per_cloud)]
    offers: list[OfferRow] = []
    sites: dict[str, list[tuple[Cloud, str]]] = {}
    for gpu in HARD_GPUS:
        sites[gpu] = rnd.sample(regions, k=rnd.randint(5, min(7, len(regions))))
        for cloud, region in sites[gpu]:
            offers.extend(_site_offers(rnd, cloud, region, gpu, rnd.uniform(0.9, 1.3)))
    months = [add_months(spec.start, i) for i in range(spec.months)]
    demand = _hard_demand(rnd, spec, months)
    quotas: list[QuotaRow] = []
    for gpu, where in sites.items():
        total = _capacity_for(demand, gpu, rnd.uniform(*spec.unservable))
        homes = rnd.sample(where, k=3)
        small = {site: 8 * rnd.randint(1, 8) for site in where if site not in homes and rnd.random() < 0.6}
        left = max(0.0, total - sum(small.values()))
        shares = [rnd.uniform(0.5, 1.5) for _ in homes]
        homes_quota = {site: 8 * round(left * w / sum(shares) / 8) for site, w in zip(homes, shares, strict=True)}
        limits = {**small, **homes_quota}
        biggest = max((d.gang_gpus for d in demand if d.gpu == gpu), default=1)
        first = max(homes, key=lambda site: limits[site])
        limits[first] = max(limits[first], biggest)  # the main cluster holds the largest job
        for (cloud, region), on_demand in sorted(limits.items()):
            spot = 8 * round(on_demand * rnd.uniform(0.1, 0.3) / 8)
            quotas.append(QuotaRow(cloud=cloud, region=region, gpu=gpu, market=Market.ON_DEMAND,
                                   max_gpus=on_demand))
            quotas.append(QuotaRow(cloud=cloud, region=region, gpu=gpu, market=Market.SPOT, max_gpus=spot))
    return Instance(demand, offers, quotas)


def _hard_demand(rnd: random.Random, spec: HardSpec, months: list[str]) -> list[DemandRow]:
    rows = []
    for t in range(spec.teams):
        team = f"team-{t:03d}"
        classes = [(rnd.choice(HARD_GPUS), rnd.choice(HARD_GANGS) if rnd.random() < 0.6 else 1)
                   for _ in range(rnd.choice((1, 1, 2)))]
        for gpu, gang in sorted(set(classes)):
            spot_ok = gang == 1 and rnd.random() < 0.4
            base = rnd.uniform(16, 160) if gang == 1 else gang * rnd.uniform(0.4, 0.9)
            trend = rnd.uniform(-0.005, 0.03)
            for i, month in enumerate(months):
                gpus_avg = base * (1 + trend) ** i * rnd.uniform(0.8, 1.2)
                if gang > 1:
                    if rnd.random() < 0.15:
                        continue  # the big job did not run this month
                    gpus_avg = min(gpus_avg, float(gang))
                rows.append(DemandRow(month=month, team=team, gpu=gpu, gpu_hours=round(gpus_avg * hours(month), 1),
                                      gang_gpus=gang, spot_ok=spot_ok))
    return rows


def _capacity_for(demand: list[DemandRow], gpu: str, unservable: float) -> float:
    """The GPUs of quota, summed over regions, that leave ``unservable`` of the GPU's demand above it
    (before gang packing, which leaves more): the level Q with sum_m max(0, d_m - Q) = share x sum_m d_m."""
    per: dict[str, float] = {}
    for d in demand:
        if d.gpu == gpu:
            per[d.month] = per.get(d.month, 0.0) + d.gpu_hours / hours(d.month)
    levels = sorted(per.values(), reverse=True)
    target = unservable * sum(levels)
    low, high = 0.0, levels[0] if levels else 0.0
    for _ in range(60):  # bisection: the excess falls as Q rises
        mid = (low + high) / 2
        low, high = (mid, high) if sum(max(0.0, g - mid) for g in levels) > target else (low, mid)
    return high


def generate_rows(rows: int, seed: int = 7, start: str | None = None) -> Instance:
    """An H-like instance with exactly ``rows`` demand rows (24 months; teams added until there are enough),
    for measuring time and memory at scale."""
    spec = HardSpec("rows", teams=max(32, rows // 25 + 1), start=start or next_month())
    inst = generate_hard(spec, seed)
    if len(inst.demand) < rows:
        raise ValueError(f"drew {len(inst.demand)} rows, fewer than {rows}")
    return Instance(inst.demand[:rows], inst.offers, inst.quotas)
