"""Native quota units <-> GPUs, through the machine catalogue only.

AWS counts vCPUs per instance family and Azure vCPUs per VM family (spot: regional low-priority vCPUs);
GCP counts GPUs per metric. A family's vCPU quota converts to GPUs with the machine type the planner
would use for that GPU: GPUs = floor(vcpus / machine.vcpus) * machine.gpus.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from capacity.schema import Market
from components import catalog
from components.catalog import Cloud, MachineType, QuotaUnit


@dataclass(frozen=True)
class NativeQuota:
    """One native quota a GPU model counts against, and the machine that converts it."""

    cloud: Cloud
    gpu: str
    market: Market
    name: str  # AWS quota code, GCP metric, Azure VM family / lowPriorityCores
    unit: QuotaUnit
    machine: MachineType

    def to_gpus(self, value: float) -> int:
        if self.unit is QuotaUnit.GPUS:
            return max(0, int(value))
        return max(0, int(value // self.machine.vcpus)) * self.machine.gpus

    def to_native(self, gpus: int) -> int:
        if self.unit is QuotaUnit.GPUS:
            return gpus
        return math.ceil(gpus / self.machine.gpus) * self.machine.vcpus


def machine_for(cloud: Cloud, gpu: str) -> MachineType | None:
    """The catalogue's default machine for this GPU on this cloud, else the one with the most GPUs."""
    machines = catalog.matching(cloud, gpu, None)
    if not machines:
        return None
    return max(machines, key=lambda m: (m.default_for_gpu, m.gpus, m.name))


def native_quotas(cloud: Cloud, gpu: str, market: Market, offered: set[str] | None = None) -> list[NativeQuota]:
    """The distinct native quotas this GPU counts against; each converts with the default machine of that
    quota with the most GPUs (a training node). A GPU with two quotas (GCP H100 and H100 Mega) may use the
    sum of both. With ``offered``, only those machine types count."""
    by_name: dict[str, list[MachineType]] = {}
    for machine in catalog.matching(cloud, gpu, None):
        if offered is not None and machine.name not in offered:
            continue
        name = machine.quota.on_demand if market is Market.ON_DEMAND else machine.quota.spot
        by_name.setdefault(name, []).append(machine)
    out = []
    for name, machines in sorted(by_name.items()):
        machine = max(machines, key=lambda m: (m.default_for_gpu, m.gpus, m.name))
        out.append(NativeQuota(cloud, gpu, market, name, machine.quota.unit, machine))
    return out


def primary(cloud: Cloud, gpu: str, market: Market) -> NativeQuota | None:
    """The native quota of the default machine: the one a quota increase request names."""
    machine = machine_for(cloud, gpu)
    if machine is None:
        return None
    name = machine.quota.on_demand if market is Market.ON_DEMAND else machine.quota.spot
    return next((q for q in native_quotas(cloud, gpu, market) if q.name == name), None)


def shared_by(cloud: Cloud, name: str) -> list[str]:
    """GPU models that count against the same native quota (AWS P-family vCPUs, Azure low-priority cores)."""
    return sorted({m.gpu for m in catalog.for_cloud(cloud) if m.gpu and name in (m.quota.on_demand, m.quota.spot)})
