"""The fleet simulator: each dispatcher's semantics on scenarios computed by hand, and invariants on generated ones."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from capacity.dispatch import Tier
from capacity.fleetsim import fleet as simfleet
from capacity.fleetsim import metrics, traces
from capacity.fleetsim.engine import Simulation, simulate
from capacity.fleetsim.model import Dispatcher, Job, Policy, Pool, Worker
from capacity.prices.table import Prices
from stacks.config import load_stack_file, stack_file

H = 3600.0
ALL = Policy("all", Dispatcher.ALL_AT_ONCE)


def worker(name: str, gpus: int, tier: Tier = Tier.PREPAID, rate: float = 5.0, teams: tuple[str, ...] = ("t",),
           quota: int | None = None) -> Worker:
    return Worker(name, (Pool("p", "H100", tier, gpus, rate),), {(t, "p"): gpus if quota is None else quota
                                                                  for t in teams})


def job(i: int, at: float, gpus: int = 8, hours: float = 1.0, team: str = "t", spot_ok: bool = False) -> Job:
    return Job(i, at, team, "H100", gpus, hours * H, spot_ok)


def test_incremental_nominates_the_next_worker_after_a_five_minute_round() -> None:
    # a is full for an hour; b is free. Step 1 in the order [a, b]: the second job waits at a for one round
    # (300 s, incrementalDispatcherRoundTimeout), then b is nominated too and admits it at once.
    workers = [worker("a", 8), worker("b", 8)]
    run = simulate(workers, {"t": ["a", "b"]}, Policy("inc", Dispatcher.INCREMENTAL, "config", 1),
                   [job(0, 0), job(1, 10)])
    assert sorted(run.waits_s) == [0.0, 300.0]
    assert run.by_worker_gpu_s == {"a": 8 * H, "b": 8 * H}


def test_all_at_once_admits_where_there_is_room_at_once() -> None:
    workers = [worker("a", 8), worker("b", 8)]
    run = simulate(workers, {"t": ["a", "b"]}, ALL, [job(0, 0), job(1, 10)])
    assert sorted(run.waits_s) == [0.0, 0.0]


def test_a_step_of_three_reaches_the_fourth_worker_one_round_later() -> None:
    workers = [worker(n, 8) for n in "abcd"]
    jobs = [job(i, 0) for i in range(3)] + [job(3, 1)]
    run = simulate(workers, {"t": list("abcd")}, Policy("inc", Dispatcher.INCREMENTAL, "config", 3), jobs)
    assert sorted(run.waits_s) == [0.0, 0.0, 0.0, 300.0]  # nominated at 1 s; d joins at 301 s


def test_all_at_once_is_a_race_between_workers_with_room() -> None:
    workers = [worker("a", 8), worker("b", 8)]
    winners = {next(iter(simulate(workers, {"t": ["a", "b"]}, ALL, [job(0, 0)], seed=s).by_worker_gpu_s))
               for s in range(20)}
    assert winners == {"a", "b"}


def test_a_worker_admits_its_queue_best_effort_fifo() -> None:
    # 8 GPUs, 4 busy for an hour: the 8-GPU gang (at 1 s) waits, the 4-GPU job behind it (at 2 s) is admitted at
    # once; the gang runs when both are done, at 1 h + 2 s (waits listed in finish order)
    workers = [worker("a", 8)]
    run = simulate(workers, {"t": ["a"]}, ALL, [job(0, 0, 4), job(1, 1, 8), job(2, 2, 4)])
    assert run.waits_s == [0.0, 0.0, H + 1]


def test_the_teams_quota_holds_even_when_the_pool_is_free() -> None:
    workers = [worker("a", 16, quota=8)]
    run = simulate(workers, {"t": ["a"]}, ALL, [job(0, 0), job(1, 0)])
    assert sorted(run.waits_s) == [0.0, H]


def test_spot_only_for_work_that_may_run_there() -> None:
    workers = [worker("s", 8, Tier.SPOT)]
    run = simulate(workers, {"t": ["s"]}, ALL, [job(0, 0, spot_ok=True)])
    assert run.busy_gpu_s[Tier.SPOT] == 8 * H
    assert Simulation(workers, {"t": ["s"]}, ALL).fit(workers[0], job(1, 0)) is None


def test_evicted_jobs_come_back_and_lose_only_the_work_since_their_last_checkpoint() -> None:
    workers = [worker("s", 8, Tier.SPOT, rate=2.0), worker("p", 8, Tier.PREPAID)]
    jobs = [job(i, i * 60, hours=10, spot_ok=True) for i in range(6)]
    run = simulate(workers, {"t": ["s", "p"]}, ALL, jobs, seed=3, spot_interruptions_per_hour=0.5,
                   checkpoint_every_s=1800)
    assert run.evictions > 0 and len(run.waits_s) == 6
    assert run.lost_gpu_s <= run.evictions * 8 * 1800  # at most one checkpoint interval per eviction
    ran = sum(run.busy_gpu_s.values())
    assert abs(ran - (6 * 8 * 10 * H + run.lost_gpu_s)) < 1e-6  # the work, plus what was run again


@given(st.lists(st.tuples(st.integers(0, 20_000), st.sampled_from([1, 2, 4, 8]), st.integers(60, 20_000),
                          st.booleans()), min_size=1, max_size=40),
       st.sampled_from([ALL, Policy("inc", Dispatcher.INCREMENTAL, "config", 1)]))
def test_every_job_runs_once_and_no_work_is_made_up(raw: list[tuple[int, int, int, bool]], policy: Policy) -> None:
    jobs = [Job(i, float(at), "t", "H100", gpus, float(d), spot) for i, (at, gpus, d, spot) in
            enumerate(sorted(raw))]
    workers = [Worker("a", (Pool("od", "H100", Tier.ON_DEMAND, 8, 9.0),), {("t", "od"): 8}),
               Worker("b", (Pool("cb", "H100", Tier.PREPAID, 8, 5.0), Pool("s", "H100", Tier.SPOT, 8, 2.0)),
                      {("t", "cb"): 8, ("t", "s"): 8})]
    run = simulate(workers, {"t": ["b", "a"]}, policy, jobs)
    assert len(run.waits_s) == len(jobs) and min(run.waits_s) >= 0
    assert abs(sum(run.busy_gpu_s.values()) - sum(j.gpus * j.duration_s for j in jobs)) < 1e-6
    spent = (run.busy_gpu_s[Tier.ON_DEMAND] * 9.0 + run.busy_gpu_s[Tier.SPOT] * 2.0) / H
    assert abs(run.usage_usd - spent) < 1e-6


def test_summary_on_a_run_computed_by_hand() -> None:
    workers = [worker("cb", 8, Tier.PREPAID, rate=5.0), worker("od", 8, Tier.ON_DEMAND, rate=10.0)]
    run = simulate(workers, {"t": ["cb", "od"]}, Policy("plan", Dispatcher.INCREMENTAL, "plan", 1),
                   [job(0, 0, hours=2), job(1, 0, hours=1)])
    row = metrics.summarise(run, workers, horizon_s=2 * H)
    # job0 on cb for 2 h; job1 waits one round (5 min) then runs 1 h on od
    assert (row.wait_median_min, row.wait_p95_min) == (2.5, 5.0)  # median of [0, 5]; p95 by nearest rank
    assert row.prepaid_utilisation == 1.0
    assert row.on_demand_share == 8 / 24
    assert row.cost_usd == 8 * 5.0 * 2 + 8 * 10.0 * 1  # prepaid over the horizon + on-demand run
    assert row.gpu_utilisation == 24 / (16 + 8)


def test_percentile_is_the_nearest_rank() -> None:
    assert metrics.percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.95) == 10
    assert metrics.percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.9) == 9
    assert metrics.percentile([4], 0.5) == 4


def test_the_public_trace_digest_says_its_source_and_loads_every_job() -> None:
    digest = json.loads(traces.ALIBABA.read_text())
    assert digest["source"]["repository"] == "https://github.com/alibaba/clusterdata"
    assert digest["source"]["path"] == "cluster-trace-gpu-v2023/csv/openb_pod_list_default.csv"
    assert len(digest["source"]["commit"]) == 40
    jobs, _ = traces.alibaba({q: ("t", "H100", False) for q in ("LS", "BE", "Burstable", "Guaranteed")})
    assert len(jobs) == digest["kept"]["jobs"] == len(digest["jobs"])
    assert {j.gpus for j in jobs} <= {1, 2, 4, 8}  # one pod of up to 8 GPUs (README: num_gpu 0..8)
    assert all(j.duration_s > 0 for j in jobs)


def test_scaling_a_trace_to_a_load() -> None:
    jobs = traces.generated([traces.TeamLoad("t", "H100", False, 1.0, (8,), 2.0)], 500, seed=1)
    scaled = traces.scale_to_load(jobs, gpus=64, load=0.5)
    span_h = (scaled[-1].arrival_s - scaled[0].arrival_s) / H
    assert abs(traces.offered_gpu_hours(scaled) / (64 * span_h) - 0.5) < 1e-9
    assert [j.duration_s for j in scaled] == [j.duration_s for j in jobs]


def test_the_simulated_worker_has_the_quotas_its_clusterqueues_render() -> None:
    # stacks/Pulumi.aws-train.yaml: pretrain H100 128 (all of pool h100), research A100-40GB 24 with
    # borrowing_limit_gpus 8; one cohort per cluster: research may borrow 8 of pretrain's h100 quota, pretrain
    # (no limit) all 24 of research's a100-eval quota
    aws = simfleet.worker("aws-train/train", load_stack_file(stack_file("aws-train")).clusters[0], Prices.load())
    assert aws.quotas == {("pretrain", "h100"): 128, ("pretrain", "a100-eval"): 24,
                          ("research", "h100"): 8, ("research", "a100-eval"): 24}
    assert [(p.name, p.tier) for p in aws.pools] == [("h100", Tier.PREPAID), ("a100-eval", Tier.ON_DEMAND)]


def test_each_team_is_scaled_to_its_own_gpus() -> None:
    loads = [traces.TeamLoad("big", "H100", False, 0.5, (8,), 2.0), traces.TeamLoad("small", "H100", True, 0.5,
                                                                                     (1,), 1.0)]
    jobs = traces.per_team(traces.generated(loads, 400, seed=2), {"big": 128, "small": 8}, load=0.8)
    assert [j.id for j in jobs] == list(range(len(jobs)))
    for team, gpus in (("big", 128), ("small", 8)):
        mine = [j for j in jobs if j.team == team]
        span_h = (mine[-1].arrival_s - mine[0].arrival_s) / H
        assert abs(traces.offered_gpu_hours(mine) / (gpus * span_h) - 0.8) < 1e-9


def test_the_on_demand_what_if_adds_a_last_flavor_beside_each_prepaid_pool() -> None:
    stacks, prices = {"aws-train": load_stack_file(stack_file("aws-train"))}, Prices.load()
    [aws] = simfleet.with_on_demand_burst(stacks, prices, nodes=2)
    assert [(p.name, p.tier, p.gpus) for p in aws.pools][-1] == ("h100-burst", Tier.ON_DEMAND, 16)  # 2 x p5.48xlarge
    on_demand = prices.price("aws", "us-east-1", "p5.48xlarge", "on_demand")
    assert on_demand is not None and aws.pools[-1].usd_per_gpu_hour == on_demand.usd_per_node_hour / 8
    # the teams with quota in the capacity block (pretrain nominal, research by borrowing) get the burst flavor
    assert {t for t, p in aws.quotas if p == "h100-burst"} == {"pretrain", "research"}
