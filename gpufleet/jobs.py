"""Example training jobs generated from a fleet: for each job operator a cluster installs (``addons.operators``), an
8-node PyTorch job on one of its GPU pools, ready for ``kubectl create -f``: the pool's GPUs, fabric devices and
fabric wiring (``components.k8s.training``), the team's Lustre volume with checkpoints under its export path,
the team's queue label and a topology request, so Kueue admits it as one gang in one network domain.

``gpufleet jobs examples`` writes them; ``examples/jobs/<stack>/`` holds those of the bundled stacks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from components.fleet import Cluster, Pool
from components.k8s import upstream
from components.k8s.kueue import PRIORITIES, gpu_shares
from components.k8s.model import Obj
from components.k8s.operators import TRAINER_API, runtime_name
from components.k8s.training import Wiring, container, queue_label, template, topology_request, wiring
from components.spec import KueueTeam

NODES = 8
PORT = 29500
PRIORITY = PRIORITIES[1].name  # experiment: research work, preemptible by production training
SCRIPT = "/lustre/code/train.py"  # the user's training script; any path the pods can read


class JobsError(Exception):
    """A stack whose clusters cannot run the example (no operator, no pool or team big enough, no Lustre)."""


@dataclass(frozen=True)
class Target:
    """Where an example runs: a pool of the cluster, on behalf of a team whose quota holds the whole gang."""

    cluster: Cluster
    pool: Pool
    team: KueueTeam

    @property
    def gpus(self) -> int:
        return NODES * self.pool.machine.gpus

    def job(self, kind: str) -> str:
        return f"{kind}-{self.pool.name}"

    def metadata(self, kind: str) -> Obj:
        return {"name": self.job(kind), "namespace": self.team.name, "labels": {queue_label(): self.team.name}}


def pick(cluster: Cluster, pool: str | None = None, team: str | None = None) -> Target:
    """The first pool (or the named one) with NODES nodes and a team (or the named one) whose nominal quota in that
    pool's ResourceFlavor holds NODES whole nodes; JobsError saying what is missing otherwise."""
    if cluster.spec.storage.lustre is None:
        raise JobsError(f"cluster {cluster.name!r}: the examples checkpoint to Lustre; the stack has no "
                        "storage.lustre")
    pools = [p for p in cluster.pools if pool in (None, p.name)]
    if not pools:
        raise JobsError(f"cluster {cluster.name!r} has no GPU pool {pool!r}; pools: "
                        f"{', '.join(p.name for p in cluster.pools) or '(none)'}")
    shares = gpu_shares(cluster)
    teams = [t for t in cluster.spec.addons.kueue_teams if team in (None, t.name)]
    for p in pools:
        if p.spec.nodes.max < NODES:
            continue
        for t in teams:
            if shares[t.name][p.name] >= NODES * p.machine.gpus:
                return Target(cluster, p, t)
    raise JobsError(f"cluster {cluster.name!r}: no pool with at least {NODES} nodes where a team's quota holds "
                    f"{NODES} whole nodes (pools {', '.join(p.name for p in pools)}; teams "
                    f"{', '.join(t.name for t in teams) or '(none)'}): raise a pool's nodes.max or a team's gpus")


def _torchrun(t: Target, rank: str, master: str) -> str:
    return (f"torchrun --nnodes={NODES} --nproc-per-node={t.pool.machine.gpus} --node-rank={rank} "
            f"--master-addr={master} --master-port={PORT} {SCRIPT} --checkpoint-dir=$CHECKPOINT_DIR")


def jobset(t: Target) -> Obj:
    """One replicated job of NODES indexed pods; pod 0 is the rendezvous (JobSet's headless service gives each
    pod the DNS name <jobset>-<job>-<job index>-<pod index>.<jobset>)."""
    name = t.job("jobset")
    w = wiring(t.cluster, t.pool, name)
    command = _torchrun(t, "$JOB_COMPLETION_INDEX", f"{name}-node-0-0.{name}")
    pod = template(w, topology_request(t.cluster), [{**container(w, "pytorch", command),
                                                     "ports": [{"containerPort": PORT}]}])
    pod["spec"]["priorityClassName"] = PRIORITY
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": t.metadata("jobset"), "spec": {
        "failurePolicy": {"maxRestarts": 3}, "network": {"enableDNSHostnames": True},
        "replicatedJobs": [{"name": "node", "replicas": 1, "template": {"spec": {
            "parallelism": NODES, "completions": NODES, "completionMode": "Indexed", "backoffLimit": 0,
            "template": pod}}}]}}


def _ray_image() -> str:
    return str(upstream.digest("kuberay-operator")["images"]["pytorch-sample"]["images"][0])


