"""Crafted violations of the cost policies."""

import csv
import json
from pathlib import Path

from tests.policies import keys as k
from tests.policies.helpers import DROP, case


def _aws_gpu_regions() -> list[str]:
    """The AWS regions of components/data/offerings.csv (derived from moto's offering data), read as plain CSV."""
    with (Path(__file__).resolve().parents[2] / "components" / "data" / "offerings.csv").open(newline="") as fh:
        return sorted({r["region"] for r in csv.DictReader(fh) if r["cloud"] == "aws"})


# The dev stack (us-west-2) with its L4 pool moved to g6e.xlarge (L40S), priced from the bundled tables, figures by
# hand: the spot pool at the spot rate of capacity/data/prices/aws_spot_3y.csv (g6e.xlarge, us-west-2, spot_max
# $0.8851/h), the system pool at the on-demand list price in capacity/data/on_demand_prices.csv (m7i.xlarge
# $0.2016/h, citing https://aws.amazon.com/ec2/pricing/on-demand/):
# 4 x 0.8851 x 730 = 2,584.49; 2 x 0.2016 x 730 = 294.34; total 2,878.83.
OVER_BUDGET = ("estimated $2,879/month (every pool at its max nodes, 730 h) exceeds the budget of $2,000: "
               "dev-l4-ng: 4 x g6e.xlarge (spot) at $0.89/h = $2,584; "
               "dev-system-ng: 2 x m7i.xlarge (on-demand) at $0.20/h = $294; not counted: buckets (S3, GCS, Blob: "
               "billed by what they hold, which the stack does not say)")


ALLOWED = {"allowed-machine-types": {"allowed_machine_types": ["p5.48xlarge", "p4d.24xlarge", "m7i.2xlarge"]}}
NO_TEAM = json.dumps({"tags": {"cost-center": "cc-4100"}})

CASES = [
    case("allowed-machine-types", "aws-train", k.NG_H100, {"instanceTypes": ["p5e.48xlarge"]},
         "machine type 'p5e.48xlarge' is not in the allow-list ['p5.48xlarge', 'p4d.24xlarge', 'm7i.2xlarge']",
         config=ALLOWED),
    case("allowed-regions", "aws-train", k.AWS_PROVIDER, {"region": "cn-north-1"},
         "region 'cn-north-1' is not allowed; allowed: " + ", ".join(_aws_gpu_regions())),
    case("allowed-regions", "gke", k.GKE, {"location": "asia-northeast1"},
         "region 'asia-northeast1' is not allowed; allowed: europe-west1, europe-west4, us-central1, us-east1, "
         "us-east4, us-east5, us-south1, us-west1"),
    case("allowed-regions", "gke", k.GCP_LUSTRE, {"location": "us-east4-b"},
         "region 'us-east4' is not allowed; allowed: us-central1", label="configured allow-list",
         config={"allowed-regions": {"allowed_regions": ["us-central1"]}}),
    case("allowed-regions", "aks", k.AKS, {"location": "brazilsouth"},
         "region 'brazilsouth' is not allowed; allowed: eastus, eastus2, southcentralus, swedencentral, westus2, "
         "westus3"),
    case("stack-gpu-cap", "aws-train", k.NG_H100, {"scalingConfig.maxSize": 300},
         "the stack asks for up to 2,432 GPUs (every pool at its max nodes); the cap is 2,048", on=None),
    case("stack-gpu-cap", "gke", k.GKE_POOL, {"autoscaling.totalMaxNodeCount": 16},
         "the stack asks for up to 128 GPUs (every pool at its max nodes); the cap is 100", on=None,
         config={"stack-gpu-cap": {"max_gpus": 100}}, label="configured cap"),
    case("stack-monthly-budget", "dev", k.DEV_NG, {"instanceTypes": ["g6e.xlarge"]}, OVER_BUDGET, on=None,
         config={"stack-monthly-budget": {"monthly_budget_usd": 2000}}),
    case("stack-monthly-budget", "dev", k.DEV_NG, {}, "no monthly budget is known for this stack: set "
         "stack-monthly-budget.monthly_budget_usd in the policy pack config (gpufleet policy config --stack NAME "
         "writes it), or gpufleet:fleet.monthly_budget_usd in the stack config", on=None,
         config={"stack-monthly-budget": {"monthly_budget_usd": None}}, label="no budget"),
    case("spot-only-where-allowed", "aws-train", k.NG_A100, {"capacityType": "SPOT"},
         "pool train/a100-eval runs on spot, but the fleet spec does not ask for spot there (spot pools: none); "
         "preemption kills multi-node jobs"),
    case("spot-only-where-allowed", "aks", k.AKS_POOL, {"scaleSetPriority": "Spot"},
         "pool train/h100 runs on spot, but the fleet spec does not ask for spot there (spot pools: none); "
         "preemption kills multi-node jobs"),
    case("cost-tags-present", "aws-train", k.NG_H100, {"tags.cost-center": DROP},
         "missing cost tags cost-center: finance cannot allocate this resource's spend"),
    case("cost-tags-present", "aws-train", k.AWS_PROVIDER, {"defaultTags": NO_TEAM},
         "missing cost tags team: finance cannot allocate this resource's spend"),
    case("cost-tags-present", "gke", k.GCS, {"labels": {}},
         "missing cost tags team, cost-center: finance cannot allocate this resource's spend"),
    case("cost-tags-present", "aks", k.AKS_POOL, {"tags": DROP},
         "missing cost tags team, cost-center: finance cannot allocate this resource's spend"),
]
