"""Every GPU offering of the catalogue has a price per option it sells, or a stated reason; no row claims to be a
captured API response.

The issue asks for >= 95% of offerings priced from cited sources. Measured on the bundled snapshot: 531 of 551
(96.4%; 487, 88.4%, before SkyPilot's AWS catalogue priced g5 in eu-south-2 and eu-west-3 and g6e in
ap-northeast-3, ap-south-1 and me-central-1, and A3 Ultra spot was typed for four more regions): AWS 438 of 449
(no pinned dataset prices g6e in ap-south-2 or p6-b200 in ap-south-2, eu-north-1 and eu-west-3), GCP 71 of 80
(A4 everywhere, A3 Ultra in us-east5 and us-south1, A3 Mega in us-central1 and us-west1), Azure 22 of 22. The
floor below holds that share so it cannot fall, and every offering left out is named with its reason
(capacity/prices/coverage.py)."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest

from capacity import inputs
from capacity.prices import coverage, digest_aws_vms
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
    assert priced >= 531 and priced / every >= 0.95


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


def _digest(name: str) -> list[dict[str, str]]:
    with (Path(coverage.__file__).parents[1] / "data" / "prices" / name).open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_skypilots_aws_catalogue_prices_only_what_the_vantage_data_lacks_at_one_uplift_per_family_and_region() -> None:
    """aws_vms.csv (digest_aws_vms.py) adds on-demand rows only where aws_instances.csv has none, and each added
    region charges every size of a family the same multiple of its us-east-1 rate in aws_instances.csv (AWS prices a
    family's sizes in proportion within a region): a mistyped or misread digit breaks the proportion."""
    primary = {(r["machine_type"], r["region"]): float(r["on_demand"]) for r in _digest("aws_instances.csv")}
    added = _digest("aws_vms.csv")
    assert added and not {(r["machine_type"], r["region"]) for r in added} & set(primary)
    uplift: dict[tuple[str, str], list[float]] = {}
    for r in added:
        family = r["machine_type"].split(".")[0]
        uplift.setdefault((family, r["region"]), []).append(float(r["on_demand"]) / primary[r["machine_type"],
                                                                                            "us-east-1"])
    assert {k for k, v in uplift.items() if len(v) == 8} == {k for k in uplift if k[0] in ("g5", "g6e")}
    for key, ratios in uplift.items():
        assert max(ratios) / min(ratios) - 1 < 1e-4, (key, ratios)
        assert 1 < min(ratios) < 1.6, (key, ratios)  # dearer than us-east-1, as every region outside the US is


def test_the_skypilot_rows_cite_their_pinned_file_and_date() -> None:
    rows = [o for o in inputs.load_offers() if "anycloud-sh/catalog/blob/" in o.source and o.cloud.value == "aws"]
    assert {o.option for o in rows} == {Option.ON_DEMAND, Option.RESERVATION}
    assert {o.as_of for o in rows} == {"2026-04-02"}
    assert all(f"/blob/{digest_aws_vms.PIN}/aws/vms.csv" in o.source for o in rows)
    assert len({o.key[:3] for o in rows}) == len(_digest("aws_vms.csv")) == 41  # 40 new offerings; p6-b200 in
    # ap-south-1 had only its capacity-block rate before


def test_a_region_whose_zones_disagree_on_the_on_demand_price_is_refused(tmp_path: Path) -> None:
    header = "InstanceType,Price,SpotPrice,Region,AvailabilityZone\n"
    same = header + "g5.xlarge,1.277,0.76,eu-west-3,euw3-az1\ng5.xlarge,1.277,,eu-west-3,euw3-az2\n"
    assert digest_aws_vms.on_demand(csv.DictReader(io.StringIO(same))) == {("g5.xlarge", "eu-west-3"): 1.277}
    split = header + "g5.xlarge,1.277,0.76,eu-west-3,euw3-az1\ng5.xlarge,1.3,,eu-west-3,euw3-az2\n"
    with pytest.raises(ValueError, match=re.escape("g5.xlarge in eu-west-3 has two on-demand prices, 1.277 and 1.3")):
        digest_aws_vms.on_demand(csv.DictReader(io.StringIO(split)))


def test_each_typed_a3_ultra_row_is_the_per_gpu_figure_its_source_quotes() -> None:
    """The typed rows (capacity/data/prices/typed.json) quote the snapshot's per-GPU figure and multiply by 8: the row
    priced per GPU-hour must be that figure, so a mistyped product cannot hide behind a right quote."""
    typed = [o for o in inputs.load_offers() if o.source.startswith("typed from https://huggingface.co/")]
    assert {o.region for o in typed if o.option is Option.SPOT} == {
        "us-central1", "us-east4", "us-west1", "europe-west1", "europe-west4"}
    for o in typed:
        quoted = re.search(r"\$([0-9.]+) per GPU-hour x 8", o.source)
        assert quoted and o.gpus_per_node == 8 and o.usd_per_gpu_hour == pytest.approx(float(quoted.group(1))), o
