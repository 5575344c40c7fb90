"""The worker order follows the plan: a plan that moves a team's prepaid capacity moves its first worker."""

from __future__ import annotations

from capacity.dispatch import Tier
from capacity.dispatch_plan import planned_prepaid, team_orders
from capacity.fleetsim.model import Pool, Worker
from capacity.schema import PlanLine

MONTH = "2027-01"  # 744 hours


def line(team: str, cloud: str, region: str, option: str, gpu_hours: float, spot_ok: bool = False) -> PlanLine:
    usd = 0.0 if option.startswith(("commit", "capacity", "reserv")) else gpu_hours * 2
    return PlanLine(month=MONTH, team=team, gpu="H100", cloud=cloud, region=region, option=option,
                    gpu_hours=gpu_hours, usd=usd, gang_gpus=8, spot_ok=spot_ok)


def worker(name: str, *pools: tuple[Tier, float]) -> Worker:
    built = tuple(Pool(f"p{i}", "H100", tier, 64, rate) for i, (tier, rate) in enumerate(pools))
    return Worker(name, built, {("t", p.name): 64 for p in built})


WORKERS = [worker("aws", (Tier.PREPAID, 5.0), (Tier.ON_DEMAND, 9.0)), worker("gcp", (Tier.PREPAID, 12.0)),
           worker("azure", (Tier.SPOT, 3.0), (Tier.ON_DEMAND, 11.0)), worker("aws-od", (Tier.ON_DEMAND, 9.5))]
SITES = {"aws": ("aws", "us-east-1"), "gcp": ("gcp", "us-central1"), "azure": ("azure", "eastus"),
         "aws-od": ("aws", "us-west-2")}


def test_prepaid_gpus_come_from_the_plans_prepaid_lines_at_the_workers_site() -> None:
    lines = [line("t", "gcp", "us-central1", "reservation", 64 * 744), line("t", "aws", "us-east-1", "capacity_block",
             16 * 744), line("t", "aws", "us-east-1", "on_demand", 100 * 744)]  # on-demand is not prepaid
    assert planned_prepaid(lines, MONTH, "t", "H100", SITES) == {"gcp": 64.0, "aws": 16.0}


def test_the_order_follows_the_plan() -> None:
    # plan A buys the team's capacity in GCP: GCP first though its rate is higher; plan B in AWS: AWS first
    a = [line("t", "gcp", "us-central1", "commit_1y", 64 * 744), line("t", "aws", "us-west-2", "on_demand", 744)]
    b = [line("t", "aws", "us-east-1", "capacity_block", 64 * 744), line("t", "aws", "us-west-2", "on_demand", 744)]
    assert team_orders(a, MONTH, WORKERS, SITES) == {("t", "H100"): ["gcp", "aws", "aws-od", "azure"]}
    assert team_orders(b, MONTH, WORKERS, SITES) == {("t", "H100"): ["aws", "gcp", "aws-od", "azure"]}


def test_spot_comes_before_on_demand_only_when_all_the_teams_work_may_use_it() -> None:
    spot = [line("t", "gcp", "us-central1", "reservation", 744, spot_ok=True)]
    mixed = [*spot, line("t", "aws", "us-west-2", "on_demand", 744, spot_ok=False)]
    assert team_orders(spot, MONTH, WORKERS, SITES)[("t", "H100")] == ["gcp", "aws", "azure", "aws-od"]
    # not spot_ok: azure's spot pool is left out; its on-demand pool ranks by its rate, after aws-od's
    assert team_orders(mixed, MONTH, WORKERS, SITES)[("t", "H100")] == ["gcp", "aws", "aws-od", "azure"]
