"""Azure-specific ways a fleet description goes wrong, each refused with path, value, what is allowed, a fix."""

from __future__ import annotations

from typing import Any

import pytest

from components.errors import SpecError
from components.validate import resolve
from tests.conftest import example_fleet

CRG = ("/subscriptions/3f2a6b1c-9d4e-4f5a-8b7c-1d2e3f4a5b6c/resourceGroups/capacity/providers/"
       "Microsoft.Compute/capacityReservationGroups/nd-h100-eastus2")


def problems(fleet: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as caught:
        resolve(fleet, "stacks/Pulumi.azure-train.yaml")
    return [p.render() for p in caught.value.problems]


def cluster(fleet: dict[str, Any]) -> dict[str, Any]:
    return fleet["clusters"][0]


def pool(fleet: dict[str, Any], i: int = 0) -> dict[str, Any]:
    return cluster(fleet)["node_pools"][i]


def test_example_resolves() -> None:
    fleet = resolve(example_fleet("azure-train"))
    pools = {p.name: p for p in fleet.clusters[0].pools}
    assert pools["h100"].machine.name == "Standard_ND96isr_H100_v5"
    assert pools["evalspot"].machine.name == "Standard_NC40ads_H100_v5"


def test_infiniband_size_in_a_region_that_does_not_offer_it() -> None:
    fleet = example_fleet("azure-train")
    cluster(fleet)["region"] = "westus2"  # ND96isr_H100_v5 is not sold there
    found = problems(fleet)
    assert any("clusters[0].node_pools[0].machine_type: Standard_ND96isr_H100_v5 is not offered in westus2. "
               "Regions that offer it: eastus, eastus2, southcentralus, swedencentral, westus3." in p for p in found)


def test_spot_together_with_a_capacity_reservation_group() -> None:
    fleet = example_fleet("azure-train")
    pool(fleet, 1)["capacity"] = {"type": "spot", "id": CRG}
    assert problems(fleet) == [
        "clusters[0].node_pools[1].capacity.id: is set, but capacity type 'spot' "
        "takes no id. Remove it, or set type to one of reservation."]


def test_reservation_id_must_be_a_capacity_reservation_group() -> None:
    fleet = example_fleet("azure-train")
    pool(fleet)["capacity"]["id"] = "cr-0a1b2c3d4e5f60718"
    [found] = problems(fleet)
    assert "clusters[0].node_pools[0].capacity.id: 'cr-0a1b2c3d4e5f60718' is not a Azure reservation id." in found
    assert "capacityReservationGroups/<name>" in found


def test_reservation_without_a_group_id() -> None:
    fleet = example_fleet("azure-train")
    del pool(fleet)["capacity"]["id"]
    [found] = problems(fleet)
    assert "capacity.id: capacity type 'reservation' needs the reservation id." in found


@pytest.mark.parametrize(("tier", "capacity_tib", "allowed"), [
    (500, 6, "multiples of 4 from 4 to 128"),
    (250, 12, "multiples of 8 from 8 to 128"),
    (125, 144, "multiples of 16 from 16 to 128"),
    (40, 100, "multiples of 48 from 48 to 768"),
])
def test_lustre_size_invalid_for_its_sku(tier: int, capacity_tib: float, allowed: str) -> None:
    fleet = example_fleet("azure-train")
    cluster(fleet)["storage"]["lustre"].update(throughput_mbps_per_tib=tier, capacity_tib=capacity_tib)
    assert problems(fleet) == [
        f"clusters[0].storage.lustre.capacity_tib: {capacity_tib:g} TiB is not a "
        f"valid Azure Managed Lustre size for the {tier} MB/s/TiB tier. Allowed: {allowed} TiB."]


def test_lustre_tier_that_is_not_an_amlfs_sku() -> None:
    fleet = example_fleet("azure-train")
    cluster(fleet)["storage"]["lustre"]["throughput_mbps_per_tib"] = 1000
    [found] = problems(fleet)
    assert "lustre.throughput_mbps_per_tib: 1000 is not a Azure Managed Lustre throughput tier. " \
           "Allowed: 40, 125, 250, 500." in found


def test_pool_name_must_fit_aks_rules() -> None:
    fleet = example_fleet("azure-train")
    pool(fleet, 1)["name"] = "eval-spot-h100"
    [found] = problems(fleet)
    assert found == ("clusters[0].node_pools[1].name: 'eval-spot-h100' is not a "
                     "valid Azure node pool name: AKS node pool names are 1-12 lowercase letters and digits, "
                     "starting with a letter, no dashes. Rename it, e.g. to 'evalspoth100'.")


def test_gb200_cannot_share_a_subscription_with_the_infiniband_feature() -> None:
    fleet = example_fleet("azure-train")
    cluster(fleet).update(zones=["1"])
    cluster(fleet)["addons"]["kueue_teams"] = []
    cluster(fleet)["node_pools"][1] = {"name": "gb200", "machine_type": "Standard_ND128isr_NDR_GB200_v6",
                                       "nodes": {"max": 4}, "zone": "1"}
    assert problems(fleet) == [
        "clusters[0].node_pools[1].machine_type: Standard_ND128isr_NDR_GB200_v6 "
        "must not run in a Azure subscription with Microsoft.ContainerService/AKSInfinibandSupport registered, but "
        "clusters[0].node_pools[0] (Standard_ND96isr_H100_v5) needs it. Move the Standard_ND128isr_NDR_GB200_v6 "
        "pools to a stack of another subscription."]


def test_infiniband_off_needs_no_feature_so_gb200_may_join() -> None:
    fleet = example_fleet("azure-train")
    cluster(fleet).update(zones=["1"])
    cluster(fleet)["addons"]["kueue_teams"] = []
    pool(fleet)["interconnect"] = "off"
    cluster(fleet)["node_pools"][1] = {"name": "gb200", "machine_type": "Standard_ND128isr_NDR_GB200_v6",
                                       "nodes": {"max": 4}, "zone": "1"}
    resolve(fleet)


def test_subscription_id_form() -> None:
    fleet = example_fleet("azure-train")
    fleet["account"] = "my-subscription"
    [found] = problems(fleet)
    assert "account: 'my-subscription' is not a Azure subscription id." in found


def test_capacity_block_is_explained_on_azure() -> None:
    fleet = example_fleet("azure-train")
    pool(fleet)["capacity"] = {"type": "capacity_block", "id": "cr-0a1b2c3d4e5f60718"}
    found = problems(fleet)
    assert any("capacity.type: 'capacity_block' is not available on Azure: capacity blocks are an AWS product"
               in p for p in found)
