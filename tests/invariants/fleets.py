"""Hypothesis strategies that build VALID fleet descriptions (raw gpufleet:fleet dicts) on every cloud.

Validity is built in by construction from the catalogue rows and the cloud rules written out here (not by asking
components.validate, whose leniency or strictness is itself under test): every machine type of the catalogue,
every capacity type a machine is sold as, 1..3 zones, pools in different zones, pools with fewer than 8 GPUs per
node, nodes.desired distinct from min and max, Kueue teams over several GPU models, Lustre on each tier.
"""

from __future__ import annotations

from typing import Any

from hypothesis import assume
from hypothesis import strategies as st

from components import catalog
from components.catalog import Cloud, Fabric, MachineType

# Facts the strategies must respect, as the clouds document them (the validator must accept all of these):
# AWS Capacity Blocks for ML cover P4d/P4de/P5/P5e/P5en/P6 (https://aws.amazon.com/ec2/capacityblocks/).
CAPACITY_BLOCK_PREFIXES = ("p4d.", "p4de.", "p5.", "p5e.", "p5en.", "p6-b200.")
# A3 Ultra / A4 are sold through reservations, flex-start (DWS) and Spot only
# (https://cloud.google.com/compute/docs/instances/choose-consumption-option).
GCP_NOT_ON_DEMAND = ("a3-ultragpu-", "a4-highgpu-")
# GB200 racks bring their own IB domain and must not share a subscription with AKSInfinibandSupport.
AZURE_GB200 = "Standard_ND128isr_NDR_GB200_v6"
# Lustre sizes per throughput tier that each service documents as valid (TiB).
LUSTRE_SIZES: dict[Cloud, dict[int, tuple[float, ...]]] = {
    # FSx for Lustre PERSISTENT_2: 1.2 TiB, then multiples of 2.4 TiB
    # https://docs.aws.amazon.com/fsx/latest/LustreGuide/managing-storage-capacity.html; EFA-enabled (a fleet with
    # EFA pools): multiples of 4.8 / 9.6 / 19.2 / 38.4 TiB at 1000 / 500 / 250 / 125 (getting-started.html).
    # Sizes valid either way, as the drawn pools decide EFA:
    Cloud.AWS: {1000: (4.8, 9.6, 19.2), 500: (9.6, 19.2), 250: (19.2, 38.4), 125: (38.4, 76.8)},
    # Managed Lustre: https://cloud.google.com/managed-lustre/docs/performance-tiers
    Cloud.GCP: {1000: (9, 18, 36), 500: (18, 36), 250: (36, 72), 125: (72, 144)},
    # Azure Managed Lustre: https://learn.microsoft.com/azure/azure-managed-lustre/amlfs-overview
    Cloud.AZURE: {40: (48, 96), 125: (16, 32), 250: (8, 16), 500: (4, 8, 16)},
}
ACCOUNTS = {Cloud.AWS: "123456789012", Cloud.GCP: "ml-train-prod", Cloud.AZURE: "3f2a6b1c-9d4e-4f5a-8b7c-1d2e3f4a5b6c"}
ADMINS = {Cloud.AWS: "arn:aws:iam::123456789012:role/ml-platform-admin", Cloud.GCP: "group:ml-admins@example.com",
          Cloud.AZURE: "5b8f3c2e-7a41-4d6b-9e0f-2c3d4e5f6a7b"}
AZURE_CRG = ("/subscriptions/3f2a6b1c-9d4e-4f5a-8b7c-1d2e3f4a5b6c/resourceGroups/capacity/providers/"
             "Microsoft.Compute/capacityReservationGroups/crg-{n}")
# AWS zones are zone ids (use1-az6: the same physical zone in every account) and an EKS control plane needs subnets
# in two of them (https://docs.aws.amazon.com/eks/latest/userguide/network-reqs.html).
MIN_ZONES = {Cloud.AWS: 2, Cloud.GCP: 1, Cloud.AZURE: 1}
# Capacity that comes placed, so an interconnect pool may drop compact placement: an AWS Capacity Block is one
# UltraCluster placement (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-capacity-blocks.html); GKE specific
# reservations and flex-start (DWS) provision placed capacity; AKS pools need no compact placement.
PLACED_BY_CAPACITY = {Cloud.AWS: ("capacity_block",), Cloud.GCP: ("reservation", "flex_start"),
                      Cloud.AZURE: ("on_demand", "spot", "reservation")}
MAX_NODES = 32  # 2 clusters x 3 pools x 32 nodes x 8 GPUs stays under the pack's default 2,048-GPU stack cap


