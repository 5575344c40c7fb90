"""Hand-made mutation testing: plant realistic bugs one at a time and see whether the tests notice.

Not part of `make test` (it runs pytest once or twice per mutation). Each mutation replaces one exact snippet of one
source file (it must occur exactly once) in a scratch copy of the repository, then runs the test files that cover
that code, first WITHOUT the test modules issue 19 added ("before"), then, only if the bug survived, the new
modules too ("after"). Killed = pytest failed (or errored, or timed out); survived = it passed.

    python benchmarks/mutations.py [--only SUBSTRING] [--out mutations.md]

Prints a table (mutation, before, after) and the kill rates; docs: /work/notes/issue-19.md.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NEW = ["tests/invariants", "tests/components/test_validate_boundaries.py", "tests/policies/test_policy_boundaries.py",
       "tests/test_pinned_facts.py", "tests/capacity/test_planner_claims.py"]
VALIDATE = ["tests/components/test_validate.py", "tests/components/gcp/test_gke_validation.py",
            "tests/components/azure/test_azure_validation.py", "tests/components/test_catalog.py"]
POLICIES = ["tests/policies/test_policy_verdicts.py"]
CAPACITY = ["tests/capacity/test_planning_semantics.py", "tests/capacity/test_planner_optimality.py",
            "tests/capacity/test_forecast_and_reconcile.py"]
AWS = ["tests/components/aws"]
GCP = ["tests/components/gcp"]
K8S = ["tests/components/k8s"]
DIFF = ["tests/gpufleet/test_diff_units.py"]
# what each group of "after" runs adds: the new modules that cover it (kept narrow to stay fast)
AFTER = {"validate": ["tests/components/test_validate_boundaries.py"],
         "policies": ["tests/policies/test_policy_boundaries.py"],
         "capacity": ["tests/test_pinned_facts.py", "tests/capacity/test_planner_claims.py"],
         "aws": ["tests/invariants/test_fleet_invariants.py::test_reservation_backed_efa_pool_keeps_its_cluster_placement_group",  # noqa: E501
                 "tests/invariants/test_fleet_invariants.py::test_every_catalogue_machine_previews_in_one_fleet"],
         "gcp": ["tests/invariants/test_fleet_invariants.py::test_multi_zone_rdma_pools_each_get_their_zone_roce_network",  # noqa: E501
                 "tests/invariants/test_fleet_invariants.py::test_every_catalogue_machine_previews_in_one_fleet"],
         "k8s": ["tests/invariants/test_fleet_invariants.py::test_reservation_backed_efa_pool_keeps_its_cluster_placement_group",  # noqa: E501
                 "tests/invariants/test_fleet_invariants.py::test_multi_zone_rdma_pools_each_get_their_zone_roce_network"],
         "diff": ["tests/test_pinned_facts.py"]}
GROUP_TESTS = {"validate": VALIDATE, "policies": POLICIES, "capacity": CAPACITY, "aws": AWS, "gcp": GCP, "k8s": K8S,
               "diff": DIFF}


@dataclass(frozen=True)
class Mutation:
    group: str
    path: str
    old: str
    new: str
    what: str


def _in(group: str, path: str, *changes: tuple[str, str, str]) -> list[Mutation]:
    """The mutations of one file: (exact snippet, its replacement, what the planted bug is)."""
    return [Mutation(group, path, old, new, what) for old, new, what in changes]


MUTATIONS = [
    # --- components/validate.py and capabilities ------------------------------------------------------------------
    *_in("validate", "components/validate.py",
         ("if net.prefixlen == 0:", "if net.prefixlen == 0 and net.version == 4:", "::/0 allowed"),
         ("if nodes.min > nodes.max:", "if nodes.min > nodes.max + 1:", "min > max off by one"),
         ("not nodes.min <= nodes.desired <= nodes.max", "not nodes.min <= nodes.desired", "desired above max allowed"),
         ("not nodes.min <= nodes.desired <= nodes.max",
          "not nodes.min < nodes.desired <= nodes.max", "desired == min refused"),
         ("pool.nodes.max > caps.max_compact_nodes",
          "pool.nodes.max >= caps.max_compact_nodes", "compact limit off by one"),
         ("pool.zone is None and len(c.zones) > 1",
          "pool.zone is None and len(c.zones) > 2", "compact multi-zone check at 3 zones"),
         ("total > supply[gpu]", "total > supply[gpu] + 1", "kueue quota off by one"),
         ("supply.get(machine.gpu, 0) + pool.nodes.max * machine.gpus",
          "supply.get(machine.gpu, 0) + pool.nodes.max * 8", "kueue supply assumes 8 GPUs per node"),
         ("if cap.type in caps.capacity_needs_id and not cap.id:", "if False:", "reservation id not required"),
         ("elif cap.max_usd_per_hour is not None and not caps.spot_price_cap:",
          "elif False:", "GCP spot price cap accepted"),
         ('match.groupdict().get("zone") and match["zone"] != zone', "False", "reservation zone not checked"),
         ("(pool.nodes.min or pool.nodes.desired)", "pool.nodes.min", "flex-start desired not checked"),
         ('if c.endpoint == "private" and c.public_access_cidrs:', "if False:", "private endpoint with CIDRs accepted"),
         ("if c.kubernetes_version not in caps.kubernetes_versions:", "if False:", "any kubernetes version"),
         ("if pool.zone and pool.zone not in c.zones:", "if False:", "pool zone outside cluster"),
         ('if pool.interconnect == "required" and machine.fabric is Fabric.NONE:',
          "if False:", "interconnect required without fabric"),
         ("if cap.block and not (caps.reservation_blocks and cap.type is CapacityType.RESERVATION):",
          "if cap.block and not caps.reservation_blocks:", "block allowed on GCP spot")),
    *_in("validate", "components/capabilities.py",
         ('kubernetes_versions=("1.31", "1.32", "1.33", "1.34"),\n        capacity_types={CapacityType.ON_DEMAND: "ON_DEMAND"',  # noqa: E501
          'kubernetes_versions=("1.30", "1.31", "1.32", "1.33", "1.34"),\n        capacity_types={CapacityType.ON_DEMAND: "ON_DEMAND"',  # noqa: E501
          "EKS accepts 1.30"),
         ("max_compact_nodes=1500,", "max_compact_nodes=1000,", "GKE compact limit 1000"),
         ('account_pattern=r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$",',
          'account_pattern=r"^[a-z][-a-z0-9]{4,29}[a-z0-9]$",', "31-char GCP project"),
         ('pool_name_pattern=r"^[a-z][a-z0-9]{0,11}$",',
          'pool_name_pattern=r"^[a-z][a-z0-9]{0,12}$",', "13-char AKS pool name"),
         ("250: LustreSizing(8, 8, 128), 500: LustreSizing(4, 4, 128)",
          "250: LustreSizing(8, 8, 128), 500: LustreSizing(4, 4, 132)", "AMLFS max 132"),
         ("lustre_tiers={1000: LustreSizing(9, 9, 1530, then_step_tib=72, then_max_tib=10008),",
          "lustre_tiers={1000: LustreSizing(9, 9, 1530, then_step_tib=36, then_max_tib=10008),",
          "Managed Lustre coarse step 36")),
    *_in("validate", "components/spec.py",
         ("disk_gib: int = Field(default=500, ge=50, le=16384)",
          "disk_gib: int = Field(default=500, ge=50, le=16385)", "disk 16385 accepted"),
         ("monthly_budget_usd: float = Field(gt=0)", "monthly_budget_usd: float = Field(ge=0)", "budget 0 accepted")),
    # --- policies -------------------------------------------------------------------------------------------------
    *_in("policies", "policies/security.py",
         ("if not cidrs or OPEN in cidrs:", "if not cidrs:", "EKS 0.0.0.0/0 via CIDR list"),
         ("if not blocks or OPEN in blocks:", "if not blocks:", "GKE 0.0.0.0/0 via authorized networks"),
         ("if not ranges or OPEN in ranges:", "if not ranges:", "AKS 0.0.0.0/0 via authorized ranges"),
         ('in ("aws:kms", "aws:kms:dsse") and default.get("kmsMasterKeyId"):',
          'in ("aws:kms", "aws:kms:dsse"):', "S3 aws:kms without customer key"),
         ('if hops is not None and int(hops) > int(config["max_hop_limit"]):',
          'if hops is not None and int(hops) > int(config["max_hop_limit"]) + 1:', "hop limit off by one"),
         ("if _tls_rank(version) < _tls_rank(minimum):",
          'if _tls_rank(version) < _tls_rank(minimum) and version != "TLS1_1":', "TLS1_1 accepted"),
         ('if get(r.props, "enableHttpsTrafficOnly") is False:', "if False:", "plain HTTP accepted"),
         ('get(s, "Condition.Bool.aws:SecureTransport") in ("false", False)',
          'get(s, "Condition.Bool.aws:SecureTransport") is not None', "Deny on SecureTransport true accepted"),
         ('and ("*" in resources or not resources)', 'and ("*" in resources)', "wildcard without Resource accepted")),
    *_in("policies", "policies/reliability.py",
         ('elif (down := _int(get(r.props, "updateConfig.maxUnavailable", 1), 1)) > limit:',
          'elif (down := _int(get(r.props, "updateConfig.maxUnavailable", 1), 1)) > limit + 1:',
          "EKS maxUnavailable off by one"),
         ("or surge + down > limit:", "or surge > limit:", "GKE maxUnavailable ignored"),
         ('if get(r.props, "upgradeSettings.strategy", "SURGE") != "SURGE" or ', "if ", "GKE blue-green accepted"),
         ("_int(surge, 99) + down > limit", "_int(surge, 99) > limit", "AKS maxUnavailable ignored"),
         ("if pool is None or not pool.is_gpu or pool.spot:",
          "if pool is None or not pool.is_gpu:", "spot pools not exempt")),
    *_in("policies", "policies/cost.py",
         ('if total > int(config["max_gpus"]):', 'if total > int(config["max_gpus"]) + 1:', "GPU cap off by one"),
         ('pool_id not in allowed and pool_id.split("/")[-1] not in allowed',
          "pool_id not in allowed", "spot bare pool name not accepted")),
    *_in("policies", "policies/gpu.py",
         ("if not pool.wants_interconnect or pool.max_nodes < 2:",
          "if not pool.wants_interconnect or pool.max_nodes < 3:", "placement only from 3 nodes"),
         ('if get(template.props, "instanceMarketOptions.marketType") == "capacity-block":',
          'if template.props.get("capacityReservationSpecification"):', "reservations skip placement")),
    # --- capacity -------------------------------------------------------------------------------------------------
    *_in("capacity", "capacity/schema.py",
         ("return calendar.monthrange(year, mon)[1] * 24", "return 730", "730-hour months in the planner"),
         ("return calendar.monthrange(year, mon)[1] * 24",
          "return min(calendar.monthrange(year, mon)[1], 30) * 24", "31-day months as 30"),
         ("HOURS_3Y = 26280", "HOURS_3Y = 26208", "3-year term 1,092 days"),
         ("_TERM_MONTHS = {Option.COMMIT_1Y: 12, Option.COMMIT_3Y: 36,",
          "_TERM_MONTHS = {Option.COMMIT_1Y: 12, Option.COMMIT_3Y: 24,", "3-year term 24 months"),
         ("index = int(month[:4]) * 12 + int(month[5:7]) - 1 + n",
          "index = int(month[:4]) * 12 + int(month[5:7]) + n", "add_months off by one")),
    *_in("capacity", "capacity/problem.py",
         ("DEFAULT_PENALTY_USD_PER_GPU_HOUR = 1000.0", "DEFAULT_PENALTY_USD_PER_GPU_HOUR = 100.0", "penalty 100")),
    *_in("capacity", "capacity/optimize.py",
         ('status = "optimal" if rel_gap <= gap + 1e-12 else', 'status = "optimal" if True else', "always optimal"),
         ("rel_gap = 0.0 if objective <= 0 else max(0.0, (objective - bound) / abs(objective))",
          "rel_gap = 0.0", "gap always 0")),
    # --- components/aws, gcp, k8s ---------------------------------------------------------------------------------
    *_in("aws", "components/aws/nodegroup.py",
         ("if not pool.compact or pool.capacity is CapacityType.CAPACITY_BLOCK:",
          "if not pool.compact or pool.capacity in (CapacityType.CAPACITY_BLOCK, CapacityType.RESERVATION):",
          "reservation EFA pool loses its placement group"),
         ('"desired_size": nodes.initial}', '"desired_size": nodes.min}', "desired ignored"),
         ("for card in range(machine.efa_interfaces)]",
          "for card in range(min(machine.efa_interfaces, 16))]", "EFA capped at 16"),
         ('return {CapacityType.SPOT: "SPOT", CapacityType.CAPACITY_BLOCK: "CAPACITY_BLOCK"}.get(capacity, "ON_DEMAND")',  # noqa: E501
          'return {CapacityType.SPOT: "SPOT"}.get(capacity, "ON_DEMAND")',
          "capacity block runs ON_DEMAND")),
    *_in("gcp", "components/gcp/network.py",
         ("zones = sorted({p.zone for p in rdma_pools})",
          "zones = sorted({p.zone for p in rdma_pools})[:1]", "one RoCE VPC for every zone"),
         ("roce = self.rdma[pool.zone]", "roce = next(iter(self.rdma.values()))", "pool attaches first zone's RoCE"),
         ("ip_cidr_range=str(GPU_SUBNETS[RDMA_BLOCK + index * 8 + j])",
          "ip_cidr_range=str(GPU_SUBNETS[RDMA_BLOCK + j])", "RoCE subnets overlap across zones")),
    *_in("k8s", "components/k8s/kueue.py",
         ('amounts = {"cpu": str(int(nodes * pool.machine.vcpus))',
          'amounts = {"cpu": str(int(gpus * pool.machine.vcpus / 8))', "CPU quota assumes 8 GPUs per node"),
         ('"memory": f"{int(nodes * pool.machine.memory_gib)}Gi"',
          '"memory": f"{int(nodes * pool.machine.memory_gib)}G"', "memory quota in GB"),
         ("amounts[resource] = str(int(nodes * per_node(pool)))",
          "amounts[resource] = str(int(per_node(pool)))", "EFA quota per node, not per team"),
         ("take = min(wanted, free[pool.name])", "take = wanted", "quota overfills the first pool")),
    # --- gpufleet -------------------------------------------------------------------------------------------------
    *_in("diff", "capacity/prices/table.py", ("HOURS_PER_MONTH = 730", "HOURS_PER_MONTH = 720", "PR month 720 h")),
    *_in("diff", "gpufleet/review/cost.py",
         ("return (self.usd_per_node_hour or 0.0) * nodes * HOURS_PER_MONTH",
          "return (self.usd_per_node_hour or 0.0) * HOURS_PER_MONTH", "cost ignores node count")),
]


def run(copy: Path, tests: list[str], timeout: int) -> str:
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", *tests]
    try:
        done = subprocess.run(cmd, cwd=copy, capture_output=True, text=True, timeout=timeout,
                              env={**__import__("os").environ, "PYTHONPATH": str(copy)})
    except subprocess.TimeoutExpired:
        return "killed (timeout)"
    if done.returncode != 0:  # say why, so a kill by a broken environment is not taken for a test's verdict
        print("  " + "\n  ".join((done.stdout + done.stderr).strip().splitlines()[-3:]), file=sys.stderr, flush=True)
    return "survived" if done.returncode == 0 else "killed"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="run mutations whose description contains this")
    parser.add_argument("--out", type=Path, default=None, help="also write the Markdown table here")
    parser.add_argument("--timeout", type=int, default=900)
    parser.add_argument("--shard", default="1/1", help="k/n: run every n-th mutation starting at the k-th")
    parser.add_argument("--start", type=int, default=1, help="skip the mutations before this number")
    parser.add_argument("--numbers", default="", help="comma-separated mutation numbers to run (default: all)")
    args = parser.parse_args()
    numbers = {int(x) for x in args.numbers.split(",") if x.strip()}
    k, n = (int(x) for x in args.shard.split("/"))
    chosen = [(i, m) for i, m in enumerate(MUTATIONS, 1)
              if args.only in m.what and i >= args.start and (i - k) % n == 0 and (not numbers or i in numbers)]
    with tempfile.TemporaryDirectory(prefix="gpufleet-mut-") as tmp:
        copy = Path(tmp) / "repo"
        shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".venv", ".git", ".hypothesis", "__pycache__",
                                                                  ".pytest_cache", ".ruff_cache"))
        rows = []
        for i, m in chosen:
            path = copy / m.path
            original = path.read_text()
            if original.count(m.old) != 1:
                rows.append((i, m, f"invalid ({original.count(m.old)} matches)", ""))
                print(f"[{i}/{len(chosen)}] {m.what}: snippet matches {original.count(m.old)} times", flush=True)
                continue
            path.write_text(original.replace(m.old, m.new))
            started = time.perf_counter()
            try:
                before = run(copy, GROUP_TESTS[m.group], args.timeout)
                # the older tests already passed: only the new modules can still kill it
                after = before if before != "survived" else run(copy, AFTER[m.group], args.timeout)
            finally:
                path.write_text(original)
            rows.append((i, m, before, after))
            if args.out:  # progressively, so a long run interrupted still leaves its rows
                with args.out.open("a") as fh:
                    fh.write(f"| {i} | {m.path} | {m.what} | {before} | {after} |\n")
            print(f"[{i}/{len(chosen)}] {m.path}: {m.what}: before {before}, after {after} "
                  f"({time.perf_counter() - started:.0f} s)", flush=True)
    valid = [r for r in rows if not r[2].startswith("invalid")]
    killed_before = sum(r[2].startswith("killed") for r in valid)
    killed_after = sum(r[3].startswith("killed") for r in valid)
    lines = ["| # | file | mutation | before | after |", "|---|---|---|---|---|"]
    lines += [f"| {i} | {m.path} | {m.what} | {b} | {a} |" for i, m, b, a in rows]
    lines += ["", f"valid mutations: {len(valid)}; killed before: {killed_before} "
              f"({100 * killed_before / max(1, len(valid)):.0f}%); killed after: {killed_after} "
              f"({100 * killed_after / max(1, len(valid)):.0f}%)"]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")  # the whole table replaces the progressive rows


if __name__ == "__main__":
    main()
