"""A fleet after validation: every node pool resolved against the catalogue. Translators consume this."""

from __future__ import annotations

from dataclasses import dataclass, replace

from components.catalog import Cloud, Fabric, MachineType
from components.errors import SpecProblem
from components.spec import CapacityType, ClusterSpec, FleetSpec, NodePoolSpec, Taint

GPU_TAINT = "nvidia.com/gpu"
# On every new node of a gated pool until the health gate passes there (components/k8s/nodegate.py): the translators
# put it on the pool, so each node joins with it; Kueue's flavors do not tolerate it.
GATE_TAINT = "gpufleet.io/health-gate"
COST_TAG_KEYS = ("team", "cost-center", "gpufleet-cluster")


@dataclass(frozen=True)
class Pool:
    """A GPU node pool with its machine, zone and placement decided."""

    spec: NodePoolSpec
    machine: MachineType
    zone: str
    fabric: Fabric  # the fabric this pool wires up; NONE when interconnect is off or the machine has none
    compact: bool  # one cluster placement group / compact placement policy
    gated: bool = False  # new nodes join with GATE_TAINT until the health gate passes (self-healing on)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def capacity(self) -> CapacityType:
        return self.spec.capacity.type

    @property
    def max_gpus(self) -> int:
        return self.spec.nodes.max * self.machine.gpus

    def taints(self, required: list[Taint]) -> list[Taint]:
        """The cloud's required taints (and the gate's on a gated pool), then the user's, minus any user taint that
        would override a required key."""
        required = [*required, *([Taint(key=GATE_TAINT, value="pending")] if self.gated else [])]
        keys = {t.key for t in required}
        return [*required, *(t for t in self.spec.taints if t.key not in keys)]

    @property
    def labels(self) -> dict[str, str]:
        """The user's labels plus the ones every cloud's schedulers and Kueue flavors select on."""
        return {"gpufleet.io/pool": self.name, "gpufleet.io/gpu": self.machine.gpu,
                "gpufleet.io/fabric": self.fabric.value, **self.spec.labels}


@dataclass(frozen=True)
class Cluster:
    spec: ClusterSpec
    cloud: Cloud
    system_machine: MachineType
    pools: tuple[Pool, ...]
    tags: dict[str, str]
    account: str | None = None  # FleetSpec.account: the AWS account / GCP project / Azure subscription

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def cost_tags(self) -> dict[str, str]:
        """The tags cost allocation needs, and no more: where tags are baked into node templates, changing
        any other tag must not roll GPU nodes."""
        return {k: v for k, v in self.tags.items() if k in COST_TAG_KEYS}

    def gpus_by_model(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for pool in self.pools:
            out[pool.machine.gpu] = out.get(pool.machine.gpu, 0) + pool.max_gpus
        return out


@dataclass(frozen=True)
class Fleet:
    spec: FleetSpec
    clusters: tuple[Cluster, ...]
    notes: tuple[SpecProblem, ...] = ()  # not problems: what validation decided for the user (a GPU family's default)

    @property
    def cloud(self) -> Cloud:
        return self.spec.cloud

    def share(self, index: int, of: int) -> Fleet:
        """The ``index``-th of ``of`` consecutive shares of the clusters, in order: what one of the offline preview's
        parallel runs of the program builds (gpufleet/engine/shares.py)."""
        n = len(self.clusters)
        return replace(self, clusters=self.clusters[n * index // of:n * (index + 1) // of])