def gpu_machines(cloud: Cloud) -> list[MachineType]:
    return [m for m in catalog.for_cloud(cloud) if m.gpus > 0]


def capacity_types(cloud: Cloud, machine: MachineType) -> list[str]:
    if cloud is Cloud.AWS:
        return ["on_demand", "spot", "reservation"] + (
            ["capacity_block"] if machine.name.startswith(CAPACITY_BLOCK_PREFIXES) else [])
    if cloud is Cloud.GCP:
        if machine.name.startswith(GCP_NOT_ON_DEMAND):
            return ["reservation", "flex_start", "spot"]
        return ["on_demand", "spot", "reservation", "flex_start"]
    return ["on_demand", "spot", "reservation"]


@st.composite
def capacity(draw: st.DrawFn, cloud: Cloud, machine: MachineType, zone: str, n: int) -> dict[str, Any]:
    kind = draw(st.sampled_from(capacity_types(cloud, machine)))
    out: dict[str, Any] = {"type": kind}
    if kind in ("reservation", "capacity_block") and cloud is Cloud.AWS:
        out["id"] = f"cr-0a1b2c3d4e5f6071{n}"
    elif kind == "reservation" and cloud is Cloud.GCP:
        out["id"] = draw(st.sampled_from([f"resv-{n}", f"projects/shared-capacity/reservations/resv-{n}",
                                          f"projects/shared-capacity/zones/{zone}/reservations/resv-{n}"]))
        if draw(st.booleans()):
            out["block"] = f"block-{n}"
    elif kind == "reservation":
        out["id"] = AZURE_CRG.format(n=n)
    elif kind == "spot" and cloud is Cloud.AZURE and draw(st.booleans()):  # EKS/GKE pools cannot cap the spot price
        out["max_usd_per_hour"] = draw(st.sampled_from([0.5, 4.5, 120.0]))
    return out


@st.composite
def nodes(draw: st.DrawFn, scale_from_zero: bool) -> dict[str, Any]:
    high = draw(st.integers(1, MAX_NODES))
    if scale_from_zero:
        return {"min": 0, "max": high}
    low = draw(st.integers(0, high))
    out: dict[str, Any] = {"min": low, "max": high}
    if draw(st.booleans()):
        out["desired"] = draw(st.integers(low, high))  # often strictly between min and max
    return out


def _spelling(machine: MachineType) -> list[dict[str, Any]]:
    """The ways a pool may name this machine: always by name; by accelerator (+gpus) where that is unambiguous."""
    ways: list[dict[str, Any]] = [{"machine_type": machine.name}]
    same = catalog.matching(machine.cloud, machine.gpu, machine.gpus)
    if len(same) == 1 or machine.default_for_gpu:
        ways.append({"accelerator": machine.gpu, "gpus": machine.gpus})
        if len(catalog.matching(machine.cloud, machine.gpu, None)) == 1:
            ways.append({"accelerator": machine.gpu})
    return ways


@st.composite
def pool(draw: st.DrawFn, cloud: Cloud, region: str, machines: list[MachineType], n: int,
         zone_choices: list[str]) -> dict[str, Any]:
    offered = [m for m in machines if set(catalog.regions(cloud, m.name).get(region, ())) & set(zone_choices)]
    machine = draw(st.sampled_from(offered))
    zones = [z for z in zone_choices if z in catalog.regions(cloud, machine.name)[region]]
    zone = draw(st.sampled_from(zones))
    kind = dict(draw(st.sampled_from(_spelling(machine))))
    out: dict[str, Any] = {"name": f"gpu{n}", **kind, "zone": zone}
    out["capacity"] = draw(capacity(cloud, machine, zone, n))
    out["nodes"] = draw(nodes(out["capacity"]["type"] == "flex_start"))
    out["interconnect"] = draw(st.sampled_from(["auto", "off", "required"] if machine.fabric is not Fabric.NONE
                                               else ["auto", "off"]))
    # compact_placement: false on a multi-node fabric pool is invalid unless the capacity comes placed by the cloud
    wired = machine.fabric is not Fabric.NONE and out["interconnect"] != "off" and out["nodes"]["max"] > 1
    loose = not wired or out["capacity"]["type"] in PLACED_BY_CAPACITY[cloud]
    out["compact_placement"] = draw(st.sampled_from([None, True, False] if loose else [None, True]))
    if draw(st.booleans()):
        out["disk_gib"] = draw(st.sampled_from([50, 200, 16384]))
    if draw(st.booleans()):
        out["labels"] = {"workload": "training"}
        out["taints"] = [{"key": "dedicated", "value": "train", "effect": "NoSchedule"}]
    return out


