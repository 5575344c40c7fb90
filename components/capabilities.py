"""What each cloud can and cannot do, declared with reasons, so a spec is rejected before anything is built.

Pure data: importing this never imports a cloud SDK.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from components.catalog import Cloud
from components.spec import CapacityType


@dataclass(frozen=True)
class LustreSizing:
    """Allowed capacities for one throughput tier, in TiB as the service counts them (1 TiB = 1,000 GiB
    on FSx for Lustre and Managed Lustre): multiples of ``step_tib`` from ``min_tib``, plus ``also_tib``."""

    step_tib: float
    min_tib: float
    max_tib: float
    also_tib: tuple[float, ...] = ()
    then_step_tib: float | None = None  # a coarser step above max_tib (Managed Lustre's large sizes) ...
    then_max_tib: float | None = None  # ... up to this size

    def allows(self, tib: float) -> bool:
        if any(abs(tib - a) < 1e-9 for a in self.also_tib):
            return True
        if _multiple(tib, self.step_tib) and self.min_tib - 1e-9 <= tib <= self.max_tib + 1e-9:
            return True
        return (self.then_step_tib is not None and self.then_max_tib is not None
                and _multiple(tib, self.then_step_tib) and self.max_tib < tib <= self.then_max_tib + 1e-9)

    def describe(self) -> str:
        extra = "".join(f"{a:g}, " for a in self.also_tib)
        text = f"{extra}multiples of {self.step_tib:g} from {self.min_tib:g} to {self.max_tib:g}"
        if self.then_step_tib is not None and self.then_max_tib is not None:
            text += f", then multiples of {self.then_step_tib:g} up to {self.then_max_tib:g}"
        return text


def _multiple(value: float, step: float) -> bool:
    steps = value / step
    return abs(steps - round(steps)) < 1e-9


@dataclass(frozen=True)
class CloudCapabilities:
    cloud: Cloud
    kubernetes_versions: tuple[str, ...]
    capacity_types: dict[CapacityType, str]  # supported -> how the cloud names it
    unsupported_capacity: dict[CapacityType, str]  # unsupported -> why, and what to use instead
    capacity_needs_id: frozenset[CapacityType]
    operator_driver_refused: str = ""  # why the GPU operator cannot own the driver here ("": it can)
    capacity_blocks_for: tuple[str, ...] = ()  # machine type prefixes sold as capacity blocks
    reservation_blocks: bool = False  # can a pool target one block inside a reservation
    max_compact_nodes: int | None = None  # nodes one compact placement can hold (None: no fixed limit)
    # capacity types that place a multi-node interconnect pool's nodes themselves, so the pool may go without compact
    # placement (the policy pack's interconnect-placement exemptions); None: no compact placement needed at all
    placed_by_capacity: frozenset[CapacityType] | None = None
    lustre_service: str = ""
    lustre_tiers: dict[int, LustreSizing] = field(default_factory=dict)
    lustre_efa_tiers: dict[int, LustreSizing] = field(default_factory=dict)  # sizes when Lustre speaks EFA, if other
    network_id_pattern: str = ""  # an existing VPC / VNet id
    network_id_example: str = ""
    account_kind: str = ""  # what the cloud calls FleetSpec.account: account id / project id / subscription id
    account_pattern: str = ""  # "" : any value is accepted
    account_example: str = ""
    account_required: bool = False  # the translator cannot build without it
    reservation_id_pattern: str = ""  # capacity.id for reservations; a named group "zone" pins the zone
    reservation_id_example: str = ""
    spot_price_cap: bool = True  # can spot capacity carry a maximum price
    spot_price_cap_why: str = ""  # why not, with the source
    admin_pattern: str = ""  # a cluster admin principal ("" : any value)
    admin_example: str = ""
    admins_required: str = ""  # why a cluster without admins is unusable here ("" : it is not)
    min_zones: int = 1  # zones (subnets) the control plane needs
    zone_name_pattern: str = ""  # a zone *name* where the catalogue keys zones by id ("": names are the keys)
    zone_id_example: str = ""
    min_zones_why: str = ""
    scale_from_zero: frozenset[CapacityType] = frozenset()  # capacity types whose pools must have min 0
    capacity_for: dict[str, frozenset[CapacityType]] = field(default_factory=dict)  # machine prefix -> only these
    pool_name_pattern: str = ""  # the cloud's own node pool naming rule, stricter than the neutral one
    pool_name_rule: str = ""  # that rule in words
    pool_name_max: int = 32
    fabric_feature: str = ""  # "<namespace>/<feature>" a subscription must register for fabric pools
    fabric_feature_for: tuple[str, ...] = ()  # fabrics (Fabric values) whose pools need fabric_feature
    fabric_feature_refused_by: tuple[str, ...] = ()  # machine prefixes that must not share a subscription with it

    def needs_fabric_feature(self, machine: str, fabric: str) -> bool:
        return bool(self.fabric_feature) and fabric in self.fabric_feature_for and not self.refuses_fabric_feature(
            machine)

    def refuses_fabric_feature(self, machine: str) -> bool:
        return bool(self.fabric_feature_refused_by) and machine.startswith(self.fabric_feature_refused_by)


_FLEX = "flex-start (queued provisioning) is a GCP Dynamic Workload Scheduler feature"

CAPABILITIES: dict[Cloud, CloudCapabilities] = {
    Cloud.AWS: CloudCapabilities(
        cloud=Cloud.AWS,
        operator_driver_refused="the EKS AL2023 NVIDIA AMI ships the driver together with the EFA "
                                "installer, so the GPU operator runs with its driver disabled",
        kubernetes_versions=("1.31", "1.32", "1.33", "1.34"),
        capacity_types={CapacityType.ON_DEMAND: "ON_DEMAND", CapacityType.SPOT: "SPOT",
                        CapacityType.RESERVATION: "ON_DEMAND (capacity reservation)",
                        CapacityType.CAPACITY_BLOCK: "CAPACITY_BLOCK"},
        unsupported_capacity={CapacityType.FLEX_START: f"{_FLEX}; on AWS use capacity_block with a "
                              "Capacity Block for ML id (cr-...)"},
        capacity_needs_id=frozenset({CapacityType.RESERVATION, CapacityType.CAPACITY_BLOCK}),
        capacity_blocks_for=("p4d.", "p4de.", "p5.", "p5e.", "p5en.", "p6-b200."),
        placed_by_capacity=frozenset({CapacityType.CAPACITY_BLOCK}),  # a block is one UltraCluster placement
        lustre_service="FSx for Lustre PERSISTENT_2",
        lustre_tiers={t: LustreSizing(step_tib=2.4, min_tib=1.2, max_tib=2400.0, also_tib=(1.2,))
                      for t in (125, 250, 500, 1000)},
        # An EFA-enabled file system (the cluster has EFA pools) has one file server per 4.8 / 9.6 / 19.2 / 38.4 TiB at
        # 1000 / 500 / 250 / 125 MB/s/TiB, and is sized in those steps: FSx for Lustre User Guide,
        # https://docs.aws.amazon.com/fsx/latest/LustreGuide/increase-storage-capacity.html ("for EFA-enabled file
        # systems ... multiples of 38400 GiB for 125 MBps/TiB, 19200 GiB for 250, 9600 GiB for 500, 4800 GiB for
        # 1000", read 2026-12-02 in its ja_jp translation) and getting-started.html (create: "increments of 4.8 TiB,
        # 9.6 TiB, 19.2 TiB, and 38.4 TiB for 1000, 500, 250, and 125 MBps/TiB"); AWS ParallelCluster's EFA-enabled
        # FSx tutorial creates 38400 GiB at 125. botocore's CreateFileSystem StorageCapacity doc (1.43.67) does not
        # say it.
        # (Up to the same 2,400 TiB as above: 2,380.8 is the last 38.4 step below it.)
        lustre_efa_tiers={t: LustreSizing(step_tib=step, min_tib=step, max_tib=top)
                          for t, step, top in ((1000, 4.8, 2400.0), (500, 9.6, 2400.0), (250, 19.2, 2400.0),
                                               (125, 38.4, 2380.8))},
        network_id_pattern=r"^vpc-[0-9a-f]{8,17}$",
        network_id_example="vpc-0123456789abcdef0",
        # https://docs.aws.amazon.com/accounts/latest/reference/manage-acct-identifiers.html: 12 digits
        account_kind="account id",
        account_pattern=r"^[0-9]{12}$",
        account_example="123456789012",
        # On-Demand Capacity Reservations and Capacity Blocks share the id form cr- + 17 hex digits:
        # https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CapacityReservation.html
        reservation_id_pattern=r"^cr-[0-9a-f]{17}$",
        reservation_id_example="cr-0123456789abcdef0",
        spot_price_cap=False,
        spot_price_cap_why="EKS managed node groups buy spot through capacityType SPOT and refuse spot market "
                           "options (RequestSpotInstances) in their launch template, so no maximum price can be "
                           "set: https://docs.aws.amazon.com/eks/latest/APIReference/API_LaunchTemplateSpecification"
                           ".html",
        # EKS access entries take IAM role or user ARNs:
        # https://docs.aws.amazon.com/eks/latest/userguide/creating-access-entries.html
        admin_pattern=r"^arn:aws(-cn|-us-gov)?:iam::[0-9]{12}:(role|user)/[A-Za-z0-9+=,.@_/-]{1,512}$",
        admin_example="arn:aws:iam::123456789012:role/ml-platform-admin",
        admins_required="the cluster uses API access entries without bootstrapping its creator as admin, so "
                        "without admins nobody can reach the Kubernetes API",
        # Zone names map to physical zones per account; zone ids (use1-az6) do not, so offerings and the spec use ids:
        # https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html
        zone_name_pattern=r"^[a-z]{2}(-gov)?-[a-z]+-[0-9][a-z]$",
        zone_id_example="use1-az6",
        min_zones=2,
        min_zones_why="the EKS control plane needs subnets in at least two Availability Zones: "
                      "https://docs.aws.amazon.com/eks/latest/userguide/network-reqs.html",
    ),
    Cloud.GCP: CloudCapabilities(
        cloud=Cloud.GCP,
        kubernetes_versions=("1.31", "1.32", "1.33", "1.34"),
        capacity_types={CapacityType.ON_DEMAND: "on-demand", CapacityType.SPOT: "spot",
                        CapacityType.RESERVATION: "SPECIFIC_RESERVATION",
                        CapacityType.FLEX_START: "flex-start with queued provisioning"},
        unsupported_capacity={CapacityType.CAPACITY_BLOCK: "capacity blocks are an AWS product; on GCP "
                              "use a reservation (optionally one block of it) or flex_start"},
        capacity_needs_id=frozenset({CapacityType.RESERVATION}),
        reservation_blocks=True,
        max_compact_nodes=1500,  # https://cloud.google.com/kubernetes-engine/docs/how-to/compact-placement
        # a specific reservation's capacity and DWS flex-start (queued provisioning) come placed
        placed_by_capacity=frozenset({CapacityType.RESERVATION, CapacityType.FLEX_START}),
        lustre_service="Managed Lustre",
        # https://cloud.google.com/managed-lustre/docs/performance-tiers (capacity_gib / 1000): a fine step
        # up to a threshold, then a coarse one
        lustre_tiers={1000: LustreSizing(9, 9, 1530, then_step_tib=72, then_max_tib=10008),
                      500: LustreSizing(18, 18, 3060, then_step_tib=144, then_max_tib=20016),
                      250: LustreSizing(36, 36, 6120, then_step_tib=288, then_max_tib=40032),
                      125: LustreSizing(72, 72, 12240)},
        network_id_pattern=r"^projects/[a-z][-a-z0-9]{4,28}[a-z0-9]/global/networks/[a-z]([-a-z0-9]*[a-z0-9])?$",
        network_id_example="projects/my-project/global/networks/train-vpc",
        account_kind="project id",
        account_pattern=r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$",
        account_example="ml-train-prod",
        # optional: without it the provider takes the project from the environment (GOOGLE_CLOUD_PROJECT or
        # gcloud's config) and the program reads it back through gcp.organizations.get_client_config
        # a reservation of this project (name), a shared one (projects/<owner>/reservations/<name>), or
        # either with its zone (.../zones/<zone>/reservations/<name>), which is then checked against the pool's
        reservation_id_pattern=r"^(?:(?:projects/(?P<project>[a-z][-a-z0-9]{4,28}[a-z0-9])/)?"
                               r"(?:zones/(?P<zone>[a-z]+-[a-z]+[0-9]+-[a-z])/)?reservations/)?"
                               r"(?P<name>[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)$",
        reservation_id_example="h100-resv, projects/shared-capacity/reservations/h100-resv or "
                               "projects/p/zones/us-central1-a/reservations/h100-resv",
        spot_price_cap=False,  # Spot VMs have no bid price on GCP
        # a Google group email (the default kind) or a kind-prefixed IAM member
        admin_pattern=r"^((user|group|serviceAccount):)?[^@\s:]+@[^@\s]+\.[a-z]{2,}$|^(principal|principalSet):"
                      r"//\S+$|^domain:[^@\s]+\.[a-z]{2,}$",
        admin_example="ml-platform-admins@example.com or user:alice@example.com",
        scale_from_zero=frozenset({CapacityType.FLEX_START}),  # nodes arrive only through ProvisioningRequests
        # A3 Ultra and A4 are not sold on demand: https://cloud.google.com/compute/docs/instances/choose-consumption-option
        capacity_for={prefix: frozenset({CapacityType.RESERVATION, CapacityType.FLEX_START, CapacityType.SPOT})
                      for prefix in ("a3-ultragpu-", "a4-highgpu-")},
    ),
    Cloud.AZURE: CloudCapabilities(
        cloud=Cloud.AZURE,
        kubernetes_versions=("1.31", "1.32", "1.33", "1.34"),
        capacity_types={CapacityType.ON_DEMAND: "Regular", CapacityType.SPOT: "Spot",
                        CapacityType.RESERVATION: "capacity reservation group"},
        unsupported_capacity={
            CapacityType.CAPACITY_BLOCK: "capacity blocks are an AWS product; on Azure use a reservation "
            "with a capacity reservation group id",
            CapacityType.FLEX_START: f"{_FLEX}; on Azure use on_demand or a reservation"},
        capacity_needs_id=frozenset({CapacityType.RESERVATION}),
        max_compact_nodes=None,
        lustre_service="Azure Managed Lustre",
        # SKUs AMLFS-Durable-Premium-<tier>, self-service sizes and increments in TiB:
        # https://learn.microsoft.com/azure/azure-managed-lustre/amlfs-overview
        lustre_tiers={40: LustreSizing(48, 48, 768), 125: LustreSizing(16, 16, 128),
                      250: LustreSizing(8, 8, 128), 500: LustreSizing(4, 4, 128)},
        network_id_pattern=r"^/subscriptions/[0-9a-f-]{36}/resourceGroups/[^/]+/providers/"
                           r"Microsoft\.Network/virtualNetworks/[^/]+$",
        network_id_example="/subscriptions/<uuid>/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet",
        account_kind="subscription id",
        account_pattern=r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
        account_example="00000000-0000-0000-0000-000000000000",
        # capacity.id of a reservation: a capacity reservation group (its reservations name the VM size and zones)
        reservation_id_pattern=r"^/subscriptions/[0-9a-fA-F-]{36}/resourceGroups/[^/]+/providers/"
                               r"Microsoft\.Compute/capacityReservationGroups/[^/]+$",
        reservation_id_example="/subscriptions/<uuid>/resourceGroups/<rg>/providers/Microsoft.Compute/"
                               "capacityReservationGroups/<name>",
        # AKS admin groups are Entra ID group object ids (aadProfile.adminGroupObjectIDs)
        admin_pattern=r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
        admin_example="5b8f3c2e-7a41-4d6b-9e0f-2c3d4e5f6a7b",
        # https://learn.microsoft.com/azure/aks/create-node-pools (Linux pools: 1-12 characters)
        pool_name_pattern=r"^[a-z][a-z0-9]{0,11}$",
        pool_name_rule="AKS node pool names are 1-12 lowercase letters and digits, starting with a letter, no dashes",
        pool_name_max=12,
        # InfiniBand pools land on one IB network only with this subscription feature; GB200 / GB300 racks
        # bring their own NVLink/IB domain and must not be in a subscription that has it registered.
        fabric_feature="Microsoft.ContainerService/AKSInfinibandSupport",
        fabric_feature_for=("infiniband",),
        fabric_feature_refused_by=("Standard_ND128isr_NDR_GB200_v6", "Standard_ND128isr_GB300_v6"),
    ),
}


def capabilities(cloud: Cloud) -> CloudCapabilities:
    return CAPABILITIES[cloud]
