"""Reading resource properties the same way on every cloud: dotted paths, booleans spelt as strings, tags,
and one normalised view of a node pool (EKS node group, GKE node pool, AKS agent pool).

Type tokens and property names are the engine's (camelCase), checked against the installed SDKs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pulumi_policy.proxy import UNKNOWN_NUMBER_VALUE, UnknownValueError

from components.catalog import Cloud, MachineType, by_name

EKS_CLUSTER = "aws:eks/cluster:Cluster"
EKS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
PLACEMENT_GROUP = "aws:ec2/placementGroup:PlacementGroup"
S3_BUCKET = "aws:s3/bucket:Bucket"
S3_ENCRYPTION = "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
S3_PUBLIC_ACCESS = "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"
S3_VERSIONING = "aws:s3/bucketVersioning:BucketVersioning"
S3_POLICY = "aws:s3/bucketPolicy:BucketPolicy"
FSX_LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"
FSX_LINK = "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"
GKE_CLUSTER = "gcp:container/cluster:Cluster"
GKE_NODE_POOL = "gcp:container/nodePool:NodePool"
GCS_BUCKET = "gcp:storage/bucket:Bucket"
GCP_LUSTRE = "gcp:lustre/instance:Instance"
AKS_CLUSTER = "azure-native:containerservice:ManagedCluster"
AKS_AGENT_POOL = "azure-native:containerservice:AgentPool"
# the AgentPool input that names a capacity reservation group (its SDK getter name; tests hold it to the SDK)
AKS_RESERVATION_GROUP = "capacityReservationGroupID"
AKS_MAINTENANCE = "azure-native:containerservice:MaintenanceConfiguration"
AZURE_STORAGE = "azure-native:storage:StorageAccount"
AZURE_BLOB_SERVICE = "azure-native:storage:BlobServiceProperties"
AZURE_LUSTRE = "azure-native:storagecache:AmlFilesystem"

CLUSTERS = (EKS_CLUSTER, GKE_CLUSTER, AKS_CLUSTER)
NODE_POOLS = (EKS_NODE_GROUP, GKE_NODE_POOL, AKS_AGENT_POOL)
BUCKETS = (S3_BUCKET, GCS_BUCKET, AZURE_STORAGE)
LUSTRES = (FSX_LUSTRE, GCP_LUSTRE, AZURE_LUSTRE)

GPU_TAINT = "nvidia.com/gpu"
POOL_LABEL = "gpufleet.io/pool"
FABRIC_LABEL = "gpufleet.io/fabric"
CLUSTER_TAG = "gpufleet-cluster"


UNKNOWN = "[unknown]"  # a value the engine does not know yet (a real `pulumi preview`): present, but unreadable


def get(props: Any, path: str, default: Any = None) -> Any:
    """``get(props, "vpcConfig.endpointPublicAccess")``; a numeric part indexes a list. A value still unknown
    during a real preview reads as UNKNOWN (present) instead of aborting the whole policy."""
    value = props
    for part in path.split("."):
        try:
            if isinstance(value, Mapping) and part in value:
                value = value[part]
            elif isinstance(value, Sequence) and not isinstance(value, str) and part.isdigit() \
                    and int(part) < len(value):
                value = value[int(part)]
            else:
                return default
        except UnknownValueError:
            return UNKNOWN
    return default if value is None else value


def truthy(value: Any) -> bool:
    """Pulumi carries some booleans as strings ("true" in AWS launch templates)."""
    return value is True or (isinstance(value, str) and value.lower() == "true")


def items(value: Any) -> list[Any]:
    """The elements of a list (unknown ones as UNKNOWN); [] for anything else."""
    if not isinstance(value, Sequence) or isinstance(value, str):
        return []
    out = []
    for i in range(len(value)):
        try:
            out.append(value[i])
        except UnknownValueError:
            out.append(UNKNOWN)
    return out


def records(value: Any) -> list[Mapping[str, Any]]:
    """The objects of a list of objects, skipping elements not known yet."""
    return [v for v in items(value) if isinstance(v, Mapping)]


def cloud_of(type_: str) -> Cloud | None:
    prefix = type_.split(":", 1)[0]
    return {"aws": Cloud.AWS, "gcp": Cloud.GCP, "azure-native": Cloud.AZURE}.get(prefix)


def tags_of(type_: str, props: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The cost-allocation tags / labels map of a resource, or None when it carries none."""
    for path in ("tags", "labels", "resourceLabels", "nodeConfig.resourceLabels"):
        value = get(props, path)
        if isinstance(value, Mapping):
            return value
    return None


