"""What a proposal is made of (edits, purchases, the pools they touch) and the edits that size or add a pool."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from capacity.apply import draft
from capacity.apply.need import EPS, Key
from capacity.apply.stackdoc import StackDoc, flow_map
from components import catalog
from components.catalog import Cloud, MachineType
from components.spec import PENDING_ID, CapacityType
from stacks.config import PLAN_KEY

# Reserved kinds first: GPUs they hold beyond the plan's commitments carry on-demand work before new nodes do.
SUFFIX = {CapacityType.RESERVATION: "res", CapacityType.CAPACITY_BLOCK: "cb", CapacityType.ON_DEMAND: "od",
          CapacityType.FLEX_START: "flex", CapacityType.SPOT: "spot"}


@dataclass(frozen=True)
class Edit:
    stack: str
    path: str
    before: Any
    after: Any
    why: str


@dataclass(frozen=True)
class Purchase:
    cloud: str
    region: str
    machine_type: str
    nodes: int
    what: str
    pool: str  # stack:path of the pool that carries it


@dataclass
class Proposal:
    month: str
    docs: list[StackDoc]
    edits: list[Edit] = field(default_factory=list)
    held: list[Edit] = field(default_factory=list)  # not applied: needs allow_shrink
    purchases: list[Purchase] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def net_edits(self) -> list[Edit]:
        """One line per (stack, path): the first value before, the last after; changes that cancel out go."""
        first: dict[tuple[str, str], Edit] = {}
        for e in self.edits:
            key = (e.stack, e.path)
            first[key] = Edit(e.stack, e.path, first[key].before if key in first else e.before, e.after, e.why)
        return sorted((e for e in first.values() if e.before != e.after), key=lambda e: e.stack)

    def changed(self) -> list[StackDoc]:
        return [d for d in self.docs if d.draft or d.dump() != d.text]

    def problems(self) -> list[str]:
        return [p for d in self.changed() for p in d.revalidate()]


@dataclass
class Pool:
    doc: StackDoc
    cluster: int
    index: int
    machine: MachineType
    capacity: CapacityType
    others: tuple[str, ...] = ()  # teams the plan does not know with Kueue quota for this GPU in the cluster

    @property
    def node(self) -> Any:
        return self.doc.fleet_map()["clusters"][self.cluster]["node_pools"][self.index]

    @property
    def path(self) -> str:
        return f"clusters[{self.cluster}].node_pools[{self.index}]"

    @property
    def max_gpus(self) -> int:
        return int(self.node["nodes"]["max"]) * self.machine.gpus


def set_nodes(p: Proposal, pool: Pool, nodes: int, floor: int, why: str, allow_shrink: bool = True) -> None:
    """Size a pool; a pool that teams the plan does not know may use is not shrunk without allow_shrink."""
    spec = pool.node["nodes"]
    new_max = max(nodes, 1)
    current = int(spec["max"])
    if pool.others and new_max < current and not allow_shrink:
        p.held.append(Edit(pool.doc.name, f"{pool.path}.nodes.max", current, new_max,
                           f"{why}; but team(s) {', '.join(pool.others)}, not in the plan, hold Kueue quota for "
                           f"{pool.machine.gpu} in this cluster"))
        return
    new_min = min(max(floor, min(int(spec.get("min", 0)), nodes)), new_max)
    assign(p, pool.doc, spec, f"{pool.path}.nodes", "max", new_max, why)
    assign(p, pool.doc, spec, f"{pool.path}.nodes", "min", new_min, why)
    if "desired" in spec:
        assign(p, pool.doc, spec, f"{pool.path}.nodes", "desired", min(max(int(spec["desired"]), new_min), new_max),
                why)


def assign(p: Proposal, doc: StackDoc, node: Any, path: str, key: str, value: Any, why: str) -> None:
    before = node.get(key)
    if before != value:
        node[key] = value
        p.edits.append(Edit(doc.name, f"{path}.{key}", before, value, why))


def machine_for(key: Key, commit: dict[str, int], pools: list[Pool]) -> MachineType | None:
    """The machine type for new capacity: the one committed to, else the key's pools', else the catalogue's
    default for the GPU offered in the region."""
    cloud = Cloud(key[0])
    for name in commit:
        found = catalog.by_name(cloud, name)
        if found:
            return found
    if pools:
        return pools[0].machine
    offered = [m for m in catalog.for_cloud(cloud) if m.gpu == key[2] and key[1] in catalog.regions(cloud, m.name)]
    return min(offered, key=lambda m: (not m.default_for_gpu, -m.gpus, m.name), default=None)


def add_pool(p: Proposal, key: Key, ctype: CapacityType, machine: MachineType, host: tuple[StackDoc, int],
              nodes: int, reserved: bool) -> Pool:
    doc, ci = host
    cluster = doc.fleet_map()["clusters"][ci]
    pools = cluster.setdefault("node_pools", [])
    taken = {str(x["name"]) for x in pools}
    base = f"{key[2].lower()}-{SUFFIX[ctype]}"
    name = next(n for n in (base, *(f"{base}-{i}" for i in range(2, 99))) if n not in taken)
    node: dict[str, Any] = {"name": name, "machine_type": machine.name,
                            "nodes": flow_map({"min": nodes if reserved else 0, "max": nodes})}
    if ctype is not CapacityType.ON_DEMAND:
        node["capacity"] = flow_map({"type": ctype.value, **({"id": PENDING_ID} if reserved else {})})
    zone = _zone(machine, key[1], [str(z) for z in cluster.get("zones", [])])
    if zone:
        node["zone"] = zone
    pools.append(draft.commented(node))
    pool = Pool(doc, ci, len(pools) - 1, machine, ctype)
    p.edits.append(Edit(doc.name, pool.path, None, name, f"{key[2]} {ctype.value}: new pool, {nodes} x "
                        f"{machine.name}" + (" (buy it, then replace the pending id)" if reserved else "")))
    return pool


def _zone(machine: MachineType, region: str, zones: list[str]) -> str | None:
    offered = catalog.regions(machine.cloud, machine.name).get(region, ())
    return next((z for z in zones if z in offered), None)


def record_plan_cost(p: Proposal, doc: StackDoc, usd: float) -> None:
    """Write what the plan spends on the work it places in this stack this month (stacks.config.PLAN_KEY, which
    `gpufleet pr` shows beside the cost of every pool at max); a stack the plan no longer places work in keeps
    a record only if it had one, at 0."""
    config = doc.doc["config"]
    if usd <= EPS and PLAN_KEY not in config:
        return
    assign(p, doc, config, "config", PLAN_KEY, flow_map({"month": p.month, "usd_per_month": round(usd, 2)}),
           f"what the plan spends on the work it places in this stack in {p.month}")
