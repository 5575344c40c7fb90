"""Storage in the budget and the Lustre size advisory, on the aws-train graph and the crafted GKE / AKS graphs.

The pools of aws-train are priced from tests/policies/data/lustre_offers.csv (made-up round prices, labelled as
such): p5.48xlarge capacity block $5/GPU-h x 8 = $40/h x 16 nodes x 730 h = $467,200; p4d.24xlarge on-demand
$3 x 8 = $24/h x 4 x 730 = $70,080; the system pool 4 x m7i.2xlarge at the list price in
capacity/data/on_demand_prices.csv ($0.4032/h, https://aws.amazon.com/ec2/pricing/on-demand/): 4 x 0.4032 x 730 =
$1,177.344.

The Lustre rate is the one sourced rate (capacity/data/prices/typed.json): FSx for Lustre PERSISTENT_2 SSD at
125 MB/s/TiB in us-east-1, $0.145 per GB-month (typed from https://c3x.dev/resources/aws/aws_fsx_lustre_file_system/,
which quotes it, on 2026-12-02). FSx bills its storageCapacity figure (GiB; 1.2 TiB is 1,200):
4,800 x 0.145 = $696; 2,400,000 x 0.145 = $348,000. Totals by hand: 467,200 + 70,080 + 1,177.344 + 696 =
$539,153.344; with 2,400 TiB, 467,200 + 70,080 + 1,177.344 + 348,000 = $886,457.344.

GPUs of aws-train at every pool's max nodes: 16 x 8 (p5) + 4 x 8 (p4d) = 160; the crafted GKE graph 8 x 8 = 64,
the crafted AKS graph 4 x 8 = 32."""

from tests.policies import keys as k
from tests.policies.helpers import case

TABLE = "tests/policies/data/lustre_offers.csv"
BUDGET = "stack-monthly-budget"
FITS = "lustre-fits-the-gpus"
AZURE_LUSTRE = "azure-native:storagecache:AmlFilesystem::train-lustre"
POOLS = ("train-a100-eval-ng: 4 x p4d.24xlarge (on-demand) at $24.00/h = $70,080; "
         "train-h100-ng: 16 x p5.48xlarge (EC2 Capacity Block for ML (prepaid), sunk cost) at $40.00/h = $467,200; "
         "train-system-ng: 4 x m7i.2xlarge (on-demand) at $0.40/h = $1,177")
BUCKETS = "not counted: buckets (S3, GCS, Blob: billed by what they hold, which the stack does not say)"
T125 = {"perUnitStorageThroughput": 125}
PB = {"perUnitStorageThroughput": 125, "storageCapacity": 2_400_000}  # 2,400 TiB as FSx counts it


def budget(limit: float) -> dict:
    return {BUDGET: {"monthly_budget_usd": limit, "offers_csv": TABLE}}


def fits(per_gpu: float) -> dict:
    return {FITS: {"max_tib_per_gpu": per_gpu}}


def over(total: str, limit: str, lustre: str) -> str:
    return (f"estimated ${total}/month (every pool at its max nodes, 730 h, Lustre at its capacity) exceeds the "
            f"budget of ${limit}: {POOLS}; {lustre}; {BUCKETS}")


# the case: 2,400 TiB (2.4 PB) meant as GiB (also the pack's crafted violation, tests/policies/
# test_policy_verdicts.py)
CRAFTED = [case(FITS, "aws-train", k.FSX, {"storageCapacity": 2_400_000},
                "FSx for Lustre train-lustre-fsx is 2,400 TiB for 160 GPUs (15 TiB per GPU), above "
                "lustre-fits-the-gpus.max_tib_per_gpu 10 TiB per GPU: a capacity meant in GiB written as TiB? Lustre "
                "bills every provisioned TiB whether it is read or not", label="2400-tib-meant-as-gib")]

