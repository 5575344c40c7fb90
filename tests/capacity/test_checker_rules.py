"""The independent checker, one guarded rule at a time: a hand-written plan at the boundary passes, the same
plan one step past it fails with the rule's message. Plans are written by hand (not by a solver), prices
and hours computed here: January 2026 has 31 x 24 = 744 hours."""

from __future__ import annotations

import pytest
from plan_helpers import offer, quota, row

from capacity import check
from capacity.schema import CommitmentLine, Market, Option, PlanLine, ShortfallLine
from components.catalog import Cloud

JAN = "2026-01"
H = 744  # hours in January 2026
OD, SPOT, C1Y = 2.0, 1.0, 1.5  # USD per GPU-hour in the offers below

DEMAND = [row(JAN, "gang", 16 * H, gang=16), row(JAN, "flex", 20 * H, spot_ok=True), row(JAN, "fixed", 4 * H)]
OFFERS = [offer("r1", Option.ON_DEMAND, OD), offer("r2", Option.ON_DEMAND, OD), offer("r1", Option.SPOT, SPOT),
          offer("r1", Option.COMMIT_1Y, C1Y)]
QUOTAS = [quota("r1", Market.ON_DEMAND, 24), quota("r2", Market.ON_DEMAND, 8), quota("r1", Market.SPOT, 4)]


def line(team: str, option: Option, gpu_hours: float, region: str = "r1", usd: float | None = None) -> PlanLine:
    d = next(x for x in DEMAND if x.team == team)
    price = {Option.ON_DEMAND: OD, Option.SPOT: SPOT}.get(option, 0.0)
    return PlanLine(month=JAN, team=team, gpu="H100", cloud=Cloud.AWS, region=region, option=option,
                    gpu_hours=gpu_hours, usd=price * gpu_hours if usd is None else usd, gang_gpus=d.gang_gpus,
                    spot_ok=d.spot_ok)


def commitment(nodes: int, gpus: int | None = None, usd: float | None = None, start: str = JAN,
               machine: str = "h100-m8") -> CommitmentLine:
    gpus = 8 * nodes if gpus is None else gpus
    return CommitmentLine(cloud=Cloud.AWS, region="r1", machine_type=machine, gpu="H100", option=Option.COMMIT_1Y,
                          start_month=start, nodes=nodes, gpus=gpus,
                          usd_total=gpus * 8760 * C1Y if usd is None else usd)


def violations(lines: list[PlanLine], commitments: list[CommitmentLine] | None = None,
               shortfall: list[ShortfallLine] | None = None) -> list[str]:
    return check.check(DEMAND, OFFERS, QUOTAS, lines, commitments or [], shortfall or []).violations


def test_on_demand_quota_counts_active_commitments() -> None:
    # r1 on-demand quota 24 GPUs: 8 committed + 16 on demand fits; one GPU-hour more does not
    fits = [line("gang", Option.ON_DEMAND, 16 * H)]
    assert violations(fits, [commitment(1)]) == []
    over = violations([line("gang", Option.ON_DEMAND, 16 * H), line("fixed", Option.ON_DEMAND, 1)], [commitment(1)])
    assert any("committed" in v and "on_demand quota 24" in v for v in over)
    # without the commitment the same usage fits: the commitment is what broke it
    assert violations([line("gang", Option.ON_DEMAND, 16 * H), line("fixed", Option.ON_DEMAND, 1)]) == []


def test_spot_quota() -> None:
    assert violations([line("flex", Option.SPOT, 4 * H)]) == []
    assert any("spot quota 4" in v for v in violations([line("flex", Option.SPOT, 4 * H + 1)]))


def test_spot_only_for_spot_ok_rows() -> None:
    assert any("not spot_ok" in v for v in violations([line("fixed", Option.SPOT, 1)]))


def test_gang_row_stays_in_one_region() -> None:
    split = [line("gang", Option.ON_DEMAND, 8 * H), line("gang", Option.ON_DEMAND, 8 * H, region="r2")]
    assert any(v.startswith("gang row") and "split" in v for v in violations(split))


def test_gang_row_needs_a_region_whose_quota_fits_the_gang() -> None:
    # r2's quota of 8 is below the gang of 16, even for a sliver of the row
    assert any("quota 8 < 16" in v for v in violations([line("gang", Option.ON_DEMAND, 1, region="r2")]))
    assert violations([line("gang", Option.ON_DEMAND, 1)]) == []


def test_served_hours_never_exceed_the_row() -> None:
    assert violations([line("fixed", Option.ON_DEMAND, 4 * H)]) == []
    assert any("served" in v for v in violations([line("fixed", Option.ON_DEMAND, 4 * H + 1)]))


def test_usage_is_charged_at_the_offer_price_and_needs_an_offer() -> None:
    assert any("the price says" in v for v in violations([line("fixed", Option.ON_DEMAND, 100, usd=199.0)]))
    assert any("no spot offer" in v for v in violations([line("flex", Option.SPOT, 1, region="r2")]))


def test_committed_hours_cap_commitment_usage() -> None:
    assert violations([line("fixed", Option.COMMIT_1Y, 8 * H - 4 * H)], [commitment(1)]) == []
    assert any("commit_1y GPU-hours used" in v for v in violations([line("fixed", Option.COMMIT_1Y, 1)]))


@pytest.mark.parametrize("bad, message", [
    ({"nodes": 1, "gpus": 4}, "nodes must be 8"),  # not whole nodes
    ({"nodes": 1, "usd": 8 * 8760 * C1Y - 1.0}, "the full term is"),  # term not charged in full
    ({"nodes": 1, "start": "2025-12"}, "outside the horizon"),
    ({"nodes": 1, "machine": "h100-m4"}, "no such commitment offer"),
])
def test_commitment_terms_whole_nodes_and_offer(bad: dict, message: str) -> None:
    assert violations([], [commitment(1)]) == []
    assert any(message in v for v in violations([], [commitment(**bad)]))


def test_shortfall_total_matches_what_the_plan_leaves() -> None:
    unmet = sum(d.gpu_hours for d in DEMAND) - 100

    def short(total: float) -> list[ShortfallLine]:
        return [ShortfallLine(month=JAN, team="gang", gpu="H100", gang_gpus=16, spot_ok=False, unmet_gpu_hours=total,
                              reason="test")]

    assert violations([line("fixed", Option.ON_DEMAND, 100)], shortfall=short(unmet)) == []
    assert any("shortfall lists" in v for v in violations([line("fixed", Option.ON_DEMAND, 100)],
                                                          shortfall=short(unmet - 100)))


def test_recomputed_cost_is_the_sum_of_usage_and_full_commitment_terms() -> None:
    verdict = check.check(DEMAND, OFFERS, QUOTAS, [line("fixed", Option.ON_DEMAND, 100)], [commitment(1)])
    assert verdict.usage_usd == pytest.approx(100 * OD)
    assert verdict.commitment_usd == pytest.approx(8 * 8760 * C1Y)
    assert verdict.unmet_gpu_hours == pytest.approx(40 * H - 100)
