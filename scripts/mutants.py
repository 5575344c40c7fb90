"""Mutation testing with cosmic-ray over the modules that decide money, health and claims (docs/mutation-testing.md).

    python scripts/mutants.py [--minutes 20] [--group NAME]... [--fresh]

Each group pairs modules with the tests that judge them. A run copies this checkout to a scratch directory (cosmic-ray
edits the files it mutates on disk, so never here), starts or resumes one cosmic-ray session per group under
.mutants/ (a session starts over when its modules change; its survivors are tried again when its tests change),
checks that each group's tests pass unmutated (their time sets the group's per-mutant timeout), then tests pending
mutants in cosmic-ray's random order, one group after another, until the budget is spent. It prints the survivors,
each with its diff, and the kill rate so far per group. Not part of `make test`: one mutant is one pytest run.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from cosmic_ray.mutating import mutate_and_test
from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import TestOutcome, WorkItem, WorkResult

ROOT = Path(__file__).resolve().parent.parent
STATE = ROOT / ".mutants"
BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Group:
    name: str
    modules: tuple[str, ...]
    tests: tuple[str, ...]  # the quickest, most pointed first: pytest stops at the first failure


GROUPS = (
    Group("planner", ("capacity/optimize.py", "capacity/check.py"),
          ("tests/capacity/test_planner_honesty.py", "tests/capacity/test_checker_rules.py",
           "tests/capacity/test_planner_claims.py", "tests/capacity/test_planner_optimality.py")),
    Group("forecast", ("capacity/forecast.py",),
          ("tests/capacity/test_forecast_quantiles.py", "tests/capacity/test_forecast_backtest.py",
           "tests/capacity/test_forecast_and_reconcile.py",
           "tests/capacity/test_forecast_coverage.py")),
    Group("finance", ("capacity/finance/model.py", "capacity/finance/budget.py", "capacity/finance/headline.py"),
          ("tests/capacity/test_finance_budget_signs.py", "tests/capacity/test_finance_headline.py")),
    Group("review", ("gpufleet/review/cost.py", "gpufleet/review/risk.py", "gpufleet/review/replacements.py"),
          ("tests/gpufleet/test_replacement_rules.py", "tests/gpufleet/test_pool_cost_hidden.py",
           "tests/gpufleet/test_diff_units.py",
           "tests/gpufleet/test_cost_prices.py", "tests/gpufleet/test_provider_rules.py")),
    Group("policies", ("policies/reliability.py", "policies/gpu.py", "policies/cost.py"),
          ("tests/policies/test_policy_boundaries.py", "tests/policies/test_policy_verdicts.py")),
    Group("healthgate", ("components/k8s/healthgate.py", "components/k8s/data/allreduce.py"),
          ("tests/components/k8s/test_gate_quarantine.py",
           "tests/components/k8s/test_upstream_installers.py::test_tcpxo_health_gate_carries_the_rxdm_sidecar_and_"
           "annotations", "tests/components/k8s/test_gate_busbw_metric.py",
           "tests/components/k8s/test_gate_allreduce.py")),
)
# Operators left out: swaps no plausible bug makes (bit shifts, bitwise, power, modulo, identity against order
# comparisons, inversion) and the ones that rename or delete names (mostly crashes). What stays: + - * /, every
# order and equality comparison, not / and / or, True / False, numbers +-1, break / continue, empty loops,
# exception types.
EXCLUDE = (r"core/ReplaceBinaryOperator_.*(FloorDiv|Mod|Pow|RShift|LShift|BitOr|BitAnd|BitXor)",
           r"core/ReplaceComparisonOperator_(Is|IsNot)_(Eq|NotEq|Lt|LtE|Gt|GtE)$",
           r"core/ReplaceComparisonOperator_(Eq|NotEq|Lt|LtE|Gt|GtE)_(Is|IsNot)$",
           r"core/ReplaceUnaryOperator_.*Invert", r"core/VariableReplacer", r"core/VariableInserter",
           r"core/RemoveDecorator")


def pytest_command(group: Group) -> str:
    return f"{BIN / 'python'} -m pytest -x -q -n 0 -p no:randomly --no-header {' '.join(group.tests)}"


def digest(paths: tuple[str, ...]) -> str:
    """Of the files (a test given as file::name counts as its file)."""
    return hashlib.sha256(b"".join((ROOT / p.split("::")[0]).read_bytes() for p in paths)).hexdigest()


def config(group: Group) -> str:
    """The group's cosmic-ray config (TOML), for `cosmic-ray init` and its filters."""
    modules = ", ".join(f'"{m}"' for m in group.modules)
    excluded = ", ".join(f"'{e}'" for e in EXCLUDE)
    return (f'[cosmic-ray]\nmodule-path = [{modules}]\ntimeout = 600.0\nexcluded-modules = []\n'
            f'test-command = "{pytest_command(group)}"\n\n[cosmic-ray.distributor]\nname = "local"\n\n'
            f"[cosmic-ray.filters.operators-filter]\nexclude-operators = [{excluded}]\n")


