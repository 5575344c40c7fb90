"""capacity.dispatch: the order a team's MultiKueueConfig lists its workers in (each rule at its boundary)."""

from __future__ import annotations

from capacity.dispatch import Offer, Tier, order, rank


def test_prepaid_then_spot_then_on_demand() -> None:
    offers = [Offer("od", "H100", Tier.ON_DEMAND, 64, 9.0), Offer("spot", "H100", Tier.SPOT, 64, 3.0),
              Offer("cb", "H100", Tier.PREPAID, 64, 5.0)]
    assert order("H100", True, offers) == ["cb", "spot", "od"]


def test_spot_is_left_out_unless_the_work_may_run_there() -> None:
    offers = [Offer("spot", "H100", Tier.SPOT, 64, 3.0), Offer("od", "H100", Tier.ON_DEMAND, 64, 9.0)]
    assert order("H100", False, offers) == ["od"]


def test_a_worker_ranks_by_the_best_tier_it_offers() -> None:
    offers = [Offer("mixed", "H100", Tier.ON_DEMAND, 8, 9.0), Offer("mixed", "H100", Tier.PREPAID, 8, 5.0),
              Offer("spot", "H100", Tier.SPOT, 8, 2.0)]
    ranked = rank("H100", True, offers)
    assert [(r.worker, r.tier) for r in ranked] == [("mixed", Tier.PREPAID), ("spot", Tier.SPOT)]
    assert ranked[0].usd_per_gpu_hour == 5.0


def test_within_a_tier_the_plans_prepaid_gpus_then_the_rate_then_the_name() -> None:
    offers = [Offer(name, "H100", Tier.PREPAID, 64, rate) for name, rate in
              (("a", 5.0), ("b", 4.0), ("c", 4.0), ("d", 12.0))]
    assert order("H100", False, offers) == ["b", "c", "a", "d"]  # no plan: rate, then name
    assert order("H100", False, offers, {"d": 128, "a": 64}) == ["d", "a", "b", "c"]  # the plan's GPUs first


def test_an_unknown_rate_sorts_last_never_as_free() -> None:
    offers = [Offer("unknown", "H100", Tier.ON_DEMAND, 8, None), Offer("priced", "H100", Tier.ON_DEMAND, 8, 11.0)]
    assert order("H100", False, offers) == ["priced", "unknown"]


def test_other_models_and_empty_quota_are_not_offers() -> None:
    offers = [Offer("h200", "H200", Tier.PREPAID, 8, 1.0), Offer("none", "H100", Tier.PREPAID, 0, 1.0),
              Offer("h100", "H100", Tier.ON_DEMAND, 8, 9.0)]
    assert order("H100", False, offers) == ["h100"]
