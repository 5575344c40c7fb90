"""Every validation rule just below, at and just above its threshold, and on each of its branches.

Table rows: (label, cloud, change, expected) where ``change`` edits a minimal valid fleet of that cloud and
``expected`` is None (the fleet resolves) or the exact config path of the one problem reported. The limits are typed
in with their sources, never read from components.capabilities.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from components.catalog import Cloud
from components.errors import SpecError
from components.validate import resolve

Change = Callable[[dict[str, Any]], None]
GCP_PROJECT = "ml-train-prod"
AZURE_CRG = ("/subscriptions/3f2a6b1c-9d4e-4f5a-8b7c-1d2e3f4a5b6c/resourceGroups/capacity/providers/"
             "Microsoft.Compute/capacityReservationGroups/crg")
AWS_CR = "cr-0a1b2c3d4e5f60718"  # the 17-hex-digit form of https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CapacityReservation.html
AWS_ADMIN = "arn:aws:iam::123456789012:role/ml-platform-admin"


def base(cloud: Cloud) -> dict[str, Any]:
    """A minimal valid fleet: one cluster, one 8-GPU interconnect pool in the first zone, one team. AWS: zones by
    zone id, two of them (the EKS control plane needs subnets in two AZs:
    https://docs.aws.amazon.com/eks/latest/userguide/network-reqs.html), the pool pinned to the first, and one
    admin (access entries without the creator bootstrapped as admin)."""
    machine, region, zones = {
        Cloud.AWS: ("p5.48xlarge", "us-east-1", ["use1-az6", "use1-az4", "use1-az1"]),
        Cloud.GCP: ("a3-megagpu-8g", "us-central1", ["us-central1-a", "us-central1-b", "us-central1-c"]),
        Cloud.AZURE: ("Standard_ND96isr_H100_v5", "eastus2", ["1", "2", "3"]),
    }[cloud]
    fleet: dict[str, Any] = {
        "cloud": cloud.value, "monthly_budget_usd": 1000, "tags": {"team": "ml", "cost_center": "cc-1"},
        "clusters": [{"name": "train", "region": region, "zones": zones[:1],
                      "node_pools": [{"name": "gpu", "machine_type": machine, "nodes": {"min": 1, "max": 4}}],
                      "storage": {"buckets": [{"name": "ckpt"}]},
                      "addons": {"kueue_teams": [{"name": "team", "gpus": {"H100": 8}}]}}]}
    if cloud is Cloud.AWS:
        fleet["clusters"][0].update({"zones": zones[:2], "admins": [AWS_ADMIN]})
        fleet["clusters"][0]["node_pools"][0]["zone"] = zones[0]
    if cloud is Cloud.GCP:
        fleet["account"] = GCP_PROJECT
    fleet["_zones"] = zones
    return fleet


def cluster(f: dict[str, Any]) -> dict[str, Any]:
    return f["clusters"][0]


def pool(f: dict[str, Any]) -> dict[str, Any]:
    return f["clusters"][0]["node_pools"][0]


def sets(path: str, value: Any) -> Change:
    """Set a dotted path (list indices as numbers) inside the first pool ('pool.'), cluster ('cluster.') or fleet."""
    def change(f: dict[str, Any]) -> None:
        where, _, rest = path.partition(".")
        node: Any = {"pool": pool(f), "cluster": cluster(f), "fleet": f}[where]
        *parents, last = rest.split(".")
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
        node[last] = value
    return change


NO_EFA = sets("pool.interconnect", "off")  # the base AWS pool's p5 uses EFA, which sizes FSx apart


def no_pool_zone(f: dict[str, Any]) -> None:
    pool(f).pop("zone", None)


def both(*changes: Change) -> Change:
    def change(f: dict[str, Any]) -> None:
        for c in changes:
            c(f)
    return change


def zones(n: int) -> Change:
    return lambda f: cluster(f).__setitem__("zones", f["_zones"][:n])


def public(*cidrs: str) -> Change:
    """A public endpoint, deployed from inside the network (its reach: tests/components/test_deploy_path.py)."""
    return both(sets("cluster.endpoint", "public"), sets("cluster.public_access_cidrs", list(cidrs)),
                sets("cluster.deploy", {"deployer": "network"}))


def flex(nodes: dict[str, int]) -> Change:
    return both(sets("pool.nodes", nodes), sets("pool.capacity", {"type": "flex_start"}))


def a10g(quota: int) -> Change:
    return both(sets("pool.machine_type", "g5.12xlarge"),
                sets("cluster.addons.kueue_teams", [{"name": "a", "gpus": {"A10G": quota}}]))


def lustre(tib: float, tier: int) -> Change:
    return sets("cluster.storage.lustre", {"capacity_tib": tib, "throughput_mbps_per_tib": tier, "bucket": "ckpt"})


P = "clusters[0].node_pools[0]"
C = "clusters[0]"
A, G, Z = Cloud.AWS, Cloud.GCP, Cloud.AZURE

CASES: list[tuple[str, Cloud, Change, str | None]] = [
    ("base aws", A, lambda f: None, None),
    ("base gcp", G, lambda f: None, None),
    ("base azure", Z, lambda f: None, None),
    # nodes: min <= desired <= max
    ("min == max", A, sets("pool.nodes", {"min": 4, "max": 4}), None),
    ("min == max + 1", A, sets("pool.nodes", {"min": 5, "max": 4}), f"{P}.nodes"),
    ("desired == min - 1", A, sets("pool.nodes", {"min": 2, "max": 4, "desired": 1}), f"{P}.nodes.desired"),
    ("desired == min", A, sets("pool.nodes", {"min": 2, "max": 4, "desired": 2}), None),
    ("desired between", A, sets("pool.nodes", {"min": 1, "max": 4, "desired": 3}), None),
    ("desired == max", A, sets("pool.nodes", {"min": 2, "max": 4, "desired": 4}), None),
    ("desired == max + 1", A, sets("pool.nodes", {"min": 2, "max": 4, "desired": 5}), f"{P}.nodes.desired"),
    ("max 0", A, sets("pool.nodes", {"min": 0, "max": 0}), f"{P}.nodes.max"),
    ("min -1", A, sets("pool.nodes", {"min": -1, "max": 1}), f"{P}.nodes.min"),
    ("system min > max", A, sets("cluster.system_pool", {"nodes": {"min": 3, "max": 2}}), f"{C}.system_pool.nodes"),
    # disk: 50..16384 GiB
    ("disk 49", A, sets("pool.disk_gib", 49), f"{P}.disk_gib"),
    ("disk 50", A, sets("pool.disk_gib", 50), None),
    ("disk 16384", A, sets("pool.disk_gib", 16384), None),
    ("disk 16385", A, sets("pool.disk_gib", 16385), f"{P}.disk_gib"),
    # names: 1-32 lowercase, no trailing dash; AKS: 1-12 letters and digits
    ("name 32 chars", A, sets("pool.name", "a" * 32), None),
    ("name 33 chars", A, sets("pool.name", "a" * 33), f"{P}.name"),
    ("name trailing dash", A, sets("pool.name", "gpu-"), f"{P}.name"),
    ("aks name 12 chars", Z, sets("pool.name", "a" * 12), None),
    ("aks name 13 chars", Z, sets("pool.name", "a" * 13), f"{P}.name"),
    ("aks name with dash", Z, sets("pool.name", "gpu-a"), f"{P}.name"),
    # compact placement: one zone, and at most 1,500 nodes on GKE
    # (https://cloud.google.com/kubernetes-engine/docs/how-to/compact-placement)
    ("gke compact 1500 nodes", G, sets("pool.nodes", {"min": 0, "max": 1500}), None),
    ("gke compact 1501 nodes", G, sets("pool.nodes", {"min": 0, "max": 1501}), f"{P}.nodes.max"),
    ("gke 1501 nodes not compact", G, both(sets("pool.nodes", {"min": 0, "max": 1501}),
                                            sets("pool.compact_placement", False)), f"{P}.compact_placement"),
    ("gke 1501 nodes not compact, reserved", G, both(sets("pool.nodes", {"min": 0, "max": 1501}),
                                                      sets("pool.capacity", {"type": "reservation", "id": "resv"}),
                                                      sets("pool.compact_placement", False)), None),
    ("compact, 2 zones, no pool zone", A, both(zones(2), no_pool_zone), f"{P}.zone"),
    ("compact, 2 zones, pool zone set", A, both(zones(2), lambda f: pool(f).__setitem__("zone", f["_zones"][1])),
     None),
    ("not compact, 2 zones, no pool zone", A, both(zones(2), no_pool_zone, sets("pool.compact_placement", False)),
     f"{P}.compact_placement"),
    ("not compact capacity block, 2 zones, no pool zone", A, both(
        zones(2), no_pool_zone, sets("pool.compact_placement", False),
        sets("pool.capacity", {"type": "capacity_block", "id": AWS_CR})), None),
    # compact_placement: false drops the placement group / COMPACT policy, which the mandatory
    # interconnect-placement policy requires of an interconnect pool of 2+ nodes unless its capacity comes placed
    # (AWS capacity block; GCP specific reservation or flex-start); AKS pools need none
    ("not compact, 1 node", A, both(sets("pool.nodes", {"min": 0, "max": 1}), sets("pool.compact_placement", False)),
     None),
    ("not compact, 2 nodes", A, both(sets("pool.nodes", {"min": 0, "max": 2}), sets("pool.compact_placement", False)),
     f"{P}.compact_placement"),
    ("not compact, interconnect off", A, both(sets("pool.interconnect", "off"), sets("pool.compact_placement", False)),
     None),
    ("not compact, no fabric", A, both(sets("pool.machine_type", "g6.xlarge"), sets("cluster.addons.kueue_teams", []),
                                       sets("pool.compact_placement", False)), None),
    ("not compact, aws reservation", A, both(sets("pool.capacity", {"type": "reservation", "id": AWS_CR}),
                                             sets("pool.compact_placement", False)), f"{P}.compact_placement"),
    ("not compact, aws spot", A, both(sets("pool.capacity", {"type": "spot"}), sets("pool.compact_placement", False)),
     f"{P}.compact_placement"),
    ("not compact, gke on demand", G, sets("pool.compact_placement", False), f"{P}.compact_placement"),
    ("not compact, gke spot", G, both(sets("pool.capacity", {"type": "spot"}), sets("pool.compact_placement", False)),
     f"{P}.compact_placement"),
    ("not compact, gke reservation", G, both(sets("pool.capacity", {"type": "reservation", "id": "resv"}),
                                             sets("pool.compact_placement", False)), None),
    ("not compact, gke flex start", G, both(flex({"min": 0, "max": 4}), sets("pool.compact_placement", False)), None),
    ("not compact, aks", Z, sets("pool.compact_placement", False), None),
    ("interconnect off, 2 zones, no pool zone", A, both(zones(2), no_pool_zone, sets("pool.interconnect", "off")),
     None),
    ("pool zone outside the cluster", A, sets("pool.zone", "use1-az1"), f"{P}.zone"),
    # AWS zones: by zone id, at least two for the EKS control plane, each once; admins required (access entries)
    ("aws 1 zone", A, zones(1), f"{C}.zones"),
    ("aws 2 zones", A, zones(2), None),
    ("aws 3 zones", A, zones(3), None),
    ("aws zone name", A, sets("cluster.zones", ["use1-az6", "us-east-1a"]), f"{C}.zones[1]"),
    ("aws unknown zone id", A, sets("cluster.zones", ["use1-az6", "use1-az9"]), f"{C}.zones[1]"),
    ("aws zone twice", A, sets("cluster.zones", ["use1-az6", "use1-az6", "use1-az4"]), f"{C}.zones"),
    ("aws no admins", A, sets("cluster.admins", []), f"{C}.admins"),
    ("aws admin not an ARN", A, sets("cluster.admins", ["alice"]), f"{C}.admins[0]"),
    ("aws admin user ARN", A, sets("cluster.admins", ["arn:aws:iam::123456789012:user/alice"]), None),
    ("aws admin 11-digit account", A, sets("cluster.admins", ["arn:aws:iam::12345678901:role/a"]), f"{C}.admins[0]"),
    ("gcp no admins", G, sets("cluster.admins", []), None),
    # system pool: the largest CPU rows are 16 vCPUs / 64 GiB (components/data/machine_types.csv)
    ("system 16 vcpus 64 GiB", A, sets("cluster.system_pool", {"vcpus": 16, "memory_gib": 64}), None),
    ("system 17 vcpus", A, sets("cluster.system_pool", {"vcpus": 17, "memory_gib": 64}), f"{C}.system_pool"),
    ("system 65 GiB", A, sets("cluster.system_pool", {"vcpus": 16, "memory_gib": 65}), f"{C}.system_pool"),
    ("system 1 vcpu", A, sets("cluster.system_pool", {"vcpus": 1}), f"{C}.system_pool.vcpus"),
    # endpoint
    ("private with cidrs", A, sets("cluster.public_access_cidrs", ["203.0.113.0/24"]), f"{C}.public_access_cidrs"),
    ("public without cidrs", A, both(sets("cluster.endpoint", "public"),
                                     sets("cluster.deploy", {"deployer": "network"})), f"{C}.public_access_cidrs"),
    ("public /24", A, public("203.0.113.0/24"),
     None),
    ("public 0.0.0.0/1", A, public("0.0.0.0/1"),
     None),
    ("public 0.0.0.0/0", A, public("0.0.0.0/0"),
     f"{C}.public_access_cidrs[0]"),
    ("public ::/0 second", A, public("10.0.0.0/8", "::/0"),
     f"{C}.public_access_cidrs[1]"),
    ("public 10.0.0.0/33", A, public("10.0.0.0/33"),
     f"{C}.public_access_cidrs[0]"),
    # Kubernetes versions each cloud supports (EKS/GKE/AKS release calendars): 1.31..1.34
    ("k8s 1.30", A, sets("cluster.kubernetes_version", "1.30"), f"{C}.kubernetes_version"),
    ("k8s 1.31", A, sets("cluster.kubernetes_version", "1.31"), None),
    ("k8s 1.34", A, sets("cluster.kubernetes_version", "1.34"), None),
    ("k8s 1.35", A, sets("cluster.kubernetes_version", "1.35"), f"{C}.kubernetes_version"),
    # Kueue quotas against the pools' GPUs at max nodes (4 x 8 = 32)
    ("quota == supply", A, sets("cluster.addons.kueue_teams", [{"name": "a", "gpus": {"H100": 20}},
                                                               {"name": "b", "gpus": {"H100": 12}}]), None),
    ("quota == supply + 1", A, sets("cluster.addons.kueue_teams", [{"name": "a", "gpus": {"H100": 20}},
                                                                   {"name": "b", "gpus": {"H100": 13}}]),
     f"{C}.addons.kueue_teams"),
    # a 4-GPU machine: 4 nodes x 4 A10G = 16 (g5.12xlarge, components/data/machine_types.csv)
    ("4-GPU pool quota == supply", A, a10g(16), None),
    ("4-GPU pool quota == supply + 1", A, a10g(17), f"{C}.addons.kueue_teams"),
    ("quota for a GPU no pool has", A, sets("cluster.addons.kueue_teams", [{"name": "a", "gpus": {"A100": 1}}]),
     f"{C}.addons.kueue_teams[0].gpus.A100"),
    ("duplicate team", A, sets("cluster.addons.kueue_teams", [{"name": "a", "gpus": {"H100": 1}},
                                                              {"name": "a", "gpus": {"H100": 1}}]),
     f"{C}.addons.kueue_teams"),
    ("borrowing -1", A, sets("cluster.addons.kueue_teams", [{"name": "a", "gpus": {"H100": 1},
                                                             "borrowing_limit_gpus": -1}]),
     f"{C}.addons.kueue_teams[0].borrowing_limit_gpus"),
    # capacity: ids, blocks, price caps, scale from zero
    # EKS managed node groups cannot cap the spot price (capabilities: spot_price_cap off on AWS and GCP)
    ("aws spot without cap", A, sets("pool.capacity", {"type": "spot"}), None),
    ("aws spot with cap", A, sets("pool.capacity", {"type": "spot", "max_usd_per_hour": 0.01}),
     f"{P}.capacity.max_usd_per_hour"),
    ("aws spot cap 0", A, sets("pool.capacity", {"type": "spot", "max_usd_per_hour": 0}),
     f"{P}.capacity.max_usd_per_hour"),
    ("aws on-demand with cap", A, sets("pool.capacity", {"type": "on_demand", "max_usd_per_hour": 5}),
     f"{P}.capacity.max_usd_per_hour"),
    ("gcp spot with cap", G, sets("pool.capacity", {"type": "spot", "max_usd_per_hour": 5}),
     f"{P}.capacity.max_usd_per_hour"),
    ("azure spot with cap", Z, sets("pool.capacity", {"type": "spot", "max_usd_per_hour": 5}), None),
    ("aws on-demand with id", A, sets("pool.capacity", {"type": "on_demand", "id": AWS_CR}), f"{P}.capacity.id"),
    ("aws reservation without id", A, sets("pool.capacity", {"type": "reservation"}), f"{P}.capacity.id"),
    ("aws reservation id too short", A, sets("pool.capacity", {"type": "reservation", "id": "cr-0123"}),
     f"{P}.capacity.id"),
    ("aws reservation with id", A, sets("pool.capacity", {"type": "reservation", "id": AWS_CR}), None),
    ("aws reservation block", A, sets("pool.capacity", {"type": "reservation", "id": AWS_CR, "block": "b"}),
     f"{P}.capacity.block"),
    ("gcp reservation block", G, sets("pool.capacity", {"type": "reservation", "id": "resv", "block": "b"}), None),
    ("gcp spot block", G, sets("pool.capacity", {"type": "spot", "block": "b"}), f"{P}.capacity.block"),
    ("aws capacity block p5", A, sets("pool.capacity", {"type": "capacity_block", "id": AWS_CR}), None),
    ("aws capacity block g6", A, both(sets("pool.machine_type", "g6.48xlarge"),
                                     sets("cluster.addons.kueue_teams", []),
                                     sets("pool.capacity", {"type": "capacity_block", "id": AWS_CR})),
     f"{P}.capacity.type"),
    ("aws flex start", A, sets("pool.capacity", {"type": "flex_start"}), f"{P}.capacity.type"),
    ("gcp flex start min 0", G, flex({"min": 0, "max": 4}),
     None),
    ("gcp flex start min 1", G, flex({"min": 1, "max": 4}),
     f"{P}.nodes"),
    ("gcp flex start desired 1", G, flex({"min": 0, "max": 4, "desired": 1}), f"{P}.nodes"),
    ("gcp reservation in the pool zone", G, sets("pool.capacity", {
        "type": "reservation", "id": "projects/p-shared/zones/us-central1-a/reservations/r"}), None),
    ("gcp reservation in another zone", G, sets("pool.capacity", {
        "type": "reservation", "id": "projects/p-shared/zones/us-central1-b/reservations/r"}), f"{P}.capacity.id"),
    ("gcp reservation bad id", G, sets("pool.capacity", {"type": "reservation", "id": "Bad_Name"}), f"{P}.capacity.id"),
    ("azure reservation group id", Z, sets("pool.capacity", {"type": "reservation", "id": AZURE_CRG}), None),
    ("azure reservation other id", Z, sets("pool.capacity", {"type": "reservation", "id": "crg"}), f"{P}.capacity.id"),
    ("gcp a3 ultra on demand", G, both(sets("pool.machine_type", "a3-ultragpu-8g"), sets("pool.zone", "us-central1-b"),
                                       zones(2), sets("cluster.addons.kueue_teams", [])), f"{P}.capacity.type"),
    # GCP project id: 6-30 characters (https://cloud.google.com/resource-manager/docs/creating-managing-projects)
    ("gcp project 6 chars", G, sets("fleet.account", "abcdef"), None),
    ("gcp project 5 chars", G, sets("fleet.account", "abcde"), "account"),
    ("gcp project 30 chars", G, sets("fleet.account", "a" * 30), None),
    ("gcp project 31 chars", G, sets("fleet.account", "a" * 31), "account"),
    ("gcp no project (read from the provider)", G, lambda f: f.pop("account"), None),
    ("azure subscription", Z, sets("fleet.account", "3f2a6b1c-9d4e-4f5a-8b7c-1d2e3f4a5b6c"), None),
    ("azure subscription short", Z, sets("fleet.account", "3f2a6b1c-9d4e-4f5a-8b7c-1d2e3f4a5b6"), "account"),
    # budget > 0
    ("budget 0", A, sets("fleet.monthly_budget_usd", 0), "monthly_budget_usd"),
    ("budget 0.01", A, sets("fleet.monthly_budget_usd", 0.01), None),
    # buckets: old versions kept >= 1 day
    ("noncurrent 0 days", A, sets("cluster.storage.buckets", [{"name": "ckpt", "noncurrent_days": 0}]),
     f"{C}.storage.buckets[0].noncurrent_days"),
    ("noncurrent 1 day", A, sets("cluster.storage.buckets", [{"name": "ckpt", "noncurrent_days": 1}]), None),
    # Lustre sizes: FSx PERSISTENT_2 1.2 TiB then multiples of 2.4 TiB
    # (https://docs.aws.amazon.com/fsx/latest/LustreGuide/managing-storage-capacity.html), without EFA pools
    ("fsx 1.2", A, both(NO_EFA, lustre(1.2, 250)), None),
    ("fsx 2.4", A, both(NO_EFA, lustre(2.4, 250)), None),
    ("fsx 3.6", A, both(NO_EFA, lustre(3.6, 250)), f"{C}.storage.lustre.capacity_tib"),
    ("fsx 2400", A, both(NO_EFA, lustre(2400, 250)), None),
    ("fsx tier 200", A, lustre(2.4, 200), f"{C}.storage.lustre.throughput_mbps_per_tib"),
    # EFA-enabled (the p5 pool uses EFA): multiples of 19.2 TiB at 250 (FSx for Lustre User Guide,
    # getting-started.html: "increments of 4.8 TiB, 9.6 TiB, 19.2 TiB, and 38.4 TiB for 1000, 500, 250, and 125")
    ("fsx efa 2.4 at 250", A, lustre(2.4, 250), f"{C}.storage.lustre.capacity_tib"),
    ("fsx efa 16.8 at 250", A, lustre(16.8, 250), f"{C}.storage.lustre.capacity_tib"),
    ("fsx efa 19.2 at 250", A, lustre(19.2, 250), None),
    ("fsx efa 21.6 at 250", A, lustre(21.6, 250), f"{C}.storage.lustre.capacity_tib"),
    ("fsx efa 2400 at 250", A, lustre(2400, 250), None),
    ("fsx efa 2419.2 at 250", A, lustre(2419.2, 250), f"{C}.storage.lustre.capacity_tib"),
    ("fsx efa 2380.8 at 125", A, lustre(2380.8, 125), None),
    ("fsx efa 2400 at 125", A, lustre(2400, 125), f"{C}.storage.lustre.capacity_tib"),
    ("fsx efa 4.8 at 1000", A, lustre(4.8, 1000), None),
    ("fsx efa 4.8 at 500", A, lustre(4.8, 500), f"{C}.storage.lustre.capacity_tib"),
    # Managed Lustre 1000 MB/s/TiB: 9 TiB steps to 1,530 TiB, then 72 TiB steps to 10,008 TiB
    # (https://cloud.google.com/managed-lustre/docs/performance-tiers)
    ("gcp lustre 9", G, lustre(9, 1000), None),
    ("gcp lustre 1530", G, lustre(1530, 1000), None),
    ("gcp lustre 1539", G, lustre(1539, 1000), f"{C}.storage.lustre.capacity_tib"),
    ("gcp lustre 1584", G, lustre(1584, 1000), None),
    ("gcp lustre 1548 (36-step, not 72)", G, lustre(1548, 1000), f"{C}.storage.lustre.capacity_tib"),
    ("gcp lustre 10008", G, lustre(10008, 1000), None),
    ("gcp lustre 10080", G, lustre(10080, 1000), f"{C}.storage.lustre.capacity_tib"),
    # Azure Managed Lustre AMLFS-Durable-Premium-500: 4 TiB steps from 4 to 128
    # (https://learn.microsoft.com/azure/azure-managed-lustre/amlfs-overview)
    ("amlfs 4", Z, lustre(4, 500), None),
    ("amlfs 128", Z, lustre(128, 500), None),
    ("amlfs 132", Z, lustre(132, 500), f"{C}.storage.lustre.capacity_tib"),
    ("amlfs 6", Z, lustre(6, 500), f"{C}.storage.lustre.capacity_tib"),
    ("lustre bucket unknown", A, sets("cluster.storage.lustre", {"capacity_tib": 19.2, "bucket": "nope"}),
     f"{C}.storage.lustre.bucket"),
    # existing networks
    ("aws vpc id", A, sets("cluster.existing_network", "vpc-0123456789abcdef0"), None),
    ("aws vpc id short", A, sets("cluster.existing_network", "vpc-0123456"), f"{C}.existing_network"),
    # operator driver: refused only on AWS
    ("aws operator driver", A, sets("cluster.addons.gpu_driver", "operator"), f"{C}.addons.gpu_driver"),
    ("gcp operator driver", G, sets("cluster.addons.gpu_driver", "operator"), None),
    # interconnect
    ("required on EFA", A, sets("pool.interconnect", "required"), None),
    ("required without fabric", A, both(sets("pool.machine_type", "g6.xlarge"), sets("cluster.addons.kueue_teams", []),
                                         sets("pool.interconnect", "required")), f"{P}.interconnect"),
    # accelerators: ambiguous without gpus; gpus that no machine has
    ("accelerator + gpus", A, lambda f: pool(f).update({"machine_type": None, "accelerator": "H100", "gpus": 8}),
     None),
    ("accelerator 7 gpus", A, lambda f: pool(f).update({"machine_type": None, "accelerator": "H100", "gpus": 7}),
     f"{P}.gpus"),
    ("machine + wrong gpus", A, sets("pool.gpus", 4), P),
    ("duplicate pool", A, lambda f: cluster(f)["node_pools"].append(dict(pool(f))), f"{C}.node_pools"),
]


@pytest.mark.parametrize(("label", "cloud", "change", "expected"), CASES, ids=[c[0] for c in CASES])
def test_boundary(label: str, cloud: Cloud, change: Change, expected: str | None) -> None:
    fleet = base(cloud)
    change(fleet)
    fleet.pop("_zones")
    for p in cluster(fleet)["node_pools"]:
        if p.get("machine_type") is None:
            p.pop("machine_type", None)
    if expected is None:
        resolve(fleet)
        return
    with pytest.raises(SpecError) as caught:
        resolve(fleet)
    paths = {p.path for p in caught.value.problems}
    assert paths == {expected}, f"{label}: expected a problem at {expected}, got {caught.value.problems}"


@pytest.mark.parametrize("where", ["pool.zone", "cluster.zones"])
def test_a_zone_name_gets_the_zone_id_hint_wherever_it_is_given(where: str) -> None:
    fleet = base(Cloud.AWS)
    sets(where, "us-east-1a" if where == "pool.zone" else ["use1-az6", "us-east-1a"])(fleet)
    fleet.pop("_zones")
    with pytest.raises(SpecError) as caught:
        resolve(fleet)
    [problem] = caught.value.problems
    assert problem.path == (f"{P}.zone" if where == "pool.zone" else f"{C}.zones[1]")
    assert "'us-east-1a' is a zone name" in problem.message and "like 'use1-az6'" in problem.message
    assert "aws ec2 describe-availability-zones --region us-east-1" in problem.fix
