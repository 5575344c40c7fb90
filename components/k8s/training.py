"""What a training pod on a GPU pool needs, whichever operator runs it: the pool's GPUs and fabric devices, the
fabric's env, sidecars, mounts and annotations (EFA on AWS, GPUDirect-TCPXO and gIB on GKE, InfiniBand on AKS), shared
memory, the team's Lustre volume (checkpoints go under the file system's export path, which the stack links to the
checkpoint bucket) and Kueue's topology request. Node placement and tolerations are not here: Kueue injects the
ResourceFlavor's node labels and tolerations into every pod it admits.

Used by the Trainer runtimes the layer installs (``components.k8s.operators``) and by the example jobs
(``gpufleet.jobs.examples``)."""

from __future__ import annotations

from dataclasses import dataclass

from components.catalog import Fabric
from components.fleet import Cluster, Pool
from components.k8s.healthgate import fabric_parts, image
from components.k8s.interconnect import fabric_limits, nic_annotations
from components.k8s.kueue import GPU, constant
from components.k8s.model import Obj
from components.k8s.scheduling import TOPOLOGY_LABELS
from components.k8s.storage import CLAIM

LUSTRE_MOUNT = "/lustre"
# libfabric's EFA provider, with GPUDirect RDMA, as the EKS guide's NCCL test sets it:
# https://docs.aws.amazon.com/eks/latest/userguide/node-efa.html
EFA_ENV = {"FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1"}
# Kueue's own spelling (pkg/controller/constants, apis/kueue/v1beta2/topology_types.go at the pinned tag)
_KUEUE_CONSTANTS = "pkg/controller/constants/constants.go"
_TOPOLOGY_TYPES = "apis/kueue/v1beta2/topology_types.go"


def queue_label() -> str:
    return constant(_KUEUE_CONSTANTS, "QueueLabel")


def topology_request(cluster: Cluster) -> dict[str, str]:
    """Kueue TAS: every pod of the pod set in one domain of the outermost level of the cluster's Topology (one EC2
    network layer-1 node, one GKE block, on AKS one pool), so the gang shares one interconnect domain."""
    annotation = constant(_TOPOLOGY_TYPES, "PodSetRequiredTopologyAnnotation")
    return {annotation: TOPOLOGY_LABELS[cluster.cloud][0]}


def group_request(group: str) -> dict[str, str]:
    """Pod sets of one job that Kueue places in the same topology domain (an MPI launcher and its nodes)."""
    return {constant(_TOPOLOGY_TYPES, "PodSetGroupName"): group}


@dataclass(frozen=True)
class Wiring:
    """A whole-node training pod on one pool: what its template, main container and sidecars carry."""

    annotations: dict[str, str]
    limits: dict[str, str]
    env: list[Obj]
    mounts: list[Obj]
    volumes: list[Obj]
    sidecars: list[Obj]
    prelude: str  # shell run before the training command (the TCPXO NCCL profile, gIB's set_nccl_env.sh)
    image: str
    checkpoints: str  # where this job's checkpoints go on the Lustre volume ("" without a job or Lustre)


def checkpoint_dir(cluster: Cluster, job: str) -> str:
    """Under the Lustre export path, which reaches the checkpoint bucket by itself: FSx auto-export on AWS, the
    checkpoint sync CronJob on GCP and Azure (``components.k8s.sync``)."""
    lustre = cluster.spec.storage.lustre
    return f"{LUSTRE_MOUNT}/{lustre.export_path.strip('/')}/{job}" if lustre and job else ""


def wiring(cluster: Cluster, pool: Pool, job: str = "") -> Wiring:
    """The pod parts for ``pool``; with a ``job`` name, CHECKPOINT_DIR for it on the team's Lustre volume."""
    parts = fabric_parts(pool)
    env = [*parts.env]
    if pool.fabric is Fabric.EFA:
        env += [{"name": k, "value": v} for k, v in EFA_ENV.items()]
    checkpoints = checkpoint_dir(cluster, job)
    if checkpoints:
        env.append({"name": "CHECKPOINT_DIR", "value": checkpoints})
    volumes = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}, *parts.volumes]
    mounts = [{"name": "dshm", "mountPath": "/dev/shm"}, *parts.mounts]
    if cluster.spec.storage.lustre is not None:  # every team namespace has the claim (storage.py)
        volumes.insert(1, {"name": "lustre", "persistentVolumeClaim": {"claimName": CLAIM}})
        mounts.insert(1, {"name": "lustre", "mountPath": LUSTRE_MOUNT})
    return Wiring(annotations={**parts.annotations, **nic_annotations(cluster, pool)},
                  limits={GPU: str(pool.machine.gpus), **fabric_limits(pool)}, env=env, mounts=mounts,
                  volumes=volumes, sidecars=list(parts.sidecars), prelude=parts.prelude, image=image(cluster, pool),
                  checkpoints=checkpoints)


def container(w: Wiring, name: str, command: str | None, env: list[Obj] | None = None) -> Obj:
    """The training container: the pool's image, GPUs and fabric devices, env and mounts; ``command`` runs after
    the fabric's prelude in a shell (None: the image's own entrypoint)."""
    out: Obj = {"name": name, "image": w.image}
    if command is not None:
        out["command"] = ["/bin/bash", "-c", w.prelude + command]
    if w.env or env:
        out["env"] = [*w.env, *(env or [])]
    out.update({"resources": {"limits": dict(w.limits)}, "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
                "volumeMounts": list(w.mounts)})
    return out


def pod_spec(w: Wiring, containers: list[Obj], restart: str | None = "Never") -> Obj:
    spec: Obj = {}
    if restart:
        spec["restartPolicy"] = restart
    if w.sidecars:
        spec["initContainers"] = list(w.sidecars)
    spec.update({"containers": containers, "volumes": list(w.volumes)})
    return spec


def template(w: Wiring, annotations: dict[str, str], containers: list[Obj], labels: dict[str, str] | None = None,
             restart: str | None = "Never") -> Obj:
    metadata: Obj = {}
    if labels:
        metadata["labels"] = labels
    if w.annotations or annotations:
        metadata["annotations"] = {**w.annotations, **annotations}
    return {"metadata": metadata, "spec": pod_spec(w, containers, restart)}
