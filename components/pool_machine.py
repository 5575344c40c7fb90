"""Which catalogue machine a node pool asks for (an accelerator and a GPU count, or a machine type), the problems
that stop the choice, and the note when a pool named a GPU family and got its default product."""

from __future__ import annotations

from components import catalog
from components.catalog import Cloud, MachineType
from components.errors import SpecProblem, unknown_name
from components.spec import FleetSpec, NodePoolSpec


def pick_machine(cloud: Cloud, pool: NodePoolSpec, path: str) -> tuple[MachineType | None, list[SpecProblem]]:
    """The catalogue row a node pool asks for, or the problems that stop us choosing one."""
    if pool.machine_type:
        machine = catalog.by_name(cloud, pool.machine_type)
        if machine is None:
            kind = f"{cloud.title} GPU machine type"
            return None, [unknown_name(f"{path}.machine_type", kind, pool.machine_type, catalog.names(cloud))]
        clash = []
        if pool.accelerator and catalog.resolve_gpu(pool.accelerator) != machine.gpu and \
                pool.accelerator not in _family_of(machine.gpu):
            clash.append(f"accelerator {pool.accelerator}")
        if pool.gpus and pool.gpus != machine.gpus:
            clash.append(f"gpus {pool.gpus}")
        if clash:
            return None, [SpecProblem(path, f"{machine.name} has {machine.gpus} x {machine.gpu}, not "
                                      f"{' and '.join(clash)}.", "Drop accelerator/gpus or the machine_type.")]
        return machine, []
    assert pool.accelerator is not None
    gpu = catalog.resolve_gpu(pool.accelerator)
    if gpu is None:
        return None, [unknown_name(f"{path}.accelerator", "GPU", pool.accelerator, catalog.gpu_names())]
    found = catalog.matching(cloud, gpu, pool.gpus)
    if not found:
        counts = sorted({m.gpus for m in catalog.matching(cloud, gpu, None)})
        offer = f"it comes with {', '.join(map(str, counts))} GPUs per node" if counts else "it is not offered"
        return None, [SpecProblem(f"{path}.gpus", f"no {cloud.title} machine type has {pool.gpus} x {gpu}; "
                                  f"{offer}.{_other_variants(cloud, gpu, pool.gpus)}",
                                  "Change gpus, or name a machine_type.")]
    defaults = [m for m in found if m.default_for_gpu]
    if len(found) > 1 and len(defaults) != 1:
        options = ", ".join(f"{m.name} ({m.gpus} x {m.gpu_memory_gib} GiB)" for m in found)
        return None, [SpecProblem(f"{path}.accelerator", f"{gpu} is ambiguous on {cloud.title}: "
                                  f"{options}.", "Set gpus, or name a machine_type.")]
    return (defaults[0] if len(found) > 1 else found[0]), []


def _family_of(product: str) -> tuple[str, ...]:
    found = catalog.gpu_product(product)
    return (found.family,) if found else ()


def _other_variants(cloud: Cloud, gpu: str, gpus: int | None) -> str:
    """' H100-NVL does (Standard_NC40ads_H100_v5): write accelerator: H100-NVL.' when a sibling product of the
    family has the asked count on this cloud, so a user who meant the other variant learns its name."""
    family = _family_of(gpu)
    siblings = [p for p in catalog.gpu_families().get(family[0], []) if p != gpu] if family else []
    for other in siblings:
        machines = catalog.matching(cloud, other, gpus)
        if machines:
            return f" {other} does ({', '.join(m.name for m in machines)}): write accelerator: {other} if you " \
                   "meant it."
    return ""


def family_notes(spec: FleetSpec) -> list[SpecProblem]:
    """Not problems: one note per node pool that named a GPU family (``A100``), saying which product it got."""
    notes = []
    for i, cluster in enumerate(spec.clusters):
        for j, pool in enumerate(cluster.node_pools):
            if pool.machine_type or not pool.accelerator or catalog.gpu_product(pool.accelerator):
                continue
            machine, _ = pick_machine(spec.cloud, pool, "")
            if machine is None:
                continue
            others = [p for p in catalog.gpu_families()[pool.accelerator] if p != machine.gpu]
            notes.append(SpecProblem(
                f"clusters[{i}].node_pools[{j}].accelerator",
                f"{pool.accelerator!r} is a GPU family; picked its default product {machine.gpu} "
                f"({machine.name}, {machine.gpus} x {machine.gpu_memory_gib} GB).",
                f"Write accelerator: {machine.gpu} to keep it and silence this note"
                + (f", or {' / '.join(others)} for the other variant." if others else ".")))
    return notes
