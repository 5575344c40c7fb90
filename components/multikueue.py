"""One queue for the fleet (docs/fleet-queue.md): the MultiKueue manager and its workers, checked across stacks.

A stack's own validation (``components.validate``) checks what one file can say. What needs the other side, the
manager's stack file and each worker's, is checked here, from both ends alike: the manager's program and each
worker's run ``check`` with the fleets of the stacks they name (``stacks.config.peers`` reads them), so a change to
either file is refused before anything is built. Pure data and functions: no cloud SDK, no Pulumi.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from components import catalog, job_operators
from components.catalog import Cloud
from components.errors import SpecProblem, did_you_mean, unknown_name
from components.fleet import Cluster, Fleet
from components.reach import REACH, Origin, Reach, Where, reach
from components.spec import ClusterSpec, KueueTeam, MultiKueueManagerRef, MultiKueueWorkerRef
from components.validate_access import cidr_problems

Problems = Iterator[SpecProblem]


@dataclass(frozen=True)
class Worker:
    """A worker as the manager sees it: its name (the MultiKueueCluster's), where it is, and its cluster."""

    ref: MultiKueueWorkerRef
    cloud: Cloud
    cluster: Cluster

    @property
    def name(self) -> str:
        return self.ref.name


def stack_file(stack: str) -> str:
    return f"stacks/Pulumi.{stack}.yaml"


def manager_origin(ref: MultiKueueManagerRef) -> Origin:
    return Origin(Where(ref.reach), tuple(ref.cidrs), f"the MultiKueue manager {ref.stack}/{ref.cluster}")


def manager_reach(cloud: Cloud, spec: ClusterSpec) -> Reach | None:
    """How this worker's manager reaches its API server (None: the cluster is no worker)."""
    ref = spec.multikueue.manager if spec.multikueue else None
    return None if ref is None else reach(cloud, spec, manager_origin(ref))


def manager_cidrs(spec: ClusterSpec) -> list[str]:
    """A worker's manager addresses to let through to its API server (its manager runs in a connected network)."""
    ref = spec.multikueue.manager if spec.multikueue else None
    return list(ref.cidrs) if ref is not None and ref.reach == "network" else []


def is_worker(spec: ClusterSpec) -> bool:
    return spec.multikueue is not None and spec.multikueue.manager is not None


def team_gpus(cluster: Cluster, team: str) -> dict[str, int]:
    """The team's nominal GPU quota per model in a worker cluster ({} without a queue there)."""
    return next((dict(t.gpus) for t in cluster.spec.addons.kueue_teams if t.name == team), {})


def orders(spec: ClusterSpec, workers: list[Worker]) -> dict[str, list[Worker]]:
    """team -> the workers its MultiKueueConfig lists, in order: ``multikueue.order`` where it names the team, else
    the workers with the team's queue, in the order ``workers`` lists them."""
    assert spec.multikueue is not None
    by_name = {w.name: w for w in workers}
    out = {}
    for team in spec.addons.kueue_teams:
        named = spec.multikueue.order.get(team.name)
        out[team.name] = ([by_name[n] for n in named if n in by_name] if named is not None
                          else [w for w in workers if team_gpus(w.cluster, team.name)])
    return out


def find_cluster(fleets: Mapping[str, Fleet], stack: str, cluster: str) -> Cluster | None:
    """Cluster ``cluster`` of stack ``stack`` among the stack files read (None when either is not there)."""
    fleet = fleets.get(stack)
    return next((c for c in fleet.clusters if c.name == cluster), None) if fleet else None


def resolve_workers(spec: ClusterSpec, fleets: Mapping[str, Fleet]) -> list[Worker]:
    """The manager's workers whose stack and cluster exist (``check`` refuses the others)."""
    assert spec.multikueue is not None
    out = []
    for ref in spec.multikueue.workers:
        cluster = find_cluster(fleets, ref.stack, ref.cluster)
        if cluster is not None:
            out.append(Worker(ref, fleets[ref.stack].cloud, cluster))
    return out


def _peer(stack: str, cluster: str, fleets: Mapping[str, Fleet], where: str, what: str) -> Problems:
    fleet = fleets.get(stack)
    if fleet is None:
        guess = did_you_mean(stack, fleets)
        hint = f" Did you mean {guess!r}?" if guess else ""
        yield SpecProblem(f"{where}.stack", f"{what}'s stack {stack!r} has no readable {stack_file(stack)}.{hint}",
                          f"Name a stack of this project (stacks: {', '.join(sorted(fleets)) or 'none'}).")
    elif all(c.name != cluster for c in fleet.clusters):
        yield SpecProblem(f"{where}.cluster", f"{stack_file(stack)} has no cluster {cluster!r}.",
                          f"Its clusters: {', '.join(c.name for c in fleet.clusters)}.")


def check_manager(stack: str, spec: ClusterSpec, path: str, fleets: Mapping[str, Fleet]) -> Problems:
    """A manager cluster against its workers' stack files: each worker exists, names this manager back, is reachable
    from it, runs every job kind the manager dispatches, and has each team's queue and a flavor of its GPUs."""
    assert spec.multikueue is not None
    where = f"{path}.multikueue"
    for i, ref in enumerate(spec.multikueue.workers):
        at = f"{where}.workers[{i}]"
        if ref.stack == stack:
            yield SpecProblem(f"{at}.stack", f"{ref.stack!r} is this manager's own stack.",
                              "A worker is a cluster of another stack (its credentials and queues come from there).")
            continue
        found = list(_peer(ref.stack, ref.cluster, fleets, at, "the worker"))
        yield from found
        if found:
            continue
        [worker] = [w for w in resolve_workers(spec, {ref.stack: fleets[ref.stack]}) if w.ref == ref]
        yield from _pair(stack, spec, at, worker)
    workers = resolve_workers(spec, fleets)
    yield from _teams(spec, where, workers, {w.name for w in workers})


def _pair(stack: str, spec: ClusterSpec, at: str, worker: Worker) -> Problems:
    other = worker.cluster.spec
    theirs = other.multikueue.manager if other.multikueue else None
    if theirs is None or (theirs.stack, theirs.cluster) != (stack, spec.name):
        named = f"names manager {theirs.stack}/{theirs.cluster}" if theirs else "names no manager"
        yield SpecProblem(at, f"{stack_file(worker.ref.stack)} cluster {other.name} {named}.",
                          f"Add multikueue: {{manager: {{stack: {stack}, cluster: {spec.name}}}}} to it.")
        return
    found = reach(worker.cloud, other, manager_origin(theirs))
    if found.route is None:
        yield SpecProblem(at, f"this manager cannot reach the worker's API server: {found.refused}.",
                          f"Set multikueue.manager.reach / cidrs in {stack_file(worker.ref.stack)} (docs/clouds.md "
                          "\"Deploy paths\").")
    missing = [op for op in spec.addons.operators if op not in other.addons.operators]
    if missing:
        kinds = "; ".join(job_operators.KNOWN[op] for op in missing if op in job_operators.KNOWN)
        yield SpecProblem(at, f"the worker does not run {', '.join(missing)} ({kinds}), which this manager "
                          "dispatches.", f"Add {', '.join(missing)} to addons.operators of {other.name} in "
                          f"{stack_file(worker.ref.stack)}, or remove them from this manager's.")


def _teams(spec: ClusterSpec, where: str, workers: list[Worker], names: set[str]) -> Problems:
    assert spec.multikueue is not None
    teams = {t.name: t for t in spec.addons.kueue_teams}
    for team, listed in spec.multikueue.order.items():
        if team not in teams:
            yield SpecProblem(f"{where}.order.{team}", f"{team!r} is not a team of this manager's kueue_teams.",
                              f"Teams: {', '.join(teams) or 'none'}.")
        for k, name in enumerate(listed):
            if name not in {r.name for r in spec.multikueue.workers}:
                guess = did_you_mean(name, [r.name for r in spec.multikueue.workers])
                yield SpecProblem(f"{where}.order.{team}[{k}]", f"{name!r} is not a worker of this manager"
                                  f"{f' (did you mean {guess!r}?)' if guess else ''}.",
                                  "Name workers <stack>-<cluster>, as multikueue.workers lists them.")
            elif name in listed[:k]:
                yield SpecProblem(f"{where}.order.{team}[{k}]", f"{name!r} is listed twice.", "List it once.")
    ordered = orders(spec, workers)
    for i, team in enumerate(spec.addons.kueue_teams):
        yield from _team(spec, f"{spec_path(where)}.addons.kueue_teams[{i}]", where, team, ordered[team.name], names)


def spec_path(where: str) -> str:
    return where.removesuffix(".multikueue")


def _team(spec: ClusterSpec, at: str, where: str, team: KueueTeam, listed: list[Worker], names: set[str]) -> Problems:
    assert spec.multikueue is not None
    explicit = team.name in spec.multikueue.order
    for k, worker in enumerate(listed):
        theirs = team_gpus(worker.cluster, team.name)
        place = f"{where}.order.{team.name}[{k}]" if explicit else at
        if not theirs:
            yield SpecProblem(place, f"worker {worker.name} has no Kueue queue for team {team.name}.",
                              f"Add the team to addons.kueue_teams of {worker.cluster.name} in "
                              f"{stack_file(worker.ref.stack)}, or leave the worker out of the team's order.")
        elif not set(theirs) & set(team.gpus):
            yield SpecProblem(place, f"worker {worker.name}'s queue for team {team.name} has no flavor of "
                              f"{', '.join(team.gpus)} (it has {', '.join(theirs)}).",
                              "Give the team quota of those GPUs there, or leave the worker out.")
    if not listed and len(names) == len(spec.multikueue.workers):
        yield SpecProblem(at, f"no worker has a Kueue queue for team {team.name}.",
                          "Add the team to a worker's addons.kueue_teams, or remove it here.")
    for gpu, wanted in team.gpus.items():
        held = sum(team_gpus(w.cluster, team.name).get(gpu, 0) for w in listed)
        if listed and held == 0:
            yield SpecProblem(f"{at}.gpus.{gpu}", f"none of team {team.name}'s workers "
                              f"({', '.join(w.name for w in listed)}) has {gpu} quota for it.",
                              "Give a worker the team's quota of that GPU, or remove it here.")
        elif wanted > held > 0:
            yield SpecProblem(f"{at}.gpus.{gpu}", f"{wanted} {gpu} GPUs is more than the team's workers hold for "
                              f"it ({held}): the manager would admit work no worker can run.",
                              f"Lower it to at most {held}, or raise the workers' quotas.")


def check_worker(stack: str, cloud: Cloud, spec: ClusterSpec, path: str, fleets: Mapping[str, Fleet]) -> Problems:
    """A worker against its manager's stack file: the manager exists and lists it; the rest is the manager's check,
    said here too, where it is fixed."""
    assert spec.multikueue is not None and spec.multikueue.manager is not None
    ref, at = spec.multikueue.manager, f"{path}.multikueue.manager"
    found = reach(cloud, spec, manager_origin(ref))
    if found.route is None:
        yield SpecProblem(f"{at}.reach", f"the MultiKueue manager cannot reach this API server: {found.refused}.",
                          _fix(cloud, spec))
    elif ref.reach == "network" and REACH[cloud].runner_cidrs_used and not ref.cidrs:
        yield SpecProblem(f"{at}.cidrs", f"is empty, but {REACH[cloud].service} lets only listed addresses in "
                          f"({REACH[cloud].runner_cidrs_used}).", "List the manager's node subnets.")
    problems = list(_peer(ref.stack, ref.cluster, fleets, at, "the manager"))
    yield from problems
    if problems:
        return
    manager = find_cluster(fleets, ref.stack, ref.cluster).spec  # type: ignore[union-attr]  # _peer found it
    mine = MultiKueueWorkerRef(stack=stack, cluster=spec.name)
    if not manager.is_manager or mine not in manager.multikueue.workers:  # type: ignore[union-attr]
        yield SpecProblem(at, f"{stack_file(ref.stack)} cluster {ref.cluster} does not list this cluster as a "
                          "worker.", f"Add {{stack: {stack}, cluster: {spec.name}}} to its multikueue.workers.")


def _fix(cloud: Cloud, spec: ClusterSpec) -> str:
    api = REACH[cloud]
    if spec.endpoint == "public":
        return "List the manager's fixed egress addresses in multikueue.manager.cidrs and inside public_access_cidrs."
    return (f"Set multikueue.manager.reach: network (the manager's network connected to this {api.network}) with its "
            "node subnets in cidrs, or endpoint: public with public_access_cidrs covering the manager's cidrs.")


def check_spec(cloud: Cloud, c: ClusterSpec, path: str) -> Problems:
    """What one stack file can say about its MultiKueue role (``check`` does the rest, with the other stacks)."""
    mk, where = c.multikueue, f"{path}.multikueue"
    if mk is None:
        return
    if mk.manager is not None:
        yield from cidr_problems(mk.manager.cidrs, f"{where}.manager.cidrs", "10.64.0.0/14", "is every address.",
                                 "List the manager's own node and pod ranges.")
        return
    if c.node_pools:
        yield SpecProblem(f"{path}.node_pools", "a MultiKueue manager runs no GPU work: its workers do.",
                          "Remove the node pools, or make this cluster a worker (multikueue.manager).")
    if not c.addons.kueue_teams:
        yield SpecProblem(f"{path}.addons.kueue_teams", "is empty: the manager dispatches each team's work through "
                          "the team's ClusterQueue.", "List the teams with their GPU quota for the whole fleet.")
    for i, team in enumerate(c.addons.kueue_teams):
        for gpu in team.gpus:
            if catalog.gpu_product(gpu) is None:
                yield unknown_name(f"{path}.addons.kueue_teams[{i}].gpus.{gpu}", "GPU product", gpu,
                                   sorted(p.name for p in catalog.gpu_products()))
    names = [w.name for w in mk.workers]
    for k, name in enumerate(names):
        if name in names[:k]:
            yield SpecProblem(f"{where}.workers[{k}]", f"worker {name} is listed twice.", "List each worker once.")


def check(stack: str, fleet: Fleet, fleets: Mapping[str, Fleet]) -> list[SpecProblem]:
    """Every cross-stack problem of one stack's MultiKueue clusters (``fleets``: the stacks they name, by name)."""
    out: list[SpecProblem] = []
    for i, cluster in enumerate(fleet.clusters):
        spec, path = cluster.spec, f"clusters[{i}]"
        if spec.is_manager:
            out += check_manager(stack, spec, path, fleets)
        elif spec.multikueue is not None:
            out += check_worker(stack, fleet.cloud, spec, path, fleets)
    return out


def peer_stacks(fleet: Fleet) -> set[str]:
    """The stacks a fleet's MultiKueue clusters name."""
    return {stack for cluster in fleet.clusters for stack in peer_stacks_of(cluster.spec)}


def peer_stacks_of(spec: ClusterSpec) -> set[str]:
    """The stacks one cluster's MultiKueue role names: a manager's workers', a worker's manager's."""
    mk = spec.multikueue
    if mk is None:
        return set()
    return {w.stack for w in mk.workers} | ({mk.manager.stack} if mk.manager else set())
