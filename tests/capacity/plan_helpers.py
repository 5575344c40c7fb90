"""Shorthand for planner tests: offers, quotas and demand rows on AWS, and a plan check that must pass."""

from __future__ import annotations

import math

from capacity import check
from capacity.plan import Plan
from capacity.schema import DemandRow, Market, OfferRow, Option, QuotaRow
from components.catalog import Cloud


def offer(region: str, option: Option, price: float, per_node: int = 8, gpu: str = "H100") -> OfferRow:
    return OfferRow(cloud=Cloud.AWS, region=region, machine_type=f"{gpu.lower()}-m{per_node}", gpu=gpu,
                    gpus_per_node=per_node, option=option, usd_per_gpu_hour=price, source="test", as_of="2026-01-01")


def quota(region: str, market: Market, gpus: int, gpu: str = "H100") -> QuotaRow:
    return QuotaRow(cloud=Cloud.AWS, region=region, gpu=gpu, market=market, max_gpus=gpus)


def row(month: str, team: str, gpu_hours: float, gang: int = 1, spot_ok: bool = False) -> DemandRow:
    return DemandRow(month=month, team=team, gpu="H100", gpu_hours=gpu_hours, gang_gpus=gang, spot_ok=spot_ok)


def verify(demand: list[DemandRow], offers: list[OfferRow], quotas: list[QuotaRow] | None, plan: Plan,
           penalty: float) -> check.Verdict:
    verdict = check.check(demand, offers, quotas, plan.lines, plan.commitments, plan.shortfall, penalty)
    assert verdict.ok, verdict.violations
    assert math.isclose(verdict.objective_usd, plan.objective_usd, rel_tol=1e-6, abs_tol=1e-6)
    return verdict
