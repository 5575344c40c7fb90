"""Each team's worker order from an accepted plan: where plan.csv put the team's prepaid and committed GPU-hours
in a month, which workers hold them (by cloud and region), and capacity.dispatch's tiers for the rest."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from capacity import dispatch
from capacity.apply.need import peak_gpus
from capacity.dispatch import TIER_OF_OPTION, Tier
from capacity.fleetsim.fleet import offers
from capacity.fleetsim.model import Worker
from capacity.schema import PlanLine

Site = tuple[str, str]  # (cloud, region)


def planned_prepaid(lines: Iterable[PlanLine], month: str, team: str, gpu: str,
                    site_of: Mapping[str, Site]) -> dict[str, float]:
    """worker -> the peak GPUs of the team's prepaid and committed plan lines at the worker's site in ``month``,
    shared equally by the workers of one site (the plan places capacity in a region, not in a cluster)."""
    at_site: dict[Site, float] = defaultdict(float)
    for line in lines:
        prepaid = TIER_OF_OPTION[line.option.value] is Tier.PREPAID
        if prepaid and (line.month, line.team, line.gpu) == (month, team, gpu):
            at_site[(line.cloud.value, line.region)] += peak_gpus(line.gpu_hours, line.gang_gpus, month)
    sharing: dict[Site, int] = defaultdict(int)
    for site in site_of.values():
        sharing[site] += 1
    return {w: at_site[site] / sharing[site] for w, site in site_of.items() if at_site.get(site)}


def team_orders(lines: Sequence[PlanLine], month: str, workers: Sequence[Worker],
                site_of: Mapping[str, Site]) -> dict[tuple[str, str], list[str]]:
    """(team, GPU) -> the order its MultiKueueConfig lists workers in, for every (team, GPU) the plan serves in
    ``month``: workers with the team's queue, ranked by capacity.dispatch with the plan's prepaid GPUs; spot only
    when all of that team's work on that GPU may run on spot."""
    spot_ok: dict[tuple[str, str], bool] = {}
    for line in lines:
        if line.month == month:
            key = (line.team, line.gpu)
            spot_ok[key] = spot_ok.get(key, True) and line.spot_ok
    out = {}
    for (team, gpu), spot in sorted(spot_ok.items()):
        mine = [w for w in workers if team in w.teams]
        planned = planned_prepaid(lines, month, team, gpu, {w.name: site_of[w.name] for w in mine})
        out[(team, gpu)] = dispatch.order(gpu, spot, (o for w in mine for o in offers(w, team)), planned)
    return out
