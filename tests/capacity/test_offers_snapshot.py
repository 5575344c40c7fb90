"""The bundled price snapshot and the offer checks: every row sourced, no invented ratio, rebuilt from the price
digests and the typed facts, agreeing with the catalogue and with what each cloud sells."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from capacity import inputs
from capacity.csvio import InputError
from capacity.inputs import sold_options
from capacity.prices import refresh
from capacity.prices.digest_gcp import PIN
from capacity.schema import Option
from components.catalog import Cloud
from gpufleet.review import cost

HEADER = "cloud,region,machine_type,gpu,gpus_per_node,option,usd_per_gpu_hour,source,as_of\n"


def test_the_snapshot_is_what_refresh_makes_of_the_digests_and_typed_facts() -> None:
    assert refresh.refresh() == inputs.load_offers()


def test_no_row_is_an_invented_ratio() -> None:
    for o in inputs.load_offers():
        assert not re.search(r"\bx \d*\.\d+|ratio", o.source), o.source
        # derived: a documented billing rule (a reservation billed at the on-demand rate) applied to a sourced price
        if o.source.startswith("derived: "):
            assert o.option is Option.RESERVATION and "https://" in o.source, o
        from_digest = f"pricing-cost-calculator/blob/{PIN}/pricing.yml" in o.source
        assert from_digest == (o.cloud is Cloud.GCP and not o.source.startswith("typed from")), o


def test_a_capacity_block_is_priced_from_the_dated_table_where_it_lists_one() -> None:
    # the Capacity Blocks table scraped 2026-07-22 (capacity/data/prices/aws_capacity_blocks.csv): p5.48xlarge in
    # us-east-1 at $41.528 an instance-hour, 5.6% above the $39.33 of the table in force until 2025-01-01
    offer = cost.Prices.load().price("aws", "us-east-1", "p5.48xlarge", "capacity_block")
    assert offer is not None and offer.usd_per_node_hour == pytest.approx(41.528)
    assert "ec2-capacity-blocks-for-ml-pricing-json/blob/" in offer.source and "2026-07-22" in offer.source


def test_a_capacity_block_in_a_region_the_table_does_not_list_names_the_region_it_is_priced_from() -> None:
    # the table lists no p5.48xlarge block in ca-central-1: the price table takes the first region that has one
    # (ap-northeast-1, $37.76) and its source says so, rather than leaving the pool unpriced
    offer = cost.Prices.load().price("aws", "ca-central-1", "p5.48xlarge", "capacity_block")
    assert offer is not None and offer.usd_per_node_hour == pytest.approx(37.76)
    assert offer.source.endswith("(ap-northeast-1, capacity_block, 2026-07-22)")


def test_an_offer_the_catalogue_does_not_offer_is_refused_or_dropped_with_the_flag(tmp_path: Path) -> None:
    # H200 v5 is offered in eastus2 and swedencentral, not eastus (components/data/offerings.csv)
    path = tmp_path / "offers.csv"
    path.write_text(HEADER + "azure,eastus,Standard_ND96isr_H200_v5,H200,8,on_demand,10.5,x,2025-06-01\n"
                    "azure,eastus2,Standard_ND96isr_H200_v5,H200,8,on_demand,10.5,x,2025-06-01\n")
    with pytest.raises(InputError, match=r"row 2, column region: 'eastus' does not offer Standard_ND96isr_H200_v5"):
        inputs.load_offers(path)
    warnings: list[str] = []
    rows = inputs.load_offers(path, warnings)
    assert [r.region for r in rows] == ["eastus2"]
    assert len(warnings) == 1 and "eastus" in warnings[0]
    assert warnings[0].endswith("if the cloud sells it there. Dropped.")  # the flag is not offered to one who used it


@pytest.mark.parametrize(("cloud", "machine", "option"), [
    (Cloud.GCP, "a4-highgpu-8g", Option.ON_DEMAND),  # reservations, flex-start and spot only
    (Cloud.GCP, "a3-ultragpu-8g", Option.ON_DEMAND),
    (Cloud.GCP, "a3-highgpu-8g", Option.CAPACITY_BLOCK),  # an AWS product
    (Cloud.AZURE, "Standard_ND96isr_H100_v5", Option.FLEX_START),
    (Cloud.AWS, "g6.xlarge", Option.CAPACITY_BLOCK),  # capacity blocks sell P-family machines only
])
def test_an_option_the_cloud_does_not_sell_is_refused(tmp_path: Path, cloud: Cloud, machine: str,
                                                      option: Option) -> None:
    assert option not in sold_options(cloud, machine)
    from components import catalog

    m = catalog.by_name(cloud, machine)
    region = sorted(catalog.regions(cloud, machine))[0]
    path = tmp_path / "offers.csv"
    path.write_text(HEADER + f"{cloud.value},{region},{machine},{m.gpu},{m.gpus},{option.value},5,x,2025-06-01\n")
    with pytest.raises(InputError, match=f"'{option.value}' is not sold for"):
        inputs.load_offers(path)


def test_what_is_sold_where() -> None:
    assert Option.CAPACITY_BLOCK in sold_options(Cloud.AWS, "p5.48xlarge")
    assert Option.FLEX_START in sold_options(Cloud.GCP, "a4-highgpu-8g")
    assert Option.RESERVATION in sold_options(Cloud.AZURE, "Standard_ND96isr_H100_v5")
    assert Option.COMMIT_1Y in sold_options(Cloud.GCP, "a4-highgpu-8g")  # CUDs apply to reservations
