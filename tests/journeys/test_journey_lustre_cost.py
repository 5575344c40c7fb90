"""Journey: a platform engineer grows aws-train's Lustre to 2,304 TiB (2.3 PB, meant as GiB) and CI runs `gpufleet
preview` and `gpufleet pr`. The monthly cost moves by exactly what the sourced rate says, the size is flagged as far
beyond what the stack's 160 GPUs could use, and a budget the change breaks blocks the PR with the Lustre line in its
first line. Where no rate is sourced (the stack's own 1000 MB/s/TiB tier: capacity/data/prices/typed.json
lustre.not_sourced says what was searched on 2026-12-02), the file system is named as unpriced and the change is
unknown: never $0. That is what the shipped stack's 4.8 -> 2,400 TiB change shows today; a rate row for the tier is
all it takes for the same change to move the cost by capacity delta x rate (shown with a FAKE row).

aws-train's pools use EFA, so its file system is EFA-enabled and sized in its tier's step (FSx for Lustre User
Guide, getting-started.html): 38.4 TiB at 125 MB/s/TiB, 4.8 TiB at 1000. 2,304 TiB is 60 of the one and 480 of the
other (2,400 TiB, 62.5 steps of 38.4, is refused by validation).

The one sourced Lustre rate (capacity/data/prices/typed.json): FSx for Lustre PERSISTENT_2 SSD at 125 MB/s/TiB in
us-east-1, $0.145 per GB-month, typed from https://c3x.dev/resources/aws/aws_fsx_lustre_file_system/ (which quotes
it; "1.2 TB at 125 MB/s/TiB is ~$174/month" = 1,200 x $0.145) on 2026-12-02. FSx bills its storageCapacity figure
(GiB, AWS counting 1.2 TiB as 1,200): 38.4 TiB = 38,400, 2,304 TiB = 2,304,000. By hand:
(2,304,000 - 38,400) x 0.145 = 2,265,600 x 0.145 = $328,512.

The PR's pool prices are a FAKE offers file (round numbers), the same on both sides, so the delta is the Lustre's."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.cli import app
from tests.gpufleet.gitrepo import example_stacks_branch

FAKE_OFFERS = ("cloud,region,machine_type,gpu,gpus_per_node,option,usd_per_gpu_hour,source,as_of\n"
               "aws,us-east-1,p5.48xlarge,H100,8,capacity_block,5.0,FAKE,2026-11-01\n"
               "aws,us-east-1,p4d.24xlarge,A100-40GB,8,on_demand,3.0,FAKE,2026-11-01\n")
RATE = 0.145  # USD per GB-month, the cited rate above
DELTA = (2_304_000 - 38_400) * RATE  # $328,512


def _lustre(fleet: dict) -> dict:
    return fleet["clusters"][0]["storage"]["lustre"]


def _sourced_tier(fleet: dict) -> None:
    """main: aws-train at the tier a sourced rate prices (its smallest EFA-enabled size), under an $800,000 budget."""
    _lustre(fleet)["throughput_mbps_per_tib"] = 125
    _lustre(fleet)["capacity_tib"] = 38.4
    fleet["monthly_budget_usd"] = 800_000


def _grow(fleet: dict) -> None:
    _lustre(fleet)["capacity_tib"] = 2304


def _preview_cost(stacks: Path) -> dict:
    out = CliRunner().invoke(app, ["preview", "--stack", "aws-train", "--stacks-dir", str(stacks), "--format", "json",
                                   "--no-policies"])
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)["cost"]


def _main_stacks(repo: Path, into: Path) -> Path:
    """aws-train as main has it (the branch's edit is in the working tree)."""
    into.mkdir()
    text = subprocess.run(["git", "-C", str(repo), "show", "main:stacks/Pulumi.aws-train.yaml"], check=True,
                          capture_output=True, text=True).stdout
    (into / "Pulumi.aws-train.yaml").write_text(text)
    return into


@pytest.fixture
def offers(tmp_path: Path) -> Path:
    path = tmp_path / "offers.csv"
    path.write_text(FAKE_OFFERS)
    return path


def test_growing_lustre_moves_the_cost_by_the_sourced_rate_and_blocks_the_budget(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, offers: Path) -> None:
    repo = example_stacks_branch(tmp_path, "aws-train", _grow, base=_sourced_tier)
    monkeypatch.chdir(repo)

    # 1. preview, head and base: the cost line moves by exactly the Lustre's delta
    head = _preview_cost(repo / "stacks")
    base = _preview_cost(_main_stacks(repo, tmp_path / "main-stacks"))
    [fs] = head["storage"]
    assert (fs["tier"], fs["capacity"], fs["capacity_tib"], fs["usd_per_unit_month"]) == (
        "PERSISTENT_2/SSD/125", 2_304_000, 2304, RATE)
    assert fs["monthly_usd"] == pytest.approx(2_304_000 * RATE) and "typed from https://c3x.dev/" in fs["source"]
    assert head["monthly_usd"] - base["monthly_usd"] == pytest.approx(DELTA, abs=0.01)
    assert head["buckets_not_counted"] == ["train-checkpoints-bucket (S3)"]  # excluded, and said so by name

    # 2. the PR's JSON: the stack's monthly cost delta is the same figure, exact (nothing unpriced on either side)
    out = CliRunner().invoke(app, ["pr", "--base", "main", "--no-policies", "--offers", str(offers),
                                   "--format", "json"])
    [stack] = json.loads(out.stdout)["stacks"]
    assert stack["cost"]["delta_usd"] == pytest.approx(DELTA, abs=0.01) and stack["cost"]["delta_bound"] == "exact"
    assert [s["monthly_usd"] for s in stack["cost"]["storage_after"]] == [pytest.approx(334_080)]

    # 3. the PR comment with the policy pack, its budget priced from the same FAKE offers: the budget the change
    # breaks blocks it, first line, with the Lustre line; the delta reads +328,512 USD; the size advisory says
    # 14.4 TiB per GPU (2,304 TiB / 160 GPUs). By hand: p5 $5 x 8 x 16 x 730 = 467,200; p4d $3 x 8 x 4 x 730 =
    # 70,080; 4 x m7i.2xlarge at its list price $0.4032/h (capacity/data/on_demand_prices.csv) x 730 = 1,177.344;
    # Lustre 334,080 after, 5,568 before: $872,537 after, $544,025 before (within $800,000, so the violation is new).
    config = tmp_path / "policy.json"
    config.write_text(json.dumps({"stack-monthly-budget": {"offers_csv": str(offers)}}))
    out = CliRunner().invoke(app, ["pr", "--base", "main", "--offers", str(offers), "--policy-pack-config",
                                   str(config)])
    assert out.exit_code == 3, out.output
    first = out.stdout.splitlines()[1]
    assert first.startswith("## Blocked: stack aws-train: new mandatory violation of stack-monthly-budget: "
                            "estimated $872,537/month (every pool at its max nodes, 730 h, Lustre at its capacity) "
                            "exceeds the budget of $800,000: ")
    assert "train-lustre-fsx: 2,304,000 GB x $0.145/GB-month (tier PERSISTENT_2/SSD/125) = $334,080" in first
    assert "(+328,512 USD)" in out.stdout
    assert "| after | `train-lustre-fsx` | PERSISTENT_2/SSD/125 | 2,304 | 334,080 |" in out.stdout
    assert "lustre-fits-the-gpus" in out.stdout and "2,304 TiB for 160 GPUs (14.4 TiB per GPU)" in out.stdout


def test_a_tier_without_a_sourced_rate_is_unpriced_and_the_change_unknown(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, offers: Path) -> None:
    """aws-train as shipped: FSx PERSISTENT_2 at 1000 MB/s/TiB, which no source read here prices."""
    monkeypatch.chdir(example_stacks_branch(tmp_path, "aws-train", _grow))
    out = CliRunner().invoke(app, ["pr", "--base", "main", "--no-policies", "--offers", str(offers)])
    assert out.exit_code == 0, out.output  # unpriced storage does not block (an unpriced GPU pool does)
    assert "(change unknown)" in out.stdout  # the stack's cost line: not a $0 change
    assert out.stdout.splitlines()[1].startswith(
        "## Monthly cost change unknown: no price for train-lustre-fsx (FSx for Lustre 2,304 TiB, tier "
        "PERSISTENT_2/SSD/1000, us-east-1)")
    assert "| after | `train-lustre-fsx` | PERSISTENT_2/SSD/1000 | 2,304 | unpriced |" in out.stdout


def _shipped_to_2400(fleet: dict) -> None:
    """The done-when change: aws-train as shipped (4.8 TiB at 1000 MB/s/TiB) grown to 2,400 TiB, 500 EFA steps."""
    assert (_lustre(fleet)["capacity_tib"], _lustre(fleet)["throughput_mbps_per_tib"]) == (4.8, 1000)
    _lustre(fleet)["capacity_tib"] = 2400


def test_the_shipped_tier_grown_to_2400_tib_is_unknown_in_every_cost_line_not_another_tiers_rate(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, offers: Path) -> None:
    """aws-train's own tier (PERSISTENT_2 SSD at 1000 MB/s/TiB) has no sourced rate (typed.json lustre.not_sourced
    says what was searched): the preview, the budget verdict and the PR comment name the file system as unpriced
    at its size, and never price it at the 125 MB/s/TiB row that the same region does have."""
    repo = example_stacks_branch(tmp_path, "aws-train", _shipped_to_2400)
    monkeypatch.chdir(repo)
    [fs] = _preview_cost(repo / "stacks")["storage"]
    assert (fs["tier"], fs["capacity"], fs["capacity_tib"], fs["monthly_usd"], fs["usd_per_unit_month"]) == (
        "PERSISTENT_2/SSD/1000", 2_400_000, 2400, None, None)
    assert fs["source"].startswith("unpriced: no sourced FSx for Lustre rate for tier PERSISTENT_2/SSD/1000 in "
                                   "us-east-1")

    out = CliRunner().invoke(app, ["pr", "--base", "main", "--no-policies", "--offers", str(offers),
                                   "--format", "json"])
    [stack] = json.loads(out.stdout)["stacks"]
    assert stack["cost"]["delta_bound"] == "unknown"  # unpriced on both sides at different sizes: no figure
    assert [s["monthly_usd"] for s in stack["cost"]["storage_after"]] == [None]

    # the budget policy, its pools priced from the FAKE offers ($538,457, within $1,100,000): the storage it cannot
    # price does not block, and the comment's first line says what the change leaves unknown
    config = tmp_path / "policy.json"
    config.write_text(json.dumps({"stack-monthly-budget": {"offers_csv": str(offers)}}))
    out = CliRunner().invoke(app, ["pr", "--base", "main", "--offers", str(offers), "--policy-pack-config",
                                   str(config)])
    assert out.exit_code == 0, out.output
    assert out.stdout.splitlines()[1].startswith(
        "## Monthly cost change unknown: no price for train-lustre-fsx (FSx for Lustre 2,400 TiB, tier "
        "PERSISTENT_2/SSD/1000, us-east-1)")
    assert "$0" not in out.stdout.splitlines()[1]
    assert "lustre-fits-the-gpus" in out.stdout and "2,400 TiB for 160 GPUs (15 TiB per GPU)" in out.stdout


def test_a_rate_row_for_the_shipped_tier_is_all_it_takes_to_price_the_2400_tib_change(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a row for (aws, us-east-1, PERSISTENT_2/SSD/1000), here a FAKE round $0.5/GB-month since no source gives
    one, the preview's monthly cost moves by exactly the capacity delta x the rate: (2,400,000 - 4,800) GB x 0.5 =
    $1,197,600. The preview runs in this process, so the row is put in through capacity.prices.lustre.rates."""
    from capacity.prices import lustre

    fake = lustre.LustreRate("aws", "us-east-1", "PERSISTENT_2/SSD/1000", "GB-month", 0.5, "2026-12-02", "FAKE")
    monkeypatch.setattr(lustre, "rates", lambda path=lustre.TYPED: {(fake.cloud, fake.region, fake.tier): fake})
    repo = example_stacks_branch(tmp_path, "aws-train", _shipped_to_2400)
    monkeypatch.chdir(repo)
    head = _preview_cost(repo / "stacks")
    base = _preview_cost(_main_stacks(repo, tmp_path / "main-stacks"))
    assert [(s["capacity"], s["monthly_usd"]) for s in base["storage"]] == [(4_800, 2_400)]
    assert [(s["capacity"], s["monthly_usd"]) for s in head["storage"]] == [(2_400_000, 1_200_000)]
    assert head["monthly_usd"] - base["monthly_usd"] == pytest.approx((2_400_000 - 4_800) * 0.5, abs=0.01)