def region_of(location: str) -> str:
    """us-central1-a -> us-central1; us-east-1a -> us-east-1; eastus -> eastus."""
    parts = location.split("-")
    if len(parts) == 3 and parts[2][-1:].isalpha() and parts[2][:-1].isdigit():
        return location[:-1]  # AWS zone: us-east-1a
    if len(parts) == 3 and len(parts[2]) == 1 and parts[2].isalpha():
        return "-".join(parts[:2])  # GCP zone: us-central1-a
    return location


AWS_SUBNET = "aws:ec2/subnet:Subnet"
AWS_PROVIDER = "pulumi:providers:aws"
Props = Mapping[str, Any]


def pool_region(type_: str, props: Props, deps: Sequence[tuple[str, Props]],
                aws_providers: Sequence[Props]) -> str | None:
    """The region a node pool runs in: EKS from its subnet's zone (else the AWS provider's region), AKS from its
    cluster, GKE from its location. ``deps`` are (type, props) of what the pool depends on. An FSx for Lustre file
    system is placed like an EKS pool (its subnet, else the provider); other Lustre resources by their location."""
    if type_ in (EKS_NODE_GROUP, FSX_LUSTRE):
        found = [region_of(z) for t, p in deps if t == AWS_SUBNET and (z := get(p, "availabilityZone"))]
        found += [r for p in aws_providers if (r := get(p, "region"))]
        return found[0] if found else None
    if type_ == AKS_AGENT_POOL:
        return next((get(p, "location") for t, p in deps if t == AKS_CLUSTER), None)
    location = get(props, "location")
    return region_of(location) if isinstance(location, str) else None


def _effect(value: str) -> str:
    """NoSchedule / NO_SCHEDULE -> NO_SCHEDULE."""
    if value.isupper() or "_" in value:
        return value.upper()
    return re.sub(r"(?<!^)(?=[A-Z])", "_", value).upper()


@dataclass(frozen=True)
class NodePool:
    """A node pool on any cloud, as the policies need it."""

    cloud: Cloud
    machine_types: tuple[str, ...]
    max_nodes: int
    zones: tuple[str, ...] | None  # AWS: subnet ids (one per zone in gpufleet), GCP: node locations, Azure:
    # zones; None while unknown
    labels: Mapping[str, Any]
    taints: tuple[tuple[str, str], ...]  # (key, NO_SCHEDULE-style effect)
    spot: bool
    cluster: str
    capacity: str = "on_demand"  # how its nodes are bought: an offers.csv option (on_demand, spot, reservation,
    # capacity_block, flex_start); an AWS reservation shows only in the launch template: see reserved_by_template

    @property
    def machine(self) -> MachineType | None:
        return by_name(self.cloud, self.machine_types[0]) if self.machine_types else None

    @property
    def gpus_per_node(self) -> int:
        return self.machine.gpus if self.machine else 0

    @property
    def is_gpu(self) -> bool:
        return self.gpus_per_node > 0

    @property
    def wants_interconnect(self) -> bool:
        """The machine has a fabric and the pool did not turn it off (label gpufleet.io/fabric: none)."""
        machine = self.machine
        return bool(machine and machine.interconnect and self.labels.get(FABRIC_LABEL, "") != "none")

    def pool_id(self, name: str) -> str:
        return f"{self.cluster}/{self.labels.get(POOL_LABEL, name)}"


def _count(props: Mapping[str, Any], *paths: str) -> int:
    """A pool's node count: the first of ``paths`` that is set, else 0. One still unknown in a real preview raises
    the SDK's UnknownValueError, so the SDK reports that the policy cannot run during preview (an advisory; it runs
    at `pulumi up`) instead of the whole Analyze call failing on ``int("[unknown]")``."""
    for path in paths:
        value = get(props, path)
        if value == UNKNOWN:
            raise UnknownValueError(UNKNOWN_NUMBER_VALUE, path.split("."))
        if value:
            return int(value)
    return 0


def _zones(value: Any) -> tuple[str, ...] | None:
    return None if value == UNKNOWN else tuple(items(value))


def _taints(value: Any) -> tuple[tuple[str, str], ...]:
    return tuple((t.get("key", ""), _effect(t.get("effect", ""))) for t in records(value))


def _eks(props: Mapping[str, Any]) -> NodePool:
    return NodePool(
        cloud=Cloud.AWS, machine_types=tuple(items(get(props, "instanceTypes"))),
        max_nodes=_count(props, "scalingConfig.maxSize"), zones=_zones(get(props, "subnetIds")),
        labels=get(props, "labels", {}),
        taints=_taints(get(props, "taints")),
        spot=get(props, "capacityType") == "SPOT", cluster=str(get(props, f"tags.{CLUSTER_TAG}", "")),
        capacity={"SPOT": "spot", "CAPACITY_BLOCK": "capacity_block"}.get(get(props, "capacityType"), "on_demand"))


