"""Job operators (``addons.operators``): KubeRay, JobSet and the Kubeflow Trainer, each a pinned chart in its own
namespace, each with its Kueue integration enabled (``frameworks``: the names Kueue's pinned source registers),
and for the Trainer a PyTorch and an MPI ClusterTrainingRuntime per GPU pool carrying that pool's fabric wiring
(``training.py``), so a TrainJob only names its runtime, size and command."""

from __future__ import annotations

from dataclasses import dataclass, field

from components.fleet import Cluster, Pool
from components.k8s import charts, upstream
from components.k8s.kueue import PRIORITIES, constant
from components.k8s.model import Chart, Manifest, Obj, Release, Rendered, namespace, obj
from components.k8s.training import container, group_request, template, topology_request, wiring

_JOBS = "pkg/controller/jobs"


@dataclass(frozen=True)
class Operator:
    release: str
    chart: Chart
    namespace: str
    integrations: tuple[str, ...]  # Kueue source files whose FrameworkName this operator's kinds are
    values: Obj = field(default_factory=dict)
    after: tuple[str, ...] = ()  # releases whose CRDs / webhooks it needs first


OPERATORS: dict[str, Operator] = {
    "kuberay": Operator("kuberay-operator", charts.KUBERAY, "kuberay-system",
                        (f"{_JOBS}/rayjob/rayjob_controller.go", f"{_JOBS}/raycluster/raycluster_controller.go")),
    "jobset": Operator("jobset", charts.JOBSET, "jobset-system", (f"{_JOBS}/jobset/jobset_controller.go",)),
    # the chart would install its own JobSet (a dependency); the jobset row is the one Kueue is built against
    "trainer": Operator("kubeflow-trainer", charts.TRAINER, "kubeflow-system",
                        (f"{_JOBS}/trainjob/trainjob_controller.go",), {"jobset": {"install": False}},
                        after=("jobset",)),
}
BATCH_JOB = f"{_JOBS}/job/job_controller.go"  # plain Jobs stay Kueue-managed (the health gate's kind)
TRAINER_CONSTANTS = "pkg/constants/constants.go"
TRAINER_API = "trainer.kubeflow.org/v1alpha1"


def installed(cluster: Cluster) -> list[Operator]:
    """A cluster without GPU pools runs no jobs, unless it is the fleet's MultiKueue manager: users submit every kind
    there, and each operator skips the objects Kueue marks managedBy MultiKueue (docs/fleet-queue.md)."""
    runs = cluster.pools or cluster.spec.is_manager
    return [OPERATORS[name] for name in cluster.spec.addons.operators] if runs else []


def frameworks(cluster: Cluster) -> list[str]:
    """Kueue's integrations: batch/job and every installed operator's kinds, as Kueue's source names them."""
    files = [BATCH_JOB, *(f for op in installed(cluster) for f in op.integrations)]
    return [constant(f, "FrameworkName") for f in files]


def trainer_constant(name: str) -> str:
    return str(upstream.digest(charts.TRAINER.pin)["constants"][TRAINER_CONSTANTS][name])


def runtime_name(framework: str, pool: Pool) -> str:
    return f"{framework}-{pool.name}"


RUNTIME_PRIORITY = PRIORITIES[1].name  # a TrainJob cannot set its pods' priority class: the runtime's applies


def _replicated_job(name: str, pod: Obj, trainer_step: bool) -> Obj:
    pod["spec"]["priorityClassName"] = RUNTIME_PRIORITY
    labels = {trainer_constant("LabelTrainJobAncestor"): trainer_constant("AncestorTrainer")} if trainer_step else {}
    job: Obj = {"metadata": {"labels": labels}} if labels else {}
    return {"name": name, "template": {**job, "spec": {"template": pod}}}


def torch_runtime(cluster: Cluster, pool: Pool) -> Obj:
    """torchrun on every node: the Trainer sets PET_NNODES / PET_NODE_RANK / PET_MASTER_ADDR from the TrainJob."""
    node = trainer_constant("Node")
    w = wiring(cluster, pool)
    pod = template(w, topology_request(cluster), [container(w, node, None)])
    return obj(TRAINER_API, "ClusterTrainingRuntime", runtime_name("torch", pool), spec={
        # Trainer 2.2 has no torch.numProcPerNode (kubeflow/trainer#3239): with GPU limits on the node container the
        # torch plugin passes nproc_per_node=auto, one process per GPU (pkg/runtime/framework/plugins/torch/torch.go)
        "mlPolicy": {"numNodes": 1, "torch": {}},
        "template": {"spec": {"replicatedJobs": [_replicated_job(node, pod, trainer_step=True)]}}})


def mpi_runtime(cluster: Cluster, pool: Pool) -> Obj:
    """OpenMPI, shaped like upstream's MPI runtime (manifests/base/runtimes at the pinned tag): a launcher that is
    also a node runs mpirun; the other nodes run sshd. Both pod sets share one topology domain (one group)."""
    node, launcher = trainer_constant("Node"), trainer_constant("Launcher")
    w = wiring(cluster, pool)
    placement = {**topology_request(cluster), **group_request("mpi")}
    sshd = container(w, node, "/usr/sbin/sshd -De")
    return obj(TRAINER_API, "ClusterTrainingRuntime", runtime_name("mpi", pool), spec={
        "mlPolicy": {"numNodes": 1, "mpi": {"numProcPerNode": pool.machine.gpus, "mpiImplementation": "OpenMPI",
                                            "sshAuthMountPath": "/root/.ssh", "runLauncherAsNode": True}},
        "template": {"spec": {
            "network": {"publishNotReadyAddresses": True},
            "successPolicy": {"operator": "All", "targetReplicatedJobs": [launcher]},
            "replicatedJobs": [
                _replicated_job(launcher, template(w, placement, [container(w, node, None)]), trainer_step=True),
                _replicated_job(node, template(w, placement, [sshd]), trainer_step=False)]}}})


def operators(cluster: Cluster) -> Rendered:
    """Each listed operator's namespace and release; with the Trainer, its runtimes for every GPU pool."""
    out = Rendered()
    for op in installed(cluster):
        out.manifests.append(namespace(op.namespace))
        out.releases.append(Release(op.release, op.chart, op.namespace, op.values, after=op.after))
    if "trainer" in cluster.spec.addons.operators and cluster.pools:
        release = (OPERATORS["trainer"].release,)
        for pool in cluster.pools:
            out.manifests += [Manifest(torch_runtime(cluster, pool), release),
                              Manifest(mpi_runtime(cluster, pool), release)]
    return out