@st.composite
def kueue_teams(draw: st.DrawFn, pools: list[dict[str, Any]], cloud: Cloud) -> list[dict[str, Any]]:
    supply: dict[str, int] = {}
    for p in pools:
        machine = _machine_of(cloud, p)
        supply[machine.gpu] = supply.get(machine.gpu, 0) + p["nodes"]["max"] * machine.gpus
    teams = []
    for t in range(draw(st.integers(0, 3))):
        models = draw(st.lists(st.sampled_from(sorted(supply)), min_size=1, max_size=len(supply), unique=True))
        gpus = {}
        for gpu in models:
            if supply[gpu] == 0:
                continue
            gpus[gpu] = draw(st.integers(1, supply[gpu]))
            supply[gpu] -= gpus[gpu]
        if not gpus:
            break
        team: dict[str, Any] = {"name": f"team{t}", "gpus": gpus}
        if draw(st.booleans()):
            team["borrowing_limit_gpus"] = draw(st.integers(0, 16))
        teams.append(team)
    return teams


def _machine_of(cloud: Cloud, p: dict[str, Any]) -> MachineType:
    if "machine_type" in p:
        found = catalog.by_name(cloud, p["machine_type"])
    else:
        found = next(m for m in catalog.matching(cloud, p["accelerator"], p.get("gpus"))
                     if len(catalog.matching(cloud, p["accelerator"], p.get("gpus"))) == 1 or m.default_for_gpu)
    assert found is not None
    return found


def machine_of(cloud: Cloud, p: dict[str, Any]) -> MachineType:
    """The catalogue row a generated pool names (by construction unambiguous)."""
    return _machine_of(cloud, p)


def _regions(cloud: Cloud, machines: list[MachineType]) -> list[str]:
    return sorted({r for m in machines for r in catalog.regions(cloud, m.name)})


def _region_zones(cloud: Cloud, region: str) -> list[str]:
    return sorted({z for m in catalog.for_cloud(cloud) for z in catalog.regions(cloud, m.name).get(region, ())})


@st.composite
def cluster(draw: st.DrawFn, cloud: Cloud, name: str, machines: list[MachineType], driver: str) -> dict[str, Any]:
    region = draw(st.sampled_from(_regions(cloud, machines)))
    # zones where no system pool size is offered (e.g. use1-az3 has none of the catalogue's CPU types) make any
    # cluster invalid: left out
    offered_zones = sorted({z for m in machines for z in catalog.regions(cloud, m.name).get(region, ())
                            if _any_system_fits(cloud, region, z)})
    zones = draw(st.lists(st.sampled_from(offered_zones), min_size=1, max_size=min(3, len(offered_zones)),
                          unique=True))
    region_zones = _region_zones(cloud, region)
    extra = [z for z in region_zones if z not in zones and _any_system_fits(cloud, region, z)]
    if extra and len(zones) < 3 and (len(zones) < MIN_ZONES[cloud] or draw(st.booleans())):
        zones.append(draw(st.sampled_from(extra)))  # a zone no pool uses
    pools = [draw(pool(cloud, region, machines, n, zones)) for n in range(draw(st.integers(1, 3)))]
    out: dict[str, Any] = {"name": name, "region": region, "zones": zones,
                           "kubernetes_version": draw(st.sampled_from(["1.31", "1.32", "1.33", "1.34"])),
                           "node_pools": pools}
    for p in pools:  # a pool on the cluster's first zone may leave zone unset when that is unambiguous
        if p["zone"] == zones[0] and (len(zones) == 1 or p["compact_placement"] is False) and draw(st.booleans()):
            del p["zone"]
    if draw(st.booleans()):
        out["endpoint"] = "public"
        out["public_access_cidrs"] = draw(st.sampled_from([["203.0.113.0/24"], ["198.51.100.7/32", "10.0.0.0/8"]]))
        out["deploy"] = {"egress_cidrs": [out["public_access_cidrs"][0]]}  # the deployer egresses from the first
    if cloud is Cloud.AWS or draw(st.booleans()):  # EKS access entries: no admin, nobody reaches the API
        out["admins"] = [ADMINS[cloud]]
    # the system pool spreads over every cluster zone: only sizes whose machine type every zone offers
    sizes = [(v, m) for v, m in SYSTEM_SIZES if _system_fits(cloud, region, zones, v, m)]
    assume(sizes)
    vcpus, memory = draw(st.sampled_from(sizes))
    out["system_pool"] = {"vcpus": vcpus, "memory_gib": memory, "nodes": {"min": 1, "max": 3}}
    buckets = [{"name": "checkpoints"}] if draw(st.booleans()) else []
    if buckets and draw(st.booleans()):
        buckets.append({"name": "datasets", "versioning": True, "noncurrent_days": 1, "archive_after_days": 30})
    storage: dict[str, Any] = {"buckets": buckets}
    if buckets and draw(st.booleans()):
        tier = draw(st.sampled_from(sorted(LUSTRE_SIZES[cloud])))
        storage["lustre"] = {"capacity_tib": draw(st.sampled_from(LUSTRE_SIZES[cloud][tier])),
                             "throughput_mbps_per_tib": tier, "bucket": "checkpoints"}
    out["storage"] = storage
    out["addons"] = {"gpu_driver": driver,
                     "monitoring": draw(st.booleans()), "kueue_teams": draw(kueue_teams(pools, cloud))}
    return out


