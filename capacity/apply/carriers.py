"""Which kind of node pool carries each way the plan buys GPU-hours, per cloud, and what must be bought.

A commitment is a billing discount on AWS (Savings Plans) and Azure (reserved VM instances): the GPUs run
in ordinary on-demand pools and the purchase is made in the billing console. On GCP a GPU commitment
must be attached to a reservation, so it is carried by a reservation pool whose id arrives after purchase.
Capacity blocks, reservations and flex-start are capacity products of their own.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.spec import CapacityType

SAVINGS_PLANS = "https://docs.aws.amazon.com/savingsplans/latest/userguide/what-is-savings-plans.html"
AZURE_RESERVATIONS = ("https://learn.microsoft.com/azure/cost-management-billing/reservations/"
                      "save-compute-costs-reservations")
GCP_GPU_COMMITMENTS = "https://cloud.google.com/compute/docs/instances/reservations-with-commitments"

RESERVED = {CapacityType.RESERVATION, CapacityType.CAPACITY_BLOCK}  # prepaid: never shrunk without --allow-shrink


@dataclass(frozen=True)
class Carrier:
    capacity: CapacityType
    purchase: str | None = None  # what the user buys for it, if anything
    source: str = ""


_COMMIT = {
    "aws": Carrier(CapacityType.ON_DEMAND, "a Compute or EC2 Instance Savings Plan", SAVINGS_PLANS),
    "azure": Carrier(CapacityType.ON_DEMAND, "a reserved VM instance", AZURE_RESERVATIONS),
    "gcp": Carrier(CapacityType.RESERVATION, "a committed-use discount attached to a specific reservation",
                   GCP_GPU_COMMITMENTS),
}
_DIRECT = {
    "on_demand": Carrier(CapacityType.ON_DEMAND),
    "spot": Carrier(CapacityType.SPOT),
    "capacity_block": Carrier(CapacityType.CAPACITY_BLOCK, "an EC2 Capacity Block for ML"),
    "reservation": Carrier(CapacityType.RESERVATION, "a capacity reservation"),
    "flex_start": Carrier(CapacityType.FLEX_START),
}


def carrier(cloud: str, option: str) -> Carrier:
    """How ``option`` (a plan.csv option) is carried on ``cloud``."""
    if option.startswith("commit"):
        return _COMMIT[cloud]
    return _DIRECT.get(option, Carrier(CapacityType.ON_DEMAND))