def session(group: Group, copy: Path, fresh: bool) -> Path:
    """The group's session, made anew when its modules changed (or asked); survivors again when its tests did."""
    db, cfg = STATE / f"{group.name}.sqlite", STATE / f"{group.name}.toml"
    marks = {kind: STATE / f"{group.name}.{kind}.sha256" for kind in ("modules", "tests")}
    now = {"modules": digest(group.modules), "tests": digest(group.tests)}
    cfg.write_text(config(group))
    if fresh or not db.exists() or not marks["modules"].exists() or marks["modules"].read_text() != now["modules"]:
        db.unlink(missing_ok=True)
        for command in (["cosmic-ray", "init", str(cfg), str(db)], ["cr-filter-operators", str(db), str(cfg)],
                        ["cr-filter-pragma", str(db)]):
            subprocess.run([str(BIN / command[0]), *command[1:]], cwd=copy, check=True, capture_output=True)
    elif not marks["tests"].exists() or marks["tests"].read_text() != now["tests"]:
        with sqlite3.connect(db) as sql:  # cosmic-ray's own table: a result removed is a mutant pending again
            sql.execute("DELETE FROM work_results WHERE test_outcome = ?", (TestOutcome.SURVIVED.value,))
    for kind, text in now.items():
        marks[kind].write_text(text)
    return db


def baseline(group: Group, copy: Path, tree: str) -> float:
    """Seconds the group's tests take unmutated; they must pass, or no mutant of the group means anything. Run
    again only when any file of the checkout changed (``tree``) since they last passed."""
    mark = STATE / f"{group.name}.baseline"
    if mark.exists() and mark.read_text().split()[0] == tree:
        return float(mark.read_text().split()[1])
    started = time.perf_counter()
    done = subprocess.run(pytest_command(group).split(), cwd=copy, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{group.name}: its tests fail unmutated; fix them first:\n{done.stdout[-3000:]}")
    seconds = time.perf_counter() - started
    mark.write_text(f"{tree} {seconds:.1f}")
    return seconds


def line(item: WorkItem, result: WorkResult) -> str:
    m = item.mutations[0]
    changed = [d for d in (result.diff or "").splitlines() if d[:1] in "+-" and d[:3] not in ("+++", "---")]
    return f"  {m.module_path}:{m.start_pos[0]} {m.operator_name.removeprefix('core/')}  " + " / ".join(
        " ".join(d.split()) for d in changed)


def report(names: list[str]) -> None:
    total = {"killed": 0, "survived": 0}
    for name in names:
        with use_db(str(STATE / f"{name}.sqlite"), WorkDB.Mode.open) as db:
            done = [(i, r) for i, r in db.completed_work_items if r.test_outcome is not None]
            pending = db.num_work_items - db.num_results
        killed = sum(r.is_killed for _, r in done)
        survivors = [(i, r) for i, r in done if r.test_outcome is TestOutcome.SURVIVED]
        tested = killed + len(survivors)
        total["killed"] += killed
        total["survived"] += len(survivors)
        rate = f"{100 * killed / tested:.0f}%" if tested else "-"
        print(f"{name}: {tested} tested, {killed} killed ({rate}), {len(survivors)} survived, {pending} pending")
        for item, result in sorted(survivors, key=lambda s: (str(s[0].mutations[0].module_path),
                                                             s[0].mutations[0].start_pos)):
            print(line(item, result))
    tested = total["killed"] + total["survived"]
    if tested:
        print(f"all groups: {tested} tested, kill rate {100 * total['killed'] / tested:.1f}%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=20.0, help="budget of this run (default 20)")
    parser.add_argument("--group", action="append", choices=[g.name for g in GROUPS], help="only these groups")
    parser.add_argument("--fresh", action="store_true", help="start the chosen groups' sessions over")
    parser.add_argument("--report", action="store_true", help="only print the results so far")
    args = parser.parse_args()
    groups = [g for g in GROUPS if not args.group or g.name in args.group]
    STATE.mkdir(exist_ok=True)
    if args.report:
        report([g.name for g in groups if (STATE / f"{g.name}.sqlite").exists()])
        return
    deadline = time.monotonic() + 60 * args.minutes
    with tempfile.TemporaryDirectory(prefix="gpufleet-mutants-") as tmp:
        copy = Path(tmp)
        files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                               text=True, check=True).stdout.split()
        tree = hashlib.sha256()
        for name in files:
            if (ROOT / name).is_file():
                (copy / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, copy / name)
                if not name.startswith(("scripts/", "docs/")):  # what no test reads
                    tree.update(name.encode() + b"\0" + (ROOT / name).read_bytes())
        os.chdir(copy)  # cosmic-ray mutates module paths relative to the working directory
        queues: list[tuple[Group, Path, float, list[WorkItem]]] = []
        for group in groups:
            db = session(group, copy, args.fresh)
            seconds = baseline(group, copy, tree.hexdigest())
            with use_db(str(db), WorkDB.Mode.open) as work:
                pending = list(work.pending_work_items)
            print(f"{group.name}: tests pass unmutated in {seconds:.0f} s; {len(pending)} mutants pending", flush=True)
            queues.append((group, db, 3 * seconds + 60, pending))
        while time.monotonic() < deadline and any(q[3] for q in queues):
            for group, db, timeout, pending in queues:
                if not pending or time.monotonic() >= deadline:
                    continue
                item = pending.pop()
                result = mutate_and_test(item.mutations, pytest_command(group), timeout)
                with use_db(str(db), WorkDB.Mode.open) as work:
                    work.set_result(item.job_id, result)
                print(f"{group.name}: {(result.test_outcome or result.worker_outcome).value}{line(item, result)}",
                      flush=True)
    report([g.name for g in groups])


if __name__ == "__main__":
    main()