CASES = [
    # the budget counts Lustre at its capacity x its tier's sourced rate: at / one dollar below the total
    case(BUDGET, "aws-train", k.FSX, T125, on=None, config=budget(539_154), label="lustre-priced-within"),
    case(BUDGET, "aws-train", k.FSX, T125, over("539,153", "539,153", "train-lustre-fsx: 4,800 GB x "
         "$0.145/GB-month (tier PERSISTENT_2/SSD/125) = $696"), on=None, config=budget(539_153),
         label="lustre-priced-over"),
    # 2.4 PB: the same stack, the same budget, now $347,304 over it
    case(BUDGET, "aws-train", k.FSX, PB, on=None, config=budget(886_458), label="lustre-2400-tib-within"),
    case(BUDGET, "aws-train", k.FSX, PB, over("886,457", "539,154", "train-lustre-fsx: 2,400,000 GB x "
         "$0.145/GB-month (tier PERSISTENT_2/SSD/125) = $348,000"), on=None, config=budget(539_154),
         label="lustre-2400-tib-over"),
    # a tier with no sourced rate (the stack's own 1000 MB/s/TiB): not $0, a lower bound that names it
    case(BUDGET, "aws-train", k.FSX, {"storageCapacity": 2_400_000},
         f"estimated at least $538,457/month (every pool at its max nodes, 730 h, Lustre at its capacity) exceeds the "
         f"budget of $1: {POOLS}; Lustre not priced: train-lustre-fsx (FSx for Lustre 2,400 TiB, tier "
         "PERSISTENT_2/SSD/1000, us-east-1): unpriced: no sourced FSx for Lustre rate for tier PERSISTENT_2/SSD/1000 "
         f"in us-east-1 (capacity/data/prices/typed.json); {BUCKETS}", on=None, config=budget(1),
         label="lustre-tier-unpriced"),
    # the size advisory: 10 TiB per GPU by default; aws-train has 160 GPUs, so 1,600 TiB is the line
    case(FITS, "aws-train", k.FSX, {"storageCapacity": 1_600_000}, label="at-the-default-limit"),
    case(FITS, "aws-train", k.FSX, {"storageCapacity": 1_600_001},
         "FSx for Lustre train-lustre-fsx is 1,600.001 TiB for 160 GPUs (10.000006 TiB per GPU), above "
         "lustre-fits-the-gpus.max_tib_per_gpu 10 TiB per GPU: a capacity meant in GiB written as TiB? Lustre bills "
         "every provisioned TiB whether it is read or not", label="just-above-the-default-limit"),
    *CRAFTED,
    # a configured limit, on GCP (capacityGib, 1,000 GiB a TiB) and Azure (storageCapacityTiB)
    case(FITS, "gke", k.GCP_LUSTRE, {}, config=fits(0.5625), label="gcp-at-a-configured-limit"),
    case(FITS, "gke", k.GCP_LUSTRE, {},
         "Managed Lustre train-lustre is 36 TiB for 64 GPUs (0.5625 TiB per GPU), above "
         "lustre-fits-the-gpus.max_tib_per_gpu 0.5 TiB per GPU: a capacity meant in GiB written as TiB? Lustre bills "
         "every provisioned TiB whether it is read or not", config=fits(0.5), label="gcp-above-a-configured-limit"),
    case(FITS, "aks", AZURE_LUSTRE, {}, config=fits(0.5), label="azure-at-a-configured-limit"),
    case(FITS, "aks", AZURE_LUSTRE, {"storageCapacityTiB": 17},
         "Azure Managed Lustre train-lustre is 17 TiB for 32 GPUs (0.53125 TiB per GPU), above "
         "lustre-fits-the-gpus.max_tib_per_gpu 0.5 TiB per GPU: a capacity meant in GiB written as TiB? Lustre bills "
         "every provisioned TiB whether it is read or not", config=fits(0.5), label="azure-above-a-configured-limit"),
    # a size the preview cannot see is not judged (it is unknown, not 0 TiB)
    case(FITS, "aws-train", k.FSX, {"storageCapacity": "[unknown]"}, label="size-unknown-until-apply"),
]
