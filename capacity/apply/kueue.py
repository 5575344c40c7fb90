"""Kueue team quotas from the plan, and pools grown so the quotas never promise more GPUs than they hold."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from capacity.apply import draft
from capacity.apply.carriers import RESERVED
from capacity.apply.edits import Edit, Proposal, add_pool, assign
from capacity.apply.stackdoc import StackDoc, flow_map
from components import catalog
from components.catalog import MachineType
from components.spec import CapacityType


def kueue_quotas(p: Proposal, doc: StackDoc, ci: int, placed: dict[str, dict[str, int]], allow_shrink: bool,
           known: set[str]) -> None:
    cluster = doc.fleet_map()["clusters"][ci]
    gpus_here = {g for t in placed.values() for g in t} | _cluster_gpus(doc, ci)
    addons = cluster.get("addons")
    teams = addons.get("kueue_teams") if addons else None
    if not placed and not teams:
        return
    if addons is None:
        addons = cluster["addons"] = draft.commented({})
    if teams is None:
        teams = addons["kueue_teams"] = draft.commented_seq([])
    path = f"clusters[{ci}].addons.kueue_teams"
    for index, team in reversed(list(enumerate(teams))):
        name = str(team["name"])
        if name not in known:
            continue  # the plan says nothing about this team's work: its queue stays as it is
        quotas = team["gpus"]
        wanted = {g: n for g, n in placed.get(name, {}).items()}
        kept = {g: int(n) for g, n in quotas.items() if g not in gpus_here}
        if not wanted and not kept:
            edit = Edit(doc.name, f"{path}[{index}]", name, None,
                        f"the plan places no work of team {name} in this cluster in {p.month}")
            if allow_shrink:
                del teams[index]
                p.edits.append(edit)
            else:
                p.held.append(edit)
            continue
        for gpu in [g for g in quotas if g in gpus_here and g not in wanted]:
            p.edits.append(Edit(doc.name, f"{path}[{index}].gpus.{gpu}", int(quotas[gpu]), None,
                                f"the plan places no {gpu} work of team {name} here in {p.month}"))
            del quotas[gpu]
        for gpu, n in sorted(wanted.items()):
            assign(p, doc, quotas, f"{path}[{index}].gpus", gpu, n,
                    f"team {name}'s peak {gpu} GPUs in this cluster in {p.month}")
    known = {str(t["name"]) for t in teams}
    for name in sorted(set(placed) - known):
        teams.append(flow_map({"name": name, "gpus": flow_map(dict(sorted(placed[name].items())))}))
        p.edits.append(Edit(doc.name, f"{path}[{len(teams) - 1}]", None, name,
                            f"team {name} runs here in {p.month} (new Kueue queue)"))


def _cluster_gpus(doc: StackDoc, ci: int) -> set[str]:
    """GPUs the cluster's pools provide, including pools added by this proposal."""
    out = {pool.machine.gpu for pool in doc.fleet.clusters[ci].pools} if ci < len(doc.fleet.clusters) else set()
    for node in doc.fleet_map()["clusters"][ci].get("node_pools", []):
        machine = catalog.by_name(doc.fleet.cloud, str(node.get("machine_type", "")))
        if machine:
            out.add(machine.gpu)
    return out


def cover_quotas(p: Proposal, doc: StackDoc, ci: int) -> None:
    """Kueue may not promise more GPUs than the pools can hold (teams held back keep their quota): grow the
    cluster's elastic pool of that GPU, or add an on-demand one, which costs nothing while it is idle."""
    cluster = doc.fleet_map()["clusters"][ci]
    asked: dict[str, int] = defaultdict(int)
    for team in (cluster.get("addons") or {}).get("kueue_teams") or []:
        for gpu, n in team["gpus"].items():
            asked[gpu] += int(n)
    pools: dict[str, list[tuple[int, Any, MachineType]]] = defaultdict(list)
    for pi, node in enumerate(cluster.get("node_pools", [])):
        machine = _nodemachine_for(doc, ci, pi, node)
        if machine:
            pools[machine.gpu].append((pi, node, machine))
    for gpu, total in asked.items():
        have = sum(int(node["nodes"]["max"]) * m.gpus for _, node, m in pools.get(gpu, []))
        if total <= have or not pools.get(gpu):
            continue  # no pool of that GPU at all: validation names the team's unknown GPU
        why = f"team quotas in this cluster ask for {total} {gpu} GPUs"
        elastic = [(pi, node, m) for pi, node, m in pools[gpu]
                   if str((node.get("capacity") or {}).get("type", "on_demand")) not in {c.value for c in RESERVED}]
        if elastic:
            pi, node, machine = elastic[0]
            grown = int(node["nodes"]["max"]) + math.ceil((total - have) / machine.gpus)
            assign(p, doc, node["nodes"], f"clusters[{ci}].node_pools[{pi}].nodes", "max", grown, why)
        else:
            machine = pools[gpu][0][2]
            region = str(cluster["region"])
            added = add_pool(p, (doc.fleet.cloud.value, region, gpu), CapacityType.ON_DEMAND, machine, (doc, ci),
                              math.ceil((total - have) / machine.gpus), reserved=False)
            p.edits.append(Edit(doc.name, added.path, None, added.node["name"], why))


def _nodemachine_for(doc: StackDoc, ci: int, pi: int, node: Any) -> MachineType | None:
    clusters = doc.fleet.clusters
    if ci < len(clusters) and pi < len(clusters[ci].pools) and clusters[ci].pools[pi].name == node["name"]:
        return clusters[ci].pools[pi].machine
    return catalog.by_name(doc.fleet.cloud, str(node.get("machine_type", "")))
