"""Turn a raw fleet description into a resolved Fleet, or report every problem in it at once.

Shape errors come from the pydantic models; everything that needs the catalogue or the cloud's declared
capabilities is checked here. Nothing is registered with Pulumi until this returns.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import ValidationError

from components import alerting, catalog, cron, deploy_path, job_operators, multikueue, network_profiles
from components import validate_access as access
from components.capabilities import CloudCapabilities, capabilities
from components.catalog import Cloud, Fabric, MachineType
from components.errors import SpecError, SpecProblem, duplicates, unknown_name
from components.fleet import Cluster, Fleet, Pool
from components.pool_machine import family_notes, pick_machine
from components.shape_errors import from_pydantic
from components.spec import PENDING_ID, CapacityType, ClusterSpec, FleetSpec, NodePoolSpec

Problems = Iterator[SpecProblem]


def resolve(raw: Mapping[str, Any] | None, source: str | None = None) -> Fleet:
    """Validate and resolve; raise SpecError listing every problem (with config paths) otherwise."""
    if not isinstance(raw, Mapping):
        got = "nothing" if raw is None else type(raw).__name__
        raise SpecError([SpecProblem("", f"the fleet description must be a mapping, got {got}.",
                                     "Set gpufleet:fleet in the stack file to an object with cloud, "
                                     "clusters, tags and monthly_budget_usd.")], source)
    try:
        spec = FleetSpec.model_validate(raw)
    except ValidationError as err:
        raise SpecError([*map(from_pydantic, err.errors()), *_checks_beside_type_errors(raw, err)], source) from None
    problems = list(_check_fleet(spec))
    if problems:
        raise SpecError(problems, source)
    clusters = tuple(_cluster(spec, c) for c in spec.clusters)
    return Fleet(spec=spec, clusters=clusters, notes=tuple(family_notes(spec)))


# --- semantic checks -------------------------------------------------------------------------------------

def _checks_beside_type_errors(raw: Mapping[str, Any], err: ValidationError) -> Problems:
    """The semantic checks of every cluster that parses, so a file's problems come in one pass, not type errors
    first and the rest after they are fixed. In a cluster whose only type errors are in some node pools, the other
    pools and the cluster itself are checked, but not what refers to pools (Kueue teams, network profiles): a pool
    that did not parse would read as missing."""
    try:
        cloud = Cloud(raw.get("cloud"))
    except ValueError:
        return
    broken: dict[int, set[Any]] = {}  # cluster index -> the node pool index of each type error in it (None: not in one)
    for e in err.errors():
        loc = e["loc"]
        if loc[:1] == ("clusters",) and len(loc) > 1 and isinstance(loc[1], int):
            in_pool = loc[2:3] == ("node_pools",) and len(loc) > 3 and isinstance(loc[3], int)
            broken.setdefault(loc[1], set()).add(loc[3] if in_pool else None)
    clusters = raw.get("clusters")
    for i, c in enumerate(clusters if isinstance(clusters, list) else []):
        bad = broken.get(i, set())
        pools = c.get("node_pools") if isinstance(c, Mapping) else None
        if None in bad or not isinstance(pools, list):
            continue
        kept = [j for j in range(len(pools)) if j not in bad]
        try:
            cluster = ClusterSpec.model_validate({**c, "node_pools": [pools[j] for j in kept]})
        except ValidationError:
            continue
        yield from _check_cluster(cloud, capabilities(cloud), cluster, f"clusters[{i}]", kept if bad else None)


def _check_fleet(spec: FleetSpec) -> Problems:
    caps = capabilities(spec.cloud)
    yield from duplicates("clusters", "cluster", [c.name for c in spec.clusters])
    yield from _check_account(spec, caps)
    for i, cluster in enumerate(spec.clusters):
        yield from _check_cluster(spec.cloud, caps, cluster, f"clusters[{i}]")
    yield from _check_fabric_feature(spec, caps)


def _check_fabric_feature(spec: FleetSpec, caps: CloudCapabilities) -> Problems:
    """A subscription-wide fabric feature (Azure AKSInfinibandSupport) that some machines need and others refuse."""
    needs: list[tuple[str, str]] = []
    refuses: list[tuple[str, str]] = []
    for i, cluster in enumerate(spec.clusters):
        for j, pool in enumerate(cluster.node_pools):
            machine, _ = pick_machine(spec.cloud, pool, "")
            if machine is None:
                continue
            fabric = Fabric.NONE if pool.interconnect == "off" else machine.fabric
            where = f"clusters[{i}].node_pools[{j}]"
            if caps.needs_fabric_feature(machine.name, fabric.value):
                needs.append((where, machine.name))
            elif caps.refuses_fabric_feature(machine.name):
                refuses.append((where, machine.name))
    if needs and refuses:
        other, other_machine = needs[0]
        for where, name in refuses:
            yield SpecProblem(f"{where}.machine_type", f"{name} must not run in a {spec.cloud.title} subscription "
                              f"with {caps.fabric_feature} registered, but {other} ({other_machine}) needs it.",
                              f"Move the {name} pools to a stack of another subscription.")


def _check_account(spec: FleetSpec, caps: CloudCapabilities) -> Problems:
    title = spec.cloud.title
    if spec.account is None:
        if caps.account_required:
            yield SpecProblem("account", f"is required on {title}: the {caps.account_kind} to build in.",
                              f"Set account: to your {caps.account_kind}, like {caps.account_example!r}.")
    elif caps.account_pattern and not re.match(caps.account_pattern, spec.account):
        yield SpecProblem("account", f"{spec.account!r} is not a {title} {caps.account_kind}.",
                          f"Use the form {caps.account_example!r}.")


def _known_regions(cloud: Cloud) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for (c, _), regions in catalog.offerings().items():
        if c is cloud:
            for region, zones in regions.items():
                out.setdefault(region, set()).update(zones)
    return out


def _check_cluster(cloud: Cloud, caps: CloudCapabilities, c: ClusterSpec, path: str,
                   pool_indexes: list[int] | None = None) -> Problems:
    """``pool_indexes``: where each of ``c``'s pools sits in the stack file when some pools did not parse (see
    _checks_beside_type_errors); then what refers to pools by name is not checked."""
    regions = _known_regions(cloud)
    if c.region not in regions:  # the checks that do not need the region go on: every problem at once
        yield unknown_name(f"{path}.region", f"{cloud.title} region with GPU offerings", c.region, sorted(regions))
    yield from access.check_zones(caps, c, path, regions.get(c.region))
    yield from access.check_admins(caps, c, path)
    if c.kubernetes_version not in caps.kubernetes_versions:
        yield SpecProblem(f"{path}.kubernetes_version",
                          f"{c.kubernetes_version!r} is not a supported {cloud.title} Kubernetes version.",
                          f"Use one of {', '.join(caps.kubernetes_versions)}.")
    yield from access.check_endpoint(c, path)
    yield from deploy_path.check(cloud, c, path)
    if c.addons.gpu_driver == "operator" and caps.operator_driver_refused:
        yield SpecProblem(f"{path}.addons.gpu_driver", f"'operator' is not available on {cloud.title}: "
                          f"{caps.operator_driver_refused}.", "Set gpu_driver: cloud.")
    if c.existing_network and not re.match(caps.network_id_pattern, c.existing_network):
        yield SpecProblem(f"{path}.existing_network", f"{c.existing_network!r} is not a {cloud.title} "
                          f"network id.", f"Use the form {caps.network_id_example}.")
    system = catalog.smallest_cpu(cloud, c.system_pool.vcpus, c.system_pool.memory_gib)
    if system is None:
        yield SpecProblem(f"{path}.system_pool", f"no {cloud.title} CPU machine type has "
                          f"{c.system_pool.vcpus} vCPUs and {c.system_pool.memory_gib} GiB.",
                          "Ask for at most 16 vCPUs and 64 GiB.")
    elif c.region in regions:  # the system pool spreads over every cluster zone
        offered = catalog.regions(cloud, system.name).get(c.region, ())
        missing = [z for z in c.zones if z in regions[c.region] and z not in offered]
        if missing:
            yield SpecProblem(f"{path}.zones", f"the system pool's {system.name} is not offered in "
                              f"{', '.join(missing)}.", f"Zones of {c.region} that offer it: {', '.join(offered)}.")
    yield from _check_nodes(c.system_pool.nodes, f"{path}.system_pool.nodes")
    yield from duplicates(f"{path}.node_pools", "node pool", [p.name for p in c.node_pools])
    for j, pool in zip(pool_indexes or range(len(c.node_pools)), c.node_pools, strict=True):
        yield from _check_pool(cloud, caps, c, pool, f"{path}.node_pools[{j}]")
    yield from _check_storage(caps, c, f"{path}.storage")
    yield from alerting.check(c, path)
    if pool_indexes is None:
        yield from _check_kueue(cloud, c, f"{path}.addons.kueue_teams")
        yield from network_profiles.check(c, path)
        yield from job_operators.check(c, path)
        yield from multikueue.check_spec(cloud, c, path)


def _check_nodes(nodes: Any, path: str) -> Problems:
    if nodes.min > nodes.max:
        yield SpecProblem(path, f"min ({nodes.min}) is greater than max ({nodes.max}).",
                          "Set min <= max.")
    elif nodes.desired is not None and not nodes.min <= nodes.desired <= nodes.max:
        yield SpecProblem(f"{path}.desired", f"{nodes.desired} is outside min..max "
                          f"({nodes.min}..{nodes.max}).", "Set desired between min and max, or omit it.")


def _check_pool(cloud: Cloud, caps: CloudCapabilities, c: ClusterSpec, pool: NodePoolSpec, path: str) -> Problems:
    yield from _check_nodes(pool.nodes, f"{path}.nodes")
    if caps.pool_name_pattern and not re.match(caps.pool_name_pattern, pool.name):
        fixed = re.sub(r"[^a-z0-9]", "", pool.name)[:caps.pool_name_max] or "gpu"
        yield SpecProblem(f"{path}.name", f"{pool.name!r} is not a valid {cloud.title} node pool name: "
                          f"{caps.pool_name_rule}.", f"Rename it, e.g. to {fixed!r}.")
    machine, problems = pick_machine(cloud, pool, path)
    yield from problems
    if machine is None:
        return
    offered = catalog.regions(cloud, machine.name)
    # an unknown region is reported once, by the cluster; the pool's other checks still run
    if c.region in _known_regions(cloud) and c.region not in offered:
        yield SpecProblem(f"{path}.machine_type", f"{machine.name} is not offered in {c.region}.",
                          f"Regions that offer it: {', '.join(sorted(offered)) or 'none known'}.")
    zone = pool.zone or c.zones[0]
    named = access.zone_name(caps, c.region, pool.zone, f"{path}.zone") if pool.zone else None
    if named:
        yield named
    elif pool.zone and pool.zone not in c.zones:
        yield SpecProblem(f"{path}.zone", f"{zone!r} is not one of the cluster's zones ({', '.join(c.zones)}).",
                          "Add it to the cluster's zones or pick one of them.")
    elif c.region in offered and zone not in offered[c.region]:
        yield SpecProblem(f"{path}.zone" if pool.zone else f"{path}.machine_type",
                          f"{machine.name} is not offered in zone {zone}.",
                          f"Zones of {c.region} that offer it: {', '.join(offered[c.region])}; set zone.")
    if pool.interconnect == "required" and machine.fabric is Fabric.NONE:
        with_fabric = [m.name for m in catalog.for_cloud(cloud) if m.gpu == machine.gpu and m.interconnect]
        yield SpecProblem(f"{path}.interconnect", f"'required' but {machine.name} has no high-speed "
                          "interconnect.", f"Use a machine with one ({', '.join(with_fabric) or 'none for this GPU'})"
                          " or set interconnect: auto.")
    compact = _compact(pool, machine)
    loosen = _without_compact(caps, pool)
    if compact and caps.max_compact_nodes and pool.nodes.max > caps.max_compact_nodes:
        yield SpecProblem(f"{path}.nodes.max", f"{pool.nodes.max} nodes do not fit one compact placement "
                          f"(at most {caps.max_compact_nodes} on {cloud.title}).", f"Split the pool, or {loosen}.")
    if compact and pool.zone is None and len(c.zones) > 1:
        yield SpecProblem(f"{path}.zone", f"is unset, but compact placement keeps a pool in one zone and the "
                          f"cluster spans {len(c.zones)} ({', '.join(c.zones)}).",
                          f"Set zone to the one zone the pool's capacity is in, or {loosen}.")
    if pool.compact_placement is False and _needs_compact(caps, pool, machine):
        yield SpecProblem(f"{path}.compact_placement", f"is false, but this pool of up to {pool.nodes.max} "
                          f"{machine.name} nodes needs compact placement for its {machine.fabric.value} "
                          "interconnect (the mandatory interconnect-placement policy refuses it without).",
                          f"Remove compact_placement, or {loosen}.")
    yield from _check_capacity(cloud, caps, pool, machine, zone, f"{path}.capacity")
    if pool.capacity.type in caps.scale_from_zero and (pool.nodes.min or pool.nodes.desired):
        yield SpecProblem(f"{path}.nodes", f"{pool.capacity.type.value!r} pools start empty and get nodes only when "
                          f"a workload asks for them; got min {pool.nodes.min}, desired {pool.nodes.desired}.",
                          "Set nodes.min: 0 and drop nodes.desired.")


def _needs_compact(caps: CloudCapabilities, pool: NodePoolSpec, machine: MachineType) -> bool:
    """A multi-node interconnect pool needs compact placement unless its capacity comes placed."""
    return (caps.placed_by_capacity is not None and pool.capacity.type not in caps.placed_by_capacity
            and pool.interconnect != "off" and machine.interconnect and pool.nodes.max > 1)


def _without_compact(caps: CloudCapabilities, pool: NodePoolSpec) -> str:
    """The hint for doing without compact placement: only placed capacity may drop it and keep the fabric."""
    if caps.placed_by_capacity is None or pool.capacity.type in caps.placed_by_capacity:
        return "set compact_placement: false"
    placed = " or ".join(sorted(t.value for t in caps.placed_by_capacity))
    return f"set interconnect: off, or use {placed} capacity (placed by the cloud) with compact_placement: false"


def _compact(pool: NodePoolSpec, machine: MachineType) -> bool:
    if pool.compact_placement is not None:
        return pool.compact_placement
    return pool.interconnect != "off" and machine.interconnect


def _check_capacity(cloud: Cloud, caps: CloudCapabilities, pool: NodePoolSpec, machine: MachineType, zone: str,
                    path: str) -> Problems:
    cap = pool.capacity
    if cap.type in caps.unsupported_capacity:
        yield SpecProblem(f"{path}.type", f"{cap.type.value!r} is not available on {cloud.title}: "
                          f"{caps.unsupported_capacity[cap.type]}.",
                          f"Allowed: {', '.join(t.value for t in caps.capacity_types)}.")
        return
    sold_as = next((types for prefix, types in caps.capacity_for.items() if machine.name.startswith(prefix)), None)
    if sold_as is not None and cap.type not in sold_as:
        yield SpecProblem(f"{path}.type", f"{machine.name} is not sold as {cap.type.value!r} capacity.",
                          f"Use one of {', '.join(sorted(t.value for t in sold_as))}.")
    if cap.type in caps.capacity_needs_id and cap.id and cap.id != PENDING_ID and caps.reservation_id_pattern:
        yield from _check_reservation_id(caps, cap.id, zone, f"{path}.id")
    if cap.type in caps.capacity_needs_id and not cap.id:
        yield SpecProblem(f"{path}.id", f"capacity type {cap.type.value!r} needs the reservation id.",
                          "Set capacity.id to the id the cloud gave the reservation.")
    if cap.type not in caps.capacity_needs_id and cap.id:
        yield SpecProblem(f"{path}.id", f"is set, but capacity type {cap.type.value!r} takes no id.",
                          f"Remove it, or set type to one of {', '.join(t.value for t in caps.capacity_needs_id)}.")
    if cap.block and not (caps.reservation_blocks and cap.type is CapacityType.RESERVATION):
        yield SpecProblem(f"{path}.block", f"reservation blocks are not available for {cap.type.value!r} on "
                          f"{cloud.title}.", "Remove capacity.block.")
    if cap.max_usd_per_hour is not None and cap.type is not CapacityType.SPOT:
        yield SpecProblem(f"{path}.max_usd_per_hour", "a price cap only applies to spot capacity.",
                          "Remove it, or set type: spot.")
    elif cap.max_usd_per_hour is not None and not caps.spot_price_cap:
        why = f" ({caps.spot_price_cap_why})" if caps.spot_price_cap_why else ""
        yield SpecProblem(f"{path}.max_usd_per_hour", f"{cloud.title} spot capacity has no price cap{why}; got "
                          f"{cap.max_usd_per_hour:g}.", "Remove it: spot nodes cost the current spot price.")
    if cap.type is CapacityType.CAPACITY_BLOCK and not machine.name.startswith(caps.capacity_blocks_for):
        yield SpecProblem(f"{path}.type", f"{machine.name} is not sold as a capacity block.",
                          f"Capacity blocks cover {', '.join(p.rstrip('.') for p in caps.capacity_blocks_for)}.")


def _check_reservation_id(caps: CloudCapabilities, reservation: str, zone: str, path: str) -> Problems:
    match = re.match(caps.reservation_id_pattern, reservation)
    if match is None:
        yield SpecProblem(path, f"{reservation!r} is not a {caps.cloud.title} reservation id.",
                          f"Use one of the forms {caps.reservation_id_example}.")
    elif match.groupdict().get("zone") and match["zone"] != zone:
        yield SpecProblem(path, f"reservation {reservation!r} is in zone {match['zone']}, but the pool runs in "
                          f"{zone}.", f"Set the pool's zone to {match['zone']}, or name a reservation in {zone}.")


def _check_storage(caps: CloudCapabilities, c: ClusterSpec, path: str) -> Problems:
    names = [b.name for b in c.storage.buckets]
    yield from duplicates(f"{path}.buckets", "bucket", names)
    lustre = c.storage.lustre
    if lustre is None:
        return
    if lustre.bucket not in names:
        yield unknown_name(f"{path}.lustre.bucket", "bucket of this cluster", lustre.bucket, names or ["(none)"])
    sync = lustre.checkpoint_sync
    reason = cron.problem(sync.schedule) if sync.enabled else None
    if reason:
        yield SpecProblem(f"{path}.lustre.checkpoint_sync.schedule", f"{sync.schedule!r} is not a Kubernetes CronJob "
                          f"schedule: {reason}.", "Use five fields, minute hour day-of-month month day-of-week "
                          "(e.g. '*/30 * * * *' or '0 * * * *', UTC), or @hourly / @daily.")
    tier = caps.lustre_tiers.get(lustre.throughput_mbps_per_tib)
    efa_pools = _efa_pools(caps, c)
    if tier is None:
        yield SpecProblem(f"{path}.lustre.throughput_mbps_per_tib", f"{lustre.throughput_mbps_per_tib} is not a "
                          f"{caps.lustre_service} throughput tier.",
                          f"Allowed: {', '.join(map(str, sorted(caps.lustre_tiers)))}.")
    elif efa_pools:
        yield from _check_efa_lustre_size(caps, lustre.capacity_tib, lustre.throughput_mbps_per_tib, efa_pools, path)
    elif not tier.allows(lustre.capacity_tib):
        yield SpecProblem(f"{path}.lustre.capacity_tib", f"{lustre.capacity_tib:g} TiB is not a valid "
                          f"{caps.lustre_service} size for the {lustre.throughput_mbps_per_tib} MB/s/TiB tier.",
                          f"Allowed: {tier.describe()} TiB.")


def _efa_pools(caps: CloudCapabilities, c: ClusterSpec) -> list[str]:
    """The pools that wire up EFA (as the cluster builds them), when the cloud sizes EFA-enabled Lustre apart."""
    if not caps.lustre_efa_tiers:
        return []
    return [pool.name for pool in c.node_pools if pool.interconnect != "off"
            and (machine := pick_machine(caps.cloud, pool, "")[0]) is not None and machine.fabric is Fabric.EFA]


def _check_efa_lustre_size(caps: CloudCapabilities, tib: float, tier: int, efa_pools: list[str],
                           path: str) -> Problems:
    sizing = caps.lustre_efa_tiers[tier]
    if not sizing.allows(tib):
        steps = ", ".join(f"{s.step_tib:g} at {t}" for t, s in sorted(caps.lustre_efa_tiers.items(), reverse=True))
        yield SpecProblem(f"{path}.lustre.capacity_tib", f"{tib:g} TiB is not a valid size for an EFA-enabled "
                          f"{caps.lustre_service} file system at {tier} MB/s/TiB (it is EFA-enabled because node "
                          f"pool(s) {', '.join(efa_pools)} use EFA).",
                          f"Allowed at {tier} MB/s/TiB: {sizing.describe()} TiB. EFA-enabled FSx grows in steps of "
                          f"{steps} MB/s/TiB (docs/clouds.md): pick a size on your tier's step, or the tier whose "
                          "step fits the size you need.")


def _check_kueue(cloud: Cloud, c: ClusterSpec, path: str) -> Problems:
    teams = c.addons.kueue_teams
    yield from duplicates(path, "team", [t.name for t in teams])
    if c.is_manager:  # its workers hold the GPUs (components/multikueue.py checks them)
        return
    supply: dict[str, int] = {}
    every_pool_resolved = True
    for pool in c.node_pools:
        machine, _ = pick_machine(cloud, pool, "")
        every_pool_resolved &= machine is not None
        if machine:
            supply[machine.gpu] = supply.get(machine.gpu, 0) + pool.nodes.max * machine.gpus
    asked: Counter[str] = Counter()
    for i, team in enumerate(teams):
        for gpu, count in team.gpus.items():
            if gpu not in supply and every_pool_resolved:  # else the pool's own problem says why
                yield _unknown_team_gpu(f"{path}[{i}].gpus.{gpu}", gpu, sorted(supply))
            asked[gpu] += count
    for gpu, total in asked.items():
        if gpu in supply and total > supply[gpu]:
            yield SpecProblem(path, f"team quotas ask for {total} {gpu} GPUs but the node pools provide at most "
                              f"{supply[gpu]}.", "Lower the quotas or raise the pools' nodes.max.")


def _unknown_team_gpu(path: str, gpu: str, supplied: list[str]) -> SpecProblem:
    """Team quotas name GPU products: a family name is refused with the products of it this cluster has."""
    variants = [p for p in catalog.gpu_families().get(gpu, []) if p in supplied]
    if variants and not catalog.gpu_product(gpu):
        return SpecProblem(path, f"{gpu!r} is a GPU family; team quotas name the product "
                           f"({', '.join(variants)} in this cluster's node pools).", f"Write {variants[0]}.")
    return unknown_name(path, "GPU in this cluster's node pools", gpu, supplied or ["(none)"])


# --- resolution (only after every check passed) --------------------------------------------------------

def _cluster(spec: FleetSpec, c: ClusterSpec) -> Cluster:
    cloud = spec.cloud
    system = catalog.smallest_cpu(cloud, c.system_pool.vcpus, c.system_pool.memory_gib)
    assert system is not None
    pools = []
    for pool in c.node_pools:
        machine, _ = pick_machine(cloud, pool, "")
        assert machine is not None
        fabric = machine.fabric if pool.interconnect != "off" else Fabric.NONE
        pools.append(Pool(spec=pool, machine=machine, zone=pool.zone or c.zones[0], fabric=fabric,
                          compact=_compact(pool, machine), gated=c.addons.self_healing.enabled))
    tags = {**spec.tags.as_dict(), "gpufleet-cluster": c.name}
    return Cluster(spec=c, cloud=cloud, system_machine=system, pools=tuple(pools), tags=tags, account=spec.account)
