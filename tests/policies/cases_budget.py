"""The budget policy priced from its own test table (``stack-monthly-budget.offers_csv`` pointing at
tests/policies/data/budget_offers.csv, made-up round prices labelled as such): each purchase option a pool can buy,
the pool's own region, prepaid options labelled as sunk cost, and the budget just below / at / above the estimate.

Expected figures are computed by hand from that file (USD per GPU-hour x 8 GPUs per node = per node-hour; x nodes x
730 h) and typed in; nothing is read from the code under test."""

from pulumi._types import input_type_py_to_pulumi_names
from pulumi_azure_native.containerservice import AgentPoolArgs

from tests.policies import keys as k
from tests.policies.helpers import case

TABLE = "tests/policies/data/budget_offers.csv"  # relative: read from the project root
BUDGET = "stack-monthly-budget"
BUCKETS = "; not counted: buckets (S3, GCS, Blob: billed by what they hold, which the stack does not say)"
OVER = "estimated ${total}/month (every pool at its max nodes, 730 h) exceeds the budget of ${limit}: {lines}" + BUCKETS
# The crafted GKE and AKS graphs hold a Lustre file system no sourced rate prices (capacity/data/prices/typed.json
# types none for Managed Lustre or Azure Managed Lustre): the total is a lower bound that names it, never $0 for it.
OVER_LUSTRE = ("estimated at least ${total}/month (every pool at its max nodes, 730 h, Lustre at its capacity) "
               "exceeds the budget of ${limit}: {lines}; Lustre not priced: {lustre}" + BUCKETS)
UNPRICED_LUSTRE = {
    "gke": "train-lustre (Managed Lustre 36 TiB, tier 1000, us-central1): unpriced: no sourced Managed Lustre rate "
           "for tier 1000 in us-central1 (capacity/data/prices/typed.json)",
    "aks": "train-lustre (Azure Managed Lustre 16 TiB, tier AMLFS-Durable-Premium-250, eastus): unpriced: no sourced "
           "Azure Managed Lustre rate for tier AMLFS-Durable-Premium-250 in eastus (capacity/data/prices/typed.json)"}


def config(limit: float, offers: str | None = TABLE) -> dict:
    return {BUDGET: {"monthly_budget_usd": limit, "offers_csv": offers}}


def over(total: str, limit: str, *lines: str, base: str = "dev") -> str:
    if base in UNPRICED_LUSTRE:
        return OVER_LUSTRE.format(total=total, limit=limit, lines="; ".join(lines), lustre=UNPRICED_LUSTRE[base])
    return OVER.format(total=total, limit=limit, lines="; ".join(lines))


# crafted GKE graph (tests/policies/crafted.py): one pool train-h100, 8 x a3-highgpu-8g in us-central1
# on-demand us-central1: $10/GPU-h x 8 = $80/h; x 8 nodes x 730 h = $467,200
GKE_OD = "train-h100: 8 x a3-highgpu-8g (on-demand) at $80.00/h = $467,200"
# the same pool in europe-west4: $20 x 8 = $160/h; x 8 x 730 = $934,400 (if the region were ignored, the
# alphabetically first region, europe-west4, would price the us-central1 pool and the at-budget case would fail)
GKE_EU = "train-h100: 8 x a3-highgpu-8g (on-demand) at $160.00/h = $934,400"
# spot: $4 x 8 = $32/h; x 8 x 730 = $186,880
GKE_SPOT = "train-h100: 8 x a3-highgpu-8g (spot) at $32.00/h = $186,880"
# reservation (prepaid, its own row, not the on-demand one): $12 x 8 = $96/h; x 8 x 730 = $560,640
GKE_RES = "train-h100: 8 x a3-highgpu-8g (reservation, sunk cost) at $96.00/h = $560,640"
# flex-start: no flex_start row, so the on-demand rate as an upper bound: $80/h; $467,200
GKE_FLEX = "train-h100: 8 x a3-highgpu-8g (flex-start (Dynamic Workload Scheduler)) at $80.00/h = $467,200"
# crafted AKS graph: train-h100, 4 x Standard_ND96isr_H100_v5 in eastus; on a capacity reservation group:
# $11 x 8 = $88/h; x 4 x 730 = $256,960
AKS_CRG = "train-h100: 4 x Standard_ND96isr_H100_v5 (capacity reservation, sunk cost) at $88.00/h = $256,960"
# dev stack (us-west-2): dev-l4-ng moved to p5.48xlarge on a capacity block, 4 nodes: $5 x 8 = $40/h (not the
# $7 x 8 = $56 on-demand row); x 4 x 730 = $116,800. dev-system-ng: 2 x m7i.xlarge at $0.2016/h, the list price in
# capacity/data/on_demand_prices.csv (https://aws.amazon.com/ec2/pricing/on-demand/): 2 x 0.2016 x 730 = $294.34.
# Total $117,094.34.
DEV_BLOCK = "dev-l4-ng: 4 x p5.48xlarge (EC2 Capacity Block for ML (prepaid), sunk cost) at $40.00/h = $116,800"
DEV_SYSTEM = "dev-system-ng: 2 x m7i.xlarge (on-demand) at $0.20/h = $294"
BLOCK = {"instanceTypes": ["p5.48xlarge"], "capacityType": "CAPACITY_BLOCK"}

