"""A100-80GB work is never planned on 40 GB machines; a plain family (A100) never reaches the planner.

The machine types of each variant are written out from the vendors' pages (not read from the catalogue):
- AWS https://aws.amazon.com/ec2/instance-types/p4/: p4d.24xlarge 8 x A100 40 GB, p4de.24xlarge 8 x A100 80 GB;
- GCP https://cloud.google.com/compute/docs/gpus#a100-gpus: a2-highgpu-* A100 40GB, a2-ultragpu-* A100 80GB;
- Azure https://learn.microsoft.com/en-us/azure/virtual-machines/sizes/gpu-accelerated/ndasra100v4-series
  (ND96asr_v4, A100 40 GB) and .../ndma100v4-series (ND96amsr_A100_v4, A100 80 GB).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plan_helpers import offer, quota, verify

from capacity import inputs, optimize, problem
from capacity.csvio import InputError
from capacity.schema import DemandRow, Market, OfferRow, Option, QuotaRow, hours

A100_40GB_MACHINES = {"p4d.24xlarge", "a2-highgpu-8g", "Standard_ND96asr_v4"}
A100_80GB_MACHINES = {"p4de.24xlarge", "a2-ultragpu-8g", "Standard_ND96amsr_A100_v4"}
JAN, FEB = "2026-01", "2026-02"


def solve(demand: list[DemandRow], offers: list[OfferRow], quotas: list[QuotaRow] | None = None,
          penalty: float = 1000.0) -> optimize.Solution:
    solution = optimize.solve(problem.build(demand, offers, quotas, penalty), gap=1e-9)
    verify(demand, offers, quotas, solution.plan, penalty)
    return solution


def machines_serving(solution: optimize.Solution, offers: list[OfferRow], gpu: str) -> set[str]:
    """Machine types the plan uses for rows of one GPU: the offers behind its usage lines and its commitments."""
    used = {(line.cloud, line.region, line.option) for line in solution.plan.lines if line.gpu == gpu}
    out = {o.machine_type for o in offers if (o.cloud, o.region, o.option) in used and o.gpu == gpu}
    return out | {c.machine_type for c in solution.plan.commitments if c.gpu == gpu}


def test_bundled_prices_80gb_demand_lands_only_on_80gb_machines() -> None:
    """With the bundled public prices every 40 GB A100 is cheaper than the 80 GB one in the same region, so a
    planner that matched on the family would pick it."""
    offers = [o for o in inputs.load_offers() if o.machine_type in A100_40GB_MACHINES | A100_80GB_MACHINES]
    sold = {o.machine_type for o in offers}
    assert sold & A100_40GB_MACHINES and sold & A100_80GB_MACHINES
    teams = (("finetune", "A100-80GB", False), ("eval", "A100-40GB", True))
    demand = [DemandRow(month=m, team=team, gpu=gpu, gpu_hours=64 * hours(m), gang_gpus=8, spot_ok=spot)
              for m in (JAN, FEB) for team, gpu, spot in teams]
    solution = solve(demand, offers)
    big = machines_serving(solution, offers, "A100-80GB")
    assert big and big <= A100_80GB_MACHINES
    assert machines_serving(solution, offers, "A100-40GB") <= A100_40GB_MACHINES
    assert solution.plan.unmet_gpu_hours == pytest.approx(0)


def test_80gb_demand_with_only_40gb_offers_is_unmet_not_downgraded() -> None:
    offers = [offer("r1", Option.ON_DEMAND, 1.0, gpu="A100-40GB")]
    demand = [DemandRow(month=JAN, team="ft", gpu="A100-80GB", gpu_hours=800, gang_gpus=1, spot_ok=True)]
    plan = solve(demand, offers).plan
    assert plan.lines == [] and plan.commitments == []
    assert plan.unmet_gpu_hours == pytest.approx(800)
    assert plan.shortfall[0].reason == "no offer sells A100-80GB"


def test_a_family_row_built_by_hand_is_not_served_by_either_variant() -> None:
    """The loaders refuse 'A100' (test_input_files); a row built in code still never lands on a variant."""
    offers = [offer("r1", Option.ON_DEMAND, 1.0, gpu="A100-40GB"), offer("r1", Option.ON_DEMAND, 2.0, gpu="A100-80GB")]
    demand = [DemandRow(month=JAN, team="ft", gpu="A100", gpu_hours=100, gang_gpus=1, spot_ok=False)]
    plan = solve(demand, offers).plan
    assert plan.lines == [] and plan.unmet_gpu_hours == pytest.approx(100)


def test_the_demand_loader_refuses_a_family(tmp_path: Path) -> None:
    path = tmp_path / "demand.csv"
    path.write_text("month,team,gpu,gpu_hours,gang_gpus,spot_ok\n2026-01,ft,A100,100,8,false\n")
    with pytest.raises(InputError, match="'A100' is a GPU family, not a product"):
        inputs.load_demand(path)


Case = tuple[list[DemandRow], list[OfferRow], list[QuotaRow]]


@st.composite
def variant_markets(draw: st.DrawFn) -> Case:
    """Regions selling one or both variants, 40 GB always cheaper where both are sold, quotas that may be tight,
    and demand for both variants with random gangs and spot flags."""
    offers, quotas = [], []
    for region in [f"r{i}" for i in range(draw(st.integers(1, 3)))]:
        sold = draw(st.sampled_from([("A100-40GB",), ("A100-80GB",), ("A100-40GB", "A100-80GB")]))
        cheap = round(draw(st.floats(1.0, 4.0)), 3)
        for gpu in sold:
            od = cheap if gpu == "A100-40GB" else round(cheap * draw(st.floats(1.1, 2.0)), 3)
            offers.append(offer(region, Option.ON_DEMAND, od, gpu=gpu))
            if draw(st.booleans()):
                offers.append(offer(region, Option.SPOT, round(od * 0.4, 3), gpu=gpu))
            if draw(st.booleans()):
                offers.append(offer(region, Option.COMMIT_1Y, round(od * 0.6, 3), gpu=gpu))
            quotas.append(quota(region, Market.ON_DEMAND, draw(st.integers(0, 4)) * 8, gpu))
            quotas.append(quota(region, Market.SPOT, draw(st.integers(0, 2)) * 8, gpu))
    demand = []
    for month in (JAN, FEB):
        for team, gpu in (("ft", "A100-80GB"), ("ev", "A100-40GB")):
            if draw(st.booleans()):
                demand.append(DemandRow(month=month, team=team, gpu=gpu,
                                        gpu_hours=draw(st.integers(1, 40)) * hours(month),
                                        gang_gpus=draw(st.sampled_from([1, 8])), spot_ok=draw(st.booleans())))
    if not demand:
        demand.append(DemandRow(month=JAN, team="ft", gpu="A100-80GB", gpu_hours=hours(JAN), gang_gpus=1,
                                spot_ok=False))
    return demand, offers, quotas


@settings(max_examples=25, deadline=None)
@given(variant_markets())
def test_no_plan_serves_a_row_with_another_variant(case: Case) -> None:
    demand, offers, quotas = case
    solution = solve(demand, offers, quotas)
    wanted = {(d.month, d.team): d.gpu for d in demand}
    for line in solution.plan.lines:
        assert line.gpu == wanted[(line.month, line.team)]
        sellers = {o.gpu for o in offers if (o.region, o.option, o.gpu) == (line.region, line.option, line.gpu)}
        assert sellers == {line.gpu}
    for c in solution.plan.commitments:
        assert c.machine_type.startswith(c.gpu.lower())  # plan_helpers names machines after their product
