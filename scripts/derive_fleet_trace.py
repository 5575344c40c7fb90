"""Derive the fleet simulator's public job trace from alibaba/clusterdata's cluster-trace-gpu-v2023.

Reads ``cluster-trace-gpu-v2023/csv/openb_pod_list_default.csv`` (8,152 pods of a production GPU cluster over
~149 days, the ATC'23 FGD paper's trace) from a git mirror with ``git show <commit>:<path>`` and writes the facts
the simulator needs, never the file, to capacity/data/traces/alibaba-gpu-v2023.json, with the repository, commit,
path and the date read:

  jobs: [arrival_s, qos, gpus, duration_s]   arrival = creation_time, duration = deletion_time - scheduled_time
                                             (seconds); qos is the pod's QoS class (LS, BE, Burstable, Guaranteed)

What is dropped, counted in the digest: pods without a GPU (num_gpu 0) and pods never scheduled (Pending: no
scheduled_time, so no duration). What the trace does not have, said in the digest: teams (the simulator maps QoS
classes to teams), gangs beyond one pod (num_gpu 1..8 of one pod), GPU models we sell (its nodes are P100, T4,
V100, A10 and undisclosed G1-G3), and ends for pods still running when it was cut (their deletion_time is the cut).
A GPU-sharing pod (gpu_milli < 1000) is counted as one whole GPU: Kueue quotas count nvidia.com/gpu whole.

    python scripts/derive_fleet_trace.py --mirror /work/.mirror/alibaba+clusterdata/repo
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPOSITORY = "https://github.com/alibaba/clusterdata"
PATH = "cluster-trace-gpu-v2023/csv/openb_pod_list_default.csv"
OUT = ROOT / "capacity" / "data" / "traces" / "alibaba-gpu-v2023.json"


def git(git_dir: Path, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(git_dir), *args], capture_output=True, text=True,
                          check=True).stdout


def derive(text: str) -> dict:
    jobs, no_gpu, never, running, shared = [], 0, 0, 0, 0
    for row in csv.DictReader(io.StringIO(text)):
        gpus = int(row["num_gpu"])
        if gpus == 0:
            no_gpu += 1
            continue
        if not row["scheduled_time"]:
            never += 1
            continue
        running += row["pod_phase"] == "Running"
        shared += gpus == 1 and int(row["gpu_milli"]) < 1000
        start, end = int(row["scheduled_time"]), int(row["deletion_time"])
        jobs.append([int(row["creation_time"]), row["qos"], gpus, max(end - start, 1)])
    jobs.sort(key=lambda j: j[0])
    return {"columns": ["arrival_s", "qos", "gpus", "duration_s"], "jobs": jobs,
            "dropped": {"no_gpu": no_gpu, "never_scheduled": never},
            "kept": {"jobs": len(jobs), "running_when_cut": running, "gpu_sharing_pods": shared}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirror", type=Path, required=True, help="a bare git mirror of alibaba/clusterdata")
    parser.add_argument("--ref", default="HEAD", help="commit or ref to read (default: the mirror's HEAD)")
    args = parser.parse_args(argv)
    commit = git(args.mirror, "rev-parse", f"{args.ref}^{{commit}}").strip()
    facts = derive(git(args.mirror, "show", f"{commit}:{PATH}"))
    path_commit = git(args.mirror, "log", "-1", "--format=%H %cs", commit, "--", PATH).split()
    facts = {"source": {"repository": REPOSITORY, "commit": commit, "path": PATH, "path_commit": path_commit[0],
                        "path_commit_date": path_commit[1], "read": dt.datetime.now(dt.UTC).date().isoformat(),
                        "paper": "https://www.usenix.org/conference/atc23/presentation/weng"}, **facts}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(facts, separators=(",", ":")) + "\n")
    print(f"{OUT.relative_to(ROOT)}: {facts['kept']['jobs']} jobs, dropped {facts['dropped']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
