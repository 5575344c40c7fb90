"""The neutral fleet description: what a user wants, never how one cloud spells it.

These models check shape and types only; cross-field and catalogue checks live in
``components.validate`` so that every problem is reported at once, with its config path.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from components.catalog import Cloud

NAME = r"^[a-z]([a-z0-9-]{0,30}[a-z0-9])?$"  # fits every cloud's node pool / cluster naming rules


class Strict(BaseModel):
    """Unknown keys are errors: a typo must not silently fall back to a default."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class CapacityType(StrEnum):
    ON_DEMAND = "on_demand"
    SPOT = "spot"
    RESERVATION = "reservation"  # an on-demand capacity reservation / specific reservation / capacity reservation group
    CAPACITY_BLOCK = "capacity_block"  # AWS EC2 Capacity Blocks for ML
    FLEX_START = "flex_start"  # GCP Dynamic Workload Scheduler (queued provisioning)


PENDING_ID = "pending"  # a reservation or capacity block still to buy: previews, but `pulumi up` refuses it


class Capacity(Strict):
    type: CapacityType = CapacityType.ON_DEMAND
    id: str | None = None  # reservation / capacity block / capacity reservation group id, or PENDING_ID
    block: str | None = None  # a block inside a reservation, where the cloud has them
    max_usd_per_hour: float | None = Field(default=None, gt=0)  # spot price cap per node; None: up to on-demand


class Nodes(Strict):
    min: int = Field(default=0, ge=0)
    max: int = Field(ge=1)
    desired: int | None = Field(default=None, ge=0)

    @property
    def initial(self) -> int:
        """Nodes at creation: desired if given, else min."""
        return self.min if self.desired is None else self.desired


class Taint(Strict):
    key: str
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = "NoSchedule"


class NodePoolSpec(Strict):
    """A GPU node pool. Name an accelerator and count, or a machine type; the catalogue resolves the other."""

    name: str = Field(pattern=NAME)
    accelerator: str | None = None
    gpus: int | None = Field(default=None, ge=1)
    machine_type: str | None = None
    nodes: Nodes
    capacity: Capacity = Capacity()
    interconnect: Literal["auto", "required", "off"] = "auto"  # auto: the machine's fabric if it has one
    compact_placement: bool | None = None  # None: on when the pool uses an interconnect fabric
    zone: str | None = None  # None: the cluster's first zone
    labels: dict[str, str] = {}
    taints: list[Taint] = []
    disk_gib: int = Field(default=500, ge=50, le=16384)
    local_nvme_raid0: bool = True  # stripe local NVMe into one RAID0 volume for caches

    @model_validator(mode="after")
    def _what_to_run(self) -> NodePoolSpec:
        if not self.accelerator and not self.machine_type:
            raise ValueError("name an accelerator (with gpus) or a machine_type")
        return self


class SystemPoolSpec(Strict):
    """The CPU pool for cluster add-ons; sized by need, resolved to the cloud's smallest fitting type."""

    vcpus: int = Field(default=8, ge=2, le=64)
    memory_gib: int = Field(default=32, ge=4, le=512)
    nodes: Nodes = Nodes(min=2, max=4)


class BucketSpec(Strict):
    name: str = Field(pattern=NAME)
    versioning: bool = True
    noncurrent_days: int = Field(default=30, ge=1)  # old checkpoint versions expire after this
    archive_after_days: int | None = Field(default=None, ge=1)  # move to a colder class after this


class CheckpointSyncSpec(Strict):
    """GCP and Azure: a CronJob copies new and changed files from the Lustre export path to the bucket's same prefix
    (docs/addons.md "Checkpoint sync"); AWS exports by itself (FSx data repository association), so it is unused
    there."""

    enabled: bool = True
    schedule: str = "*/30 * * * *"  # Kubernetes CronJob syntax, UTC: how long a checkpoint waits for the bucket


class LustreSpec(Strict):
    capacity_tib: float = Field(gt=0)
    throughput_mbps_per_tib: int = 250
    bucket: str  # a bucket of this cluster, linked for import and export
    import_path: str = "datasets/"
    export_path: str = "checkpoints/"
    checkpoint_sync: CheckpointSyncSpec = CheckpointSyncSpec()


class StorageSpec(Strict):
    buckets: list[BucketSpec] = []
    lustre: LustreSpec | None = None


class KueueTeam(Strict):
    name: str = Field(pattern=NAME)
    gpus: dict[str, int]  # GPU model -> nominal quota
    borrowing_limit_gpus: int | None = Field(default=None, ge=0)


