"""Every GPU offering of the catalogue has a price per option it sells, or a stated reason; no row claims to be a
captured API response.

The issue asks for >= 95% of offerings priced from cited sources. Measured on the bundled snapshot: 487 of 551
(88.4%; 461, 83.7%, before the Azure snapshot and the Capacity Blocks table): AWS 398 of 449 (no pinned dataset
prices g5 in eu-south-2 and eu-west-3, g6e in ap-northeast-3, ap-south-1, ap-south-2 and me-central-1, or p6-b200
in ap-south-2, eu-north-1 and eu-west-3), GCP 67 of 80 (A4 everywhere, A3 Ultra and A3 Mega in some regions),
Azure 22 of 22. The floor below holds that share so it cannot fall, and every offering left out is named with its
reason (capacity/prices/coverage.py)."""

from __future__ import annotations

from capacity import inputs
from capacity.prices import coverage
from capacity.schema import Option


def test_every_unpriced_option_of_every_offering_has_a_reason() -> None:
    offers = inputs.load_offers()
    gaps = coverage.gaps(offers)
    assert gaps and all(g.reason for g in gaps)
    priced = {o.key for o in offers}
    assert not [g for g in gaps if (g.cloud, g.region, g.machine_type, g.option) in priced]
    # every (cloud, option) reason still explains something: a price that arrives retires its reason
    explained = {(g.cloud, g.option) for g in gaps}
    assert set(coverage.REASONS) <= explained, set(coverage.REASONS) - explained


def test_the_share_of_offerings_priced_from_cited_sources_does_not_fall() -> None:
    priced, every = coverage.priced_share(inputs.load_offers())
    assert every == 551  # 449 AWS + 80 GCP + 22 Azure (cloud, region, GPU machine type) offerings
    assert priced >= 487


def test_no_row_claims_to_be_a_recorded_api_response() -> None:
    for o in inputs.load_offers():
        assert not any(word in o.source.lower() for word in ("recorded", "replayed", "api answer")), o.source
        assert "https://" in o.source, o.source
        assert o.source.startswith(("https://", "typed from https://", "derived: https://")), o.source


def test_reservation_equals_on_demand_only_where_a_source_says_so() -> None:
    for o in inputs.load_offers():
        if o.option is Option.RESERVATION and o.source.startswith("derived: "):
            # the rule cited: an ODCR, an Azure capacity reservation, a GCP reservation of on-demand machines
            assert any(page in o.source for page in ("capacity-reservations-pricing-billing",
                                                     "capacity-reservation-overview", "reservations-overview"))
            assert not o.machine_type.startswith(("a3-ultragpu-", "a4-highgpu-"))  # calendar-mode reservations


def test_the_unsourced_a4_reservation_rate_is_gone_and_named_as_a_gap() -> None:
    offers = inputs.load_offers()
    assert not [o for o in offers if o.machine_type == "a4-highgpu-8g"]
    assert any(g.machine_type == "a4-highgpu-8g" and g.option == "reservation" for g in coverage.gaps(offers))


def test_what_a_comparison_leaves_out_is_said_per_cloud_and_option() -> None:
    offers = inputs.load_offers()
    # every AWS option is priced for some offering now: nothing is left out of an AWS comparison entirely
    assert coverage.left_out(offers, ["aws"]) == []
    assert coverage.left_out(offers, ["azure"]) == ["Azure commit-1y", "Azure commit-3y"]
    assert "GCP flex-start" in coverage.left_out(offers, ["gcp"])


def test_every_azure_offering_is_priced_pay_as_you_go_from_the_pinned_snapshot() -> None:
    offers = [o for o in inputs.load_offers() if o.cloud.value == "azure"]
    assert coverage.priced_share(offers)[0] == 22
    assert not [g for g in coverage.gaps(offers) if g.cloud == "azure" and g.option in ("on_demand", "reservation")]
    assert all("anycloud-sh/catalog/blob/" in o.source for o in offers)


def test_a_spot_price_is_kept_only_below_the_on_demand_rate_of_its_offering() -> None:
    offers = inputs.load_offers()
    on_demand = {o.key[:3]: o.usd_per_gpu_hour for o in offers if o.option is Option.ON_DEMAND}
    spot = [o for o in offers if o.option is Option.SPOT]
    assert {o.cloud.value for o in spot} == {"aws", "azure", "gcp"}
    for o in spot:
        assert o.key[:3] not in on_demand or o.usd_per_gpu_hour < on_demand[o.key[:3]], o


def test_p5e_which_aws_sells_as_capacity_blocks_is_priced_as_one_in_every_region_the_catalogue_lists() -> None:
    offers = [o for o in inputs.load_offers() if o.machine_type == "p5e.48xlarge"]
    regions = {"ap-southeast-2", "ap-southeast-3", "eu-north-1", "eu-west-2", "sa-east-1", "us-east-2", "us-west-2"}
    assert {o.region for o in offers} == regions
    assert {o.option for o in offers} == {Option.CAPACITY_BLOCK}
    assert all(o.usd_per_gpu_hour == 5.97 for o in offers)  # the table's $47.76 an instance-hour / 8 GPUs