def rayjob(t: Target) -> Obj:
    """A Ray cluster of one head and NODES GPU workers for one Ray Train run (a TorchTrainer over NODES x GPUs
    workers); KubeRay deletes the cluster when the job ends. Kueue admits head and workers as one workload."""
    name = t.job("ray")
    w = wiring(t.cluster, t.pool, name)
    w = Wiring(**{**w.__dict__, "image": _ray_image()})
    worker = template(w, topology_request(t.cluster), [container(w, "ray-worker", None)], restart=None)
    worker["spec"]["priorityClassName"] = PRIORITY
    head = {"spec": {"priorityClassName": PRIORITY, "containers": [{
        "name": "ray-head", "image": w.image, "resources": {"limits": {"cpu": "8", "memory": "32Gi"},
                                                            "requests": {"cpu": "8", "memory": "32Gi"}},
        "volumeMounts": [{"name": "lustre", "mountPath": "/lustre"}]}],
        "volumes": [v for v in w.volumes if v["name"] == "lustre"]}}
    entrypoint = (f"python {SCRIPT} --num-workers={t.gpus} --use-gpu "
                  f"--checkpoint-dir={w.checkpoints}")
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": t.metadata("ray"), "spec": {
        "entrypoint": entrypoint, "shutdownAfterJobFinishes": True, "ttlSecondsAfterFinished": 3600,
        "rayClusterSpec": {
            "headGroupSpec": {"rayStartParams": {}, "template": head},
            "workerGroupSpecs": [{"groupName": t.pool.name, "replicas": NODES, "minReplicas": NODES,
                                  "maxReplicas": NODES, "rayStartParams": {}, "template": worker}]}}}


def trainjob(t: Target) -> Obj:
    """A TrainJob on the pool's PyTorch runtime (``torch-<pool>``, installed with the Trainer: it carries the
    fabric wiring, Lustre, topology request and priority); the Trainer sets torchrun's rendezvous (PET_* env)."""
    name = t.job("train")
    w = wiring(t.cluster, t.pool, name)
    command = f"{w.prelude}torchrun {SCRIPT} --checkpoint-dir=$CHECKPOINT_DIR"
    return {"apiVersion": TRAINER_API, "kind": "TrainJob", "metadata": t.metadata("train"), "spec": {
        "runtimeRef": {"name": runtime_name("torch", t.pool), "kind": "ClusterTrainingRuntime",
                       "apiGroup": TRAINER_API.split("/")[0]},
        "trainer": {"image": w.image, "command": ["/bin/bash", "-c", command], "numNodes": NODES,
                    "numProcPerNode": t.pool.machine.gpus, "resourcesPerNode": {"limits": dict(w.limits)},
                    "env": [e for e in w.env if e["name"] == "CHECKPOINT_DIR"]}}}


# operator -> (file stem, builder)
EXAMPLES: dict[str, tuple[str, Callable[[Target], Obj]]] = {
    "kuberay": ("rayjob", rayjob), "jobset": ("jobset", jobset), "trainer": ("trainjob", trainjob)}


def examples(cluster: Cluster, pool: str | None = None, team: str | None = None) -> dict[str, Obj]:
    """File name -> job, one per operator the cluster installs."""
    if not cluster.spec.addons.operators:
        raise JobsError(f"cluster {cluster.name!r} installs no job operator: list some under addons.operators "
                        "(kuberay, jobset, trainer)")
    target = pick(cluster, pool, team)
    return {f"{cluster.name}-{EXAMPLES[op][0]}.yaml": EXAMPLES[op][1](target) for op in cluster.spec.addons.operators}


def document(stack: str, job: Obj) -> str:
    """The YAML a user submits, under a header saying where it came from and how to run it."""
    meta = job["metadata"]
    header = (f"# Generated from stack {stack} by `gpufleet jobs examples --stack {stack}`: do not edit, regenerate.\n"
              f"# Submit: kubectl create -f <this file>; Kueue admits it from queue {meta['namespace']} "
              f"(namespace {meta['namespace']}) as one gang.\n")
    return header + yaml.safe_dump(job, sort_keys=False, width=120)


def write(stack: str, clusters: tuple[Cluster, ...], out: Path, pool: str | None = None,
          team: str | None = None) -> list[Path]:
    """Every cluster's examples under out/<stack>/; the paths written."""
    running = [c for c in clusters if c.spec.addons.operators]
    if not running:
        raise JobsError(f"stack {stack}: no cluster installs a job operator: list some under "
                        "clusters[*].addons.operators (kuberay, jobset, trainer)")
    written = []
    target = out / stack
    target.mkdir(parents=True, exist_ok=True)
    for cluster in running:
        for name, job in examples(cluster, pool, team).items():
            path = target / name
            path.write_text(document(stack, job))
            written.append(path)
    return written