def reserved_by_template(template_props: Mapping[str, Any]) -> bool:
    """An EKS launch template that targets a capacity reservation (an On-Demand Capacity Reservation)."""
    return bool(get(template_props, "capacityReservationSpecification.capacityReservationTarget."
                                    "capacityReservationId"))


def reserved_id(type_: str, props: Mapping[str, Any], templates: Sequence[Mapping[str, Any]]) -> str | None:
    """The reservation, capacity block or capacity reservation group a node pool draws on, as it names it: an EKS
    group through its launch template's target, a GKE pool its specific reservation (``projects/P/reservations/N``
    or N, maybe with a block), an AKS pool its group's resource id; None when it draws on none. A value the engine
    does not know yet is UNKNOWN: a check that matches it against a ledger cannot decide, and says so."""
    if type_ == EKS_NODE_GROUP:
        found = [get(t, "capacityReservationSpecification.capacityReservationTarget.capacityReservationId")
                 for t in templates]
        value = next((f for f in found if f), None)
    elif type_ == GKE_NODE_POOL:
        affinity = get(props, "nodeConfig.reservationAffinity")
        specific = isinstance(affinity, Mapping) and get(affinity, "consumeReservationType") == "SPECIFIC_RESERVATION"
        value = next(iter(items(get(affinity, "values"))), None) if specific else None
    else:
        value = get(props, AKS_RESERVATION_GROUP) if type_ == AKS_AGENT_POOL else None
    return value if isinstance(value, str) and value else None


def _gke_capacity(props: Mapping[str, Any], spot: bool) -> str:
    if spot:
        return "spot"
    if truthy(get(props, "nodeConfig.flexStart")) or truthy(get(props, "queuedProvisioning.enabled")):
        return "flex_start"
    affinity = get(props, "nodeConfig.reservationAffinity.consumeReservationType")
    return "reservation" if affinity == "SPECIFIC_RESERVATION" else "on_demand"


def _gke(props: Mapping[str, Any]) -> NodePool:
    locations = _zones(get(props, "nodeLocations"))
    per_zone = _count(props, "autoscaling.maxNodeCount", "nodeCount", "initialNodeCount")
    max_nodes = _count(props, "autoscaling.totalMaxNodeCount") or per_zone * max(1, len(locations or ()))
    machine = get(props, "nodeConfig.machineType")
    spot = truthy(get(props, "nodeConfig.spot")) or truthy(get(props, "nodeConfig.preemptible"))
    return NodePool(
        cloud=Cloud.GCP, machine_types=(machine,) if machine else (), max_nodes=max_nodes, zones=locations,
        labels=get(props, "nodeConfig.labels", {}),
        taints=_taints(get(props, "nodeConfig.taints")),
        spot=spot, cluster=str(get(props, f"nodeConfig.resourceLabels.{CLUSTER_TAG}", "")),
        capacity=_gke_capacity(props, spot))


def _aks_taint(text: str) -> tuple[str, str]:
    """"nvidia.com/gpu=true:NoSchedule" -> ("nvidia.com/gpu", "NO_SCHEDULE")."""
    key_value, _, effect = text.partition(":")
    return key_value.split("=", 1)[0], _effect(effect)


def _aks(props: Mapping[str, Any]) -> NodePool:
    autoscale = truthy(get(props, "enableAutoScaling"))
    size = get(props, "vmSize")
    return NodePool(
        cloud=Cloud.AZURE, machine_types=(size,) if size else (),
        max_nodes=_count(props, "maxCount" if autoscale else "count"),
        zones=_zones(get(props, "availabilityZones")), labels=get(props, "nodeLabels", {}),
        taints=tuple(_aks_taint(t) for t in items(get(props, "nodeTaints"))),
        spot=get(props, "scaleSetPriority") == "Spot", cluster=str(get(props, f"tags.{CLUSTER_TAG}", "")),
        capacity="spot" if get(props, "scaleSetPriority") == "Spot"
        else "reservation" if get(props, AKS_RESERVATION_GROUP) else "on_demand")


_READERS = {EKS_NODE_GROUP: _eks, GKE_NODE_POOL: _gke, AKS_AGENT_POOL: _aks}


def node_pool(type_: str, props: Mapping[str, Any]) -> NodePool | None:
    reader = _READERS.get(type_)
    return reader(props) if reader else None


def must_pool(type_: str, props: Mapping[str, Any]) -> NodePool:
    """``node_pool`` for a type the caller already filtered to NODE_POOLS."""
    pool = node_pool(type_, props)
    if pool is None:
        raise TypeError(f"{type_} is not a node pool type")
    return pool
