"""Example training jobs generated from a fleet: for each job operator a cluster installs (``addons.operators``), a
multi-node PyTorch job on one of its GPU pools (by default as many whole nodes as the team's quota holds there),
ready for ``kubectl create -f``: the pool's GPUs, fabric devices and fabric wiring (``components.k8s.training``),
the team's Lustre volume with checkpoints under its export path, the team's queue label and a topology request, so
Kueue admits it as one gang in one network domain.

``gpufleet jobs examples`` writes them; ``examples/jobs/<stack>/`` holds those of the bundled stacks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from components.fleet import Cluster, Pool
from components.k8s import upstream
from components.k8s.healthgate import image
from components.k8s.kueue import PRIORITIES, gpu_shares
from components.k8s.model import Obj
from components.k8s.operators import TRAINER_API, runtime_name
from components.k8s.training import Wiring, container, queue_label, template, topology_request, wiring
from components.spec import KueueTeam
from gpufleet.jobs.ray_image import RayImageError, RayRuntime, dockerfile, runtime, with_ray

PORT = 29500
PRIORITY = PRIORITIES[1].name  # experiment: research work, preemptible by production training
# The head asks for no GPU, but Kueue places it on the pool's (GPU) nodes, where the image's runtime may show it the
# node's GPUs; KubeRay sets `ray start --num-gpus` only from a container's GPU limit or a group's `resources` (v1.6.2
# common/pod.go; the examples set neither on the head), so Ray
# would detect them and schedule GPU tasks on the head. `num-gpus` is the `ray start` flag as rayStartParams spell it
# (docs/guidance/rayStartParams.md at v1.6.2; values are strings).
HEAD_START_PARAMS = {"num-gpus": "0"}
SCRIPT = "/lustre/code/train.py"  # the user's training script; any path the pods can read


class JobsError(Exception):
    """A stack whose clusters cannot run the example (no operator, no pool or team big enough, no Lustre)."""


@dataclass(frozen=True)
class Target:
    """Where an example runs: a pool of the cluster, on behalf of a team whose quota holds the whole gang."""

    cluster: Cluster
    pool: Pool
    team: KueueTeam
    nodes: int  # whole nodes of the pool the job spans
    ray_image: str | None = None  # a prebuilt Ray image for the RayJob (--ray-image); None: gpufleet/jobs/ray_image.py

    @property
    def gpus(self) -> int:
        return self.nodes * self.pool.machine.gpus

    def job(self, kind: str) -> str:
        return f"{kind}-{self.pool.name}"

    def metadata(self, kind: str) -> Obj:
        return {"name": self.job(kind), "namespace": self.team.name, "labels": {queue_label(): self.team.name}}


def fit(cluster: Cluster, pool: Pool, team: KueueTeam) -> int:
    """Whole nodes of ``pool`` the team's nominal quota in the pool's ResourceFlavor holds, at most the pool's size."""
    return min(pool.spec.nodes.max, gpu_shares(cluster)[team.name][pool.name] // pool.machine.gpus)


def pick(cluster: Cluster, pool: str | None = None, team: str | None = None, nodes: int | None = None) -> Target:
    """The first pool (or the named one) and team (or the named one) whose quota holds ``nodes`` whole nodes of
    that pool; without ``nodes``, the first pair that holds one, at the largest fit (``fit``). JobsError saying
    what is missing otherwise."""
    if nodes is not None and nodes < 1:
        raise JobsError(f"--nodes {nodes}: a job needs at least 1 node")
    if cluster.spec.storage.lustre is None:
        raise JobsError(f"cluster {cluster.name!r}: the examples checkpoint to Lustre; the stack has no "
                        "storage.lustre")
    pools = [p for p in cluster.pools if pool in (None, p.name)]
    if not pools:
        raise JobsError(f"cluster {cluster.name!r} has no GPU pool {pool!r}; pools: "
                        f"{', '.join(p.name for p in cluster.pools) or '(none)'}")
    teams = [t for t in cluster.spec.addons.kueue_teams if team in (None, t.name)]
    fits = [(p, t, fit(cluster, p, t)) for p in pools for t in teams]
    for p, t, n in fits:
        if n >= (nodes or 1):
            return Target(cluster, p, t, nodes or n)
    held = "; ".join(f"{t.name} on {p.name}: {n}" for p, t, n in fits) or "no team"
    raise JobsError(f"cluster {cluster.name!r}: no pool where a team's quota holds {nodes or 1} whole node(s) "
                    f"(whole nodes each team's quota holds per pool, at most the pool's nodes.max: {held}): "
                    "ask for fewer with --nodes, or raise a pool's nodes.max or a team's gpus")


def _torchrun(t: Target, rank: str, master: str) -> str:
    return (f"torchrun --nnodes={t.nodes} --nproc-per-node={t.pool.machine.gpus} --node-rank={rank} "
            f"--master-addr={master} --master-port={PORT} {SCRIPT} --checkpoint-dir=$CHECKPOINT_DIR")


def jobset(t: Target) -> Obj:
    """One replicated job of one indexed pod per node; pod 0 is the rendezvous (JobSet's headless service gives each
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
            "parallelism": t.nodes, "completions": t.nodes, "completionMode": "Indexed", "backoffLimit": 0,
            "template": pod}}}]}}


def _kuberay(name: str) -> str:
    return str(upstream.digest("kuberay-operator")["constants"]["ray-operator/controllers/ray/utils/constant.go"][name])


def ray_runtime(t: Target) -> RayRuntime:
    try:
        return runtime(image(t.cluster, t.pool), t.pool.fabric, t.ray_image)
    except RayImageError as err:
        raise JobsError(f"cluster {t.cluster.name!r}, pool {t.pool.name!r}: {err}") from None


def _ray_worker(t: Target, w: Wiring) -> Obj:
    """The worker group's pod. A fabric whose NCCL settings come from a sourced script (TCPXO, gIB) needs it run
    before ``ray start`` (Ray's workers inherit its env), which KubeRay's generated command cannot do: the command
    is overridden (KubeRay's annotation, on this pod template only) to run the script, then the generated start
    command KubeRay leaves in the env, after the open-file limit KubeRay's own command sets (common/pod.go)."""
    ray = container(w, "ray-worker", None)
    annotations = topology_request(t.cluster)
    if w.prelude:
        ray["command"] = ["/bin/bash", "-c", f"ulimit -n 65536; {w.prelude}${_kuberay('KUBERAY_GEN_RAY_START_CMD')}"]
        annotations = {**annotations, _kuberay("RayOverwriteContainerCmdAnnotationKey"): "true"}
    worker = template(w, annotations, [ray], restart=None)
    worker["spec"]["priorityClassName"] = PRIORITY
    return worker


def rayjob(t: Target) -> Obj:
    """A Ray cluster of one head and a GPU worker per node for one Ray Train run (a TorchTrainer over nodes x GPUs
    workers); KubeRay deletes the cluster when the job ends. Kueue admits head and workers as one workload. Head and
    workers run one image and one Ray version (``ray_runtime``: the pool's image with Ray on a fabric pool)."""
    name = t.job("ray")
    rt = ray_runtime(t)
    w = replace(wiring(t.cluster, t.pool, name), image=rt.image)
    head = {"spec": {"priorityClassName": PRIORITY, "containers": [{
        "name": "ray-head", "image": w.image, "resources": {"limits": {"cpu": "8", "memory": "32Gi"},
                                                            "requests": {"cpu": "8", "memory": "32Gi"}},
        "volumeMounts": [{"name": "lustre", "mountPath": "/lustre"}]}],
        "volumes": [v for v in w.volumes if v["name"] == "lustre"]}}
    entrypoint = (f"python {SCRIPT} --num-workers={t.gpus} --use-gpu "
                  f"--checkpoint-dir={w.checkpoints}")
    spec: Obj = {"entrypoint": entrypoint, "shutdownAfterJobFinishes": True, "ttlSecondsAfterFinished": 3600}
    if rt.install:  # the default submitter pod would run the head's image, which has no Ray outside the volume
        spec["submissionMode"] = "HTTPMode"
    spec["rayClusterSpec"] = {
        "rayVersion": rt.version,
        "headGroupSpec": {"rayStartParams": HEAD_START_PARAMS, "template": with_ray(rt, head)},
        "workerGroupSpecs": [{"groupName": t.pool.name, "replicas": t.nodes, "minReplicas": t.nodes,
                              "maxReplicas": t.nodes, "rayStartParams": {},
                              "template": with_ray(rt, _ray_worker(t, w))}]}
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": t.metadata("ray"), "spec": spec}


def trainjob(t: Target) -> Obj:
    """A TrainJob on the pool's PyTorch runtime (``torch-<pool>``, installed with the Trainer: it carries the
    fabric wiring, Lustre, topology request and priority); the Trainer sets torchrun's rendezvous (PET_* env)."""
    name = t.job("train")
    w = wiring(t.cluster, t.pool, name)
    command = f"{w.prelude}torchrun {SCRIPT} --checkpoint-dir=$CHECKPOINT_DIR"
    return {"apiVersion": TRAINER_API, "kind": "TrainJob", "metadata": t.metadata("train"), "spec": {
        "runtimeRef": {"name": runtime_name("torch", t.pool), "kind": "ClusterTrainingRuntime",
                       "apiGroup": TRAINER_API.split("/")[0]},
        "trainer": {"image": w.image, "command": ["/bin/bash", "-c", command], "numNodes": t.nodes,
                    "numProcPerNode": t.pool.machine.gpus, "resourcesPerNode": {"limits": dict(w.limits)},
                    "env": [e for e in w.env if e["name"] == "CHECKPOINT_DIR"]}}}


# operator -> (file stem, builder)
EXAMPLES: dict[str, tuple[str, Callable[[Target], Obj]]] = {
    "kuberay": ("rayjob", rayjob), "jobset": ("jobset", jobset), "trainer": ("trainjob", trainjob)}


@dataclass(frozen=True)
class Choice:
    """What the user chose (``gpufleet jobs examples`` options); None lets ``pick`` decide."""

    pool: str | None = None
    team: str | None = None
    nodes: int | None = None
    ray_image: str | None = None


def examples(cluster: Cluster, choice: Choice = Choice()) -> dict[str, Obj]:
    """File name -> job, one per operator the cluster installs."""
    return {name: job for name, (job, _) in _rendered(cluster, choice).items()}


def _rendered(cluster: Cluster, choice: Choice) -> dict[str, tuple[Obj, Target]]:
    if not cluster.spec.addons.operators:
        raise JobsError(f"cluster {cluster.name!r} installs no job operator: list some under addons.operators "
                        "(kuberay, jobset, trainer)")
    target = replace(pick(cluster, choice.pool, choice.team, choice.nodes), ray_image=choice.ray_image)
    return {f"{cluster.name}-{EXAMPLES[op][0]}.yaml": (EXAMPLES[op][1](target), target)
            for op in cluster.spec.addons.operators}


def document(stack: str, job: Obj) -> str:
    """The YAML a user submits, under a header saying where it came from and how to run it."""
    meta = job["metadata"]
    header = (f"# Generated from stack {stack} by `gpufleet jobs examples --stack {stack}`: do not edit, regenerate.\n"
              f"# Submit: kubectl create -f <this file>; Kueue admits it from queue {meta['namespace']} "
              f"(namespace {meta['namespace']}) as one gang.\n")
    return header + yaml.safe_dump(job, sort_keys=False, width=120)


def files(stack: str, cluster: Cluster, choice: Choice = Choice()) -> dict[str, str]:
    """File name -> text: the cluster's examples and, when its RayJob installs Ray at pod start, the Dockerfile
    of the image that makes that install unnecessary (``<cluster>-ray.Dockerfile``, for ``--ray-image``)."""
    out = {}
    for name, (job, target) in _rendered(cluster, choice).items():
        out[name] = document(stack, job)
        if job["kind"] == "RayJob" and (rt := ray_runtime(target)).install:
            out[f"{cluster.name}-ray.Dockerfile"] = dockerfile(stack, cluster.name, target.pool.name,
                                                                       rt.image, rt.version)
    return out


def render(stack: str, clusters: tuple[Cluster, ...], choice: Choice = Choice()) -> dict[Path, str]:
    """Every cluster's examples, by path under the output folder (<stack>/<file>)."""
    running = [c for c in clusters if c.spec.addons.operators]
    if not running:
        raise JobsError(f"stack {stack}: no cluster installs a job operator: list some under "
                        "clusters[*].addons.operators (kuberay, jobset, trainer)")
    return {Path(stack) / name: text for cluster in running for name, text in files(stack, cluster, choice).items()}


def write(out: Path, texts: dict[Path, str]) -> list[Path]:
    """Writes rendered examples under ``out``; the paths written. All or nothing: each file is staged beside its
    target and renamed into place only once every file is staged, so a file that cannot be written leaves no
    folder, no file and no overwritten example behind."""
    made: list[Path] = []  # folders this call created, outermost first
    staged: dict[Path, Path] = {}
    try:
        for rel, text in texts.items():
            path = out / rel
            for folder in reversed([path.parent, *path.parent.parents]):
                if not folder.exists():
                    folder.mkdir()
                    made.append(folder)
            stage = path.with_name(f".{path.name}.partial")
            staged[path] = stage
            stage.write_text(text)
    except OSError as err:
        for stage in staged.values():
            if stage.is_file():  # the one that failed may not exist, or may be half-written
                stage.unlink()
        for folder in reversed(made):
            folder.rmdir()
        raise JobsError(f"cannot write the examples under {out}: {err.strerror}: {err.filename}; "
                        "choose another --out") from None
    for path, stage in staged.items():
        stage.replace(path)
    return list(staged)