EU = {"location": "europe-west4", "nodeLocations": ["europe-west4-a"]}
SPOT = {"nodeConfig.spot": True}
RESERVED = {"nodeConfig.reservationAffinity": {"consumeReservationType": "SPECIFIC_RESERVATION",
                                               "key": "compute.googleapis.com/reservation-name",
                                               "values": ["train-h100"]}}
FLEX = {"nodeConfig.flexStart": True}
# the AgentPool input's wire name as the installed SDK spells it (capacityReservationGroupID), never typed here
CRG_INPUT = input_type_py_to_pulumi_names(AgentPoolArgs)["capacity_reservation_group_id"]
CRG = {CRG_INPUT: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/"
                                     "capacityReservationGroups/crg-train"}
UNPRICED = ("cannot estimate the monthly cost: no price for a3-megagpu-8g (pool train-h100, on-demand, us-central1) "
            f"in {TABLE} or capacity/data/on_demand_prices.csv: add a row with its source (docs/capacity.md, Prices)")

CASES = [
    # on-demand at the pool's own region: below / at / above the estimate
    case(BUDGET, "gke", k.GKE_POOL, {}, on=None, config=config(467_201), label="on-demand-under-budget"),
    case(BUDGET, "gke", k.GKE_POOL, {}, on=None, config=config(467_200), label="on-demand-at-budget"),
    case(BUDGET, "gke", k.GKE_POOL, {}, over("467,200", "467,199", GKE_OD, base="gke"), on=None, config=config(467_199),
         label="on-demand-one-dollar-over"),
    # the pool's region decides the price
    case(BUDGET, "gke", k.GKE_POOL, EU, over("934,400", "467,200", GKE_EU, base="gke"), on=None, config=config(467_200),
         label="region-priced-by-its-own-row"),
    # spot pools at the spot row
    case(BUDGET, "gke", k.GKE_POOL, SPOT, on=None, config=config(186_880), label="spot-at-budget"),
    case(BUDGET, "gke", k.GKE_POOL, SPOT, over("186,880", "186,879", GKE_SPOT, base="gke"), on=None,
         config=config(186_879), label="spot-over"),
    # prepaid options: their own row, labelled as a sunk cost
    case(BUDGET, "gke", k.GKE_POOL, RESERVED, on=None, config=config(560_640), label="gcp-reservation-at-budget"),
    case(BUDGET, "gke", k.GKE_POOL, RESERVED, over("560,640", "560,639", GKE_RES, base="gke"), on=None,
         config=config(560_639), label="gcp-reservation-over"),
    case(BUDGET, "aks", k.AKS_POOL, CRG, over("256,960", "256,959", AKS_CRG, base="aks"), on=None,
         config=config(256_959), label="azure-capacity-reservation-over"),
    case(BUDGET, "dev", k.DEV_NG, BLOCK, on=None, config=config(117_095), label="aws-capacity-block-under-budget"),
    case(BUDGET, "dev", k.DEV_NG, BLOCK, over("117,094", "117,000", DEV_BLOCK, DEV_SYSTEM), on=None,
         config=config(117_000), label="aws-capacity-block-over"),
    # an option without a row: the upper bound it falls back to, labelled as the pool's option
    case(BUDGET, "gke", k.GKE_POOL, FLEX, over("467,200", "467,199", GKE_FLEX, base="gke"), on=None,
         config=config(467_199), label="flex-start-without-a-row"),
    # a machine type without any price: a clear message, never a false "over budget" from a $0 pool
    case(BUDGET, "gke", k.GKE_POOL, {"nodeConfig.machineType": "a3-megagpu-8g"}, UNPRICED, on=None,
         config=config(1), label="unpriced-machine"),
    # a configured table that is not there
    case(BUDGET, "gke", k.GKE_POOL, {}, "stack-monthly-budget.offers_csv 'tests/policies/data/missing.csv' is not a "
         "file (a relative path is read from the project root): point it at an offers file with the columns of "
         "capacity/data/offers.csv, or set it to null for the bundled snapshot", on=None,
         config=config(467_200, "tests/policies/data/missing.csv"), label="offers-file-missing"),
]