class SelfHealingSpec(Strict):
    """Self-healing GPU nodes (docs/addons.md "Self-healing GPU nodes"), on by default for every GPU pool: a node
    with a fatal GPU fault is quarantined, drained and rebooted in the cluster, and replaced by the cloud's repair
    where the pool's capacity allows it. The limits hold per pool, so a fleet-wide event cannot drain a pool."""

    enabled: bool = True
    max_unhealthy_pct: int = Field(default=10, ge=1, le=100)  # above this share of a pool unhealthy, repair stops
    max_parallel_repairs: int = Field(default=1, ge=1)  # nodes of one pool the cloud repairs at the same time


class SecretRef(Strict):
    """A value kept in a Kubernetes Secret of the monitoring namespace, never in the stack file: Alertmanager reads
    it from the file the Secret is mounted as (docs/addons.md "Paging")."""

    secret: str = Field(pattern=r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")  # the Secret's name
    key: str = Field(pattern=r"^[-._a-zA-Z0-9]{1,253}$")  # the key in it holding the value


class PagerDutySpec(Strict):
    routing_key: SecretRef | str  # an Events API v2 integration key (a plain string is refused: secrets by reference)


class SlackSpec(Strict):
    api_url: SecretRef | str  # the incoming webhook URL (a plain string is refused)
    channel: str | None = None  # None: the webhook's own channel


class WebhookSpec(Strict):
    url: SecretRef | str  # the endpoint, which often carries a token (a plain string is refused)


class ReceiverSpec(Strict):
    """Where Alertmanager sends alerts: exactly one of pagerduty, slack, webhook."""

    name: str = Field(pattern=NAME)
    severities: list[Literal["critical", "warning"]] = ["critical"]  # alerts of these severities reach it
    pagerduty: PagerDutySpec | None = None
    slack: SlackSpec | None = None
    webhook: WebhookSpec | None = None


class AlertingSpec(Strict):
    receivers: list[ReceiverSpec] = []  # none: alerts stay in Alertmanager's UI (the preview warns)


class GrafanaSpec(Strict):
    """Grafana's admin login: a password generated into a Kubernetes Secret (never the chart's default)."""

    admin_user: str = Field(default="admin", pattern=r"^[a-z][-a-z0-9_.]{0,63}$")


class AddonsSpec(Strict):
    gpu_driver: Literal["cloud", "operator"] = "cloud"  # who installs the NVIDIA driver, never both
    monitoring: bool = True
    alerting: AlertingSpec = AlertingSpec()  # Alertmanager receivers and the severities each gets
    grafana: GrafanaSpec = GrafanaSpec()
    self_healing: SelfHealingSpec = SelfHealingSpec()
    kueue_teams: list[KueueTeam] = []
    operators: list[str] = []  # job operators to install, Kueue-managed: kuberay, jobset, trainer (docs/addons.md)


class NetworkProfileSpec(Strict):
    """WAN-like link conditions to rehearse a training run under (docs/netsim.md). Off until enabled: only then
    does the in-cluster layer shape the traffic, of pods in ``namespace`` on ``pools`` to pods on ``to_pools``."""

    name: str = Field(pattern=NAME)
    enabled: bool = False  # off by default: no chaos objects exist until a user turns the rehearsal on
    bandwidth_mbps: float | None = Field(default=None, ge=0.001)  # None: the link's own rate; 0.001 = 1 kbit/s
    latency_ms: float = Field(default=0, ge=0, le=10_000)  # one-way, added to every packet
    jitter_ms: float = Field(default=0, ge=0)  # spread around latency_ms
    loss_pct: float = Field(default=0, ge=0, lt=100)  # packets dropped at random, in percent
    pools: list[str] = Field(min_length=1)  # traffic from pods on these node pools ...
    to_pools: list[str] = []  # ... to pods on these (empty: the same pools)
    labels: dict[str, str] = {}  # and only pods with these labels (empty: every pod of the namespace)
    namespace: str = Field(default="netsim", pattern=NAME)  # the one namespace whose pods are shaped
    duration_minutes: int = Field(default=60, ge=1, le=1440)  # the engine lifts the shaping after this


class DeploySpec(Strict):
    """Where the `pulumi up` that installs this cluster's in-cluster layer runs, so it can reach the API server
    (docs/clouds.md "Deploy paths"). Checked before anything is built."""

    # outside: a hosted runner or a laptop; network: a runner inside the cluster's VPC / VNet (or one peered to it).
    # None: outside for a public endpoint; for a private one, the cloud's default (components/reach.py)
    deployer: Literal["outside", "network"] | None = None
    runner_labels: list[str] = []  # network: the runs-on labels of that runner; []: [self-hosted, gpufleet-<cluster>]
    runner_cidrs: list[str] = []  # network: the runner's addresses, let through to the API server where it filters
    egress_cidrs: list[str] = []  # outside with a public endpoint: the deployer's fixed egress addresses


class MultiKueueWorkerRef(Strict):
    """A worker of this MultiKueue manager: a cluster of another stack of this project (docs/fleet-queue.md)."""

    stack: str = Field(pattern=NAME)  # stacks/Pulumi.<stack>.yaml
    cluster: str = Field(pattern=NAME)

    @property
    def name(self) -> str:
        """The MultiKueueCluster's name on the manager, and the worker's name in ``order``."""
        return f"{self.stack}-{self.cluster}"


class MultiKueueManagerRef(Strict):
    """The MultiKueue manager this cluster is a worker of, and how the manager reaches this cluster's API server."""

    stack: str = Field(pattern=NAME)
    cluster: str = Field(pattern=NAME)
    # where the manager's pods run, seen from this cluster: outside its network (the internet, another cloud), or
    # in a network connected to it (peering, VPN, interconnect: the user's, not built here)
    reach: Literal["outside", "network"] = "outside"
    # the manager's addresses: outside, its fixed egress addresses (inside public_access_cidrs for a public
    # endpoint); network, its node subnets, let through to the API server where this cloud filters (components/reach.py)
    cidrs: list[str] = []


class MultiKueueSpec(Strict):
    """One queue for the fleet (docs/fleet-queue.md): set ``workers`` on the manager cluster, ``manager`` on each
    worker. The manager's ClusterQueues dispatch every team's work to the team's workers through Kueue's MultiKueue
    admission check, trying them in ``order``."""

    workers: list[MultiKueueWorkerRef] = []  # this cluster is the fleet's manager
    # team -> the worker names (<stack>-<cluster>) in the order the manager tries them (`gpufleet capacity apply`
    # writes it from the plan); a team not listed: its workers in the order of ``workers``
    order: dict[str, list[str]] = {}
    manager: MultiKueueManagerRef | None = None  # this cluster is a worker of that manager

    @model_validator(mode="after")
    def _one_role(self) -> MultiKueueSpec:
        if self.manager is not None and (self.workers or self.order):
            raise ValueError("a cluster is either the manager (workers, order) or a worker (manager), not both")
        if self.manager is None and not self.workers:
            raise ValueError("set workers (this cluster is the manager) or manager (this cluster is a worker)")
        return self


class ClusterSpec(Strict):
    name: str = Field(pattern=NAME)
    region: str
    zones: list[str] = Field(min_length=1)
    kubernetes_version: str = Field(default="1.33", pattern=r"^1\.\d{2}$")
    endpoint: Literal["private", "public"] = "private"
    public_access_cidrs: list[str] = []  # only with endpoint: public
    admins: list[str] = []  # principals given cluster admin: IAM role ARNs / Google groups / Entra group ids
    existing_network: str | None = None  # an existing VPC / VNet id to use instead of creating one
    deploy: DeploySpec = DeploySpec()  # how `pulumi up` reaches the API server
    system_pool: SystemPoolSpec = SystemPoolSpec()
    node_pools: list[NodePoolSpec] = []
    storage: StorageSpec = StorageSpec()
    addons: AddonsSpec = AddonsSpec()
    network_profiles: list[NetworkProfileSpec] = []  # rehearsal link conditions, off unless enabled
    multikueue: MultiKueueSpec | None = None  # one queue for the fleet: this cluster's MultiKueue role

    @property
    def is_manager(self) -> bool:
        return self.multikueue is not None and bool(self.multikueue.workers)


class Tags(Strict):
    model_config = ConfigDict(extra="allow", frozen=True)

    team: str = Field(min_length=1)
    cost_center: str = Field(min_length=1)

    def as_dict(self) -> dict[str, str]:
        """Every tag, keys spelt with dashes (cost-center), as all three clouds accept."""
        return {k.replace("_", "-"): str(v) for k, v in self.model_dump().items()}


class FleetSpec(Strict):
    """One stack: one cloud account / project / subscription, one or more clusters."""

    cloud: Cloud
    account: str | None = None  # where the stack builds: AWS account id / GCP project id / Azure subscription id;
    # optional unless the cloud's capabilities require it (GCP: the project)
    clusters: list[ClusterSpec] = Field(min_length=1)
    tags: Tags
    monthly_budget_usd: float = Field(gt=0)