SYSTEM_SIZES = [(v, m) for v in (2, 4, 8, 16) for m in (4, 16, 32, 64)]


def _any_system_fits(cloud: Cloud, region: str, zone: str) -> bool:
    return any(_system_fits(cloud, region, [zone], v, m) for v, m in SYSTEM_SIZES)


def _system_fits(cloud: Cloud, region: str, zones: list[str], vcpus: int, memory_gib: int) -> bool:
    machine = catalog.smallest_cpu(cloud, vcpus, memory_gib)
    return machine is not None and set(zones) <= set(catalog.regions(cloud, machine.name).get(region, ()))


@st.composite
def fleets(draw: st.DrawFn, cloud: Cloud | None = None) -> dict[str, Any]:
    """A valid raw fleet: one or two clusters of one cloud."""
    cloud = cloud or draw(st.sampled_from(list(Cloud)))
    machines = gpu_machines(cloud)
    if cloud is Cloud.AZURE:  # GB200 and InfiniBand pools cannot share a subscription
        ib = [m for m in machines if m.fabric is Fabric.INFINIBAND and m.name != AZURE_GB200]
        gb200 = [m for m in machines if m.name == AZURE_GB200]
        plain = [m for m in machines if m.fabric is Fabric.NONE]
        machines = draw(st.sampled_from([ib + plain, gb200 + plain]))
    count = draw(st.integers(1, 2))
    # one driver owner per stack: mixed owners across clusters trip gpu-driver-single-owner (a known gap)
    driver = "cloud" if cloud is Cloud.AWS else draw(st.sampled_from(["cloud", "operator"]))
    fleet: dict[str, Any] = {"cloud": cloud.value, "tags": {"team": "ml-platform", "cost_center": "cc-4100"},
                             "monthly_budget_usd": 1e12,
                             "clusters": [draw(cluster(cloud, f"c{i}", machines, driver)) for i in range(count)]}
    if draw(st.booleans()):  # optional everywhere: GCP then reads the project from the provider
        fleet["account"] = ACCOUNTS[cloud]
    return fleet


def one_machine_fleet(cloud: Cloud, machine: MachineType) -> dict[str, Any]:
    """The smallest valid fleet around one machine type (every catalogue row gets one, deterministically)."""
    region, zones = next((r, z) for r, z in sorted(catalog.regions(cloud, machine.name).items())
                         if len(_region_zones(cloud, r)) >= MIN_ZONES[cloud])
    others = [z for z in _region_zones(cloud, region) if z != zones[0]]
    cluster_zones = [zones[0], *others[:MIN_ZONES[cloud] - 1]]
    kind = capacity_types(cloud, machine)[0]
    cap: dict[str, Any] = {"type": kind}
    if kind == "reservation":
        cap["id"] = "resv-1" if cloud is Cloud.GCP else AZURE_CRG.format(n=1)
    fleet = {"cloud": cloud.value, "tags": {"team": "ml-platform", "cost_center": "cc-4100"},
             "monthly_budget_usd": 1e12,
             "clusters": [{"name": "one", "region": region, "zones": cluster_zones, "admins": [ADMINS[cloud]],
                           "node_pools": [{"name": "gpu0", "machine_type": machine.name, "zone": zones[0],
                                           "nodes": {"min": 0, "max": 2, "desired": 1}, "capacity": cap}],
                           "addons": {"kueue_teams": [{"name": "team0", "gpus": {machine.gpu: machine.gpus}}]}}]}
    if cloud is Cloud.GCP:
        fleet["account"] = ACCOUNTS[cloud]
    return fleet
