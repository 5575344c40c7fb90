"""The GPU (and system CPU) machine catalogue: the single source of machine facts.

Rows live in ``components/data/machine_types.csv`` (one row per machine type, with a source link) and
region/zone offerings in ``components/data/offerings.csv``. Adding a machine type is one row in each.

GPUs are named as products, by what a job depends on (``A100-40GB`` and ``A100-80GB``, ``H100`` for SXM and
``H100-NVL``): ``components/data/gpu_products.csv`` lists them with their family and memory. A plain family name
(``A100``) stands for the family's default product; see :func:`resolve_gpu`.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from enum import StrEnum
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

DATA = Path(__file__).parent / "data"


class Cloud(StrEnum):
    AWS = "aws"
    GCP = "gcp"
    AZURE = "azure"

    @property
    def title(self) -> str:
        return {"aws": "AWS", "gcp": "GCP", "azure": "Azure"}[self.value]


class Fabric(StrEnum):
    """The GPU-to-GPU network between nodes."""

    NONE = "none"
    EFA = "efa"  # AWS Elastic Fabric Adapter
    INFINIBAND = "infiniband"  # Azure ND InfiniBand
    TCPX = "tcpx"  # GCP GPUDirect-TCPX (A3 High)
    TCPXO = "tcpxo"  # GCP GPUDirect-TCPXO (A3 Mega)
    RDMA = "rdma"  # GCP GPUDirect-RDMA over RoCE (A3 Ultra, A4)


class QuotaUnit(StrEnum):
    VCPUS = "vcpus"  # AWS instance-family vCPU quotas, Azure VM-family vCPU quotas
    GPUS = "gpus"  # GCP NVIDIA_*_GPUS region quotas


class QuotaKey(BaseModel):
    """What the cloud counts a machine under: quota code / metric / VM family, for on-demand and spot."""

    model_config = ConfigDict(frozen=True)

    on_demand: str
    spot: str
    unit: QuotaUnit


class GpuProduct(BaseModel):
    """A GPU product as jobs see it: its family, its memory per GPU, and whether it is the family's default."""

    model_config = ConfigDict(frozen=True)

    name: str  # A100-80GB, H100, H100-NVL, ...
    family: str  # A100, H100, ...: the name a node pool may use for the family's default product
    family_default: bool
    memory_gb: int = Field(gt=0)
    description: str
    source: str


class MachineType(BaseModel):
    """Facts about one machine type. GPU-less rows serve the system (CPU) node pools."""

    model_config = ConfigDict(frozen=True)

    cloud: Cloud
    name: str
    gpu: str = ""  # GPU product (gpu_products.csv): H100, H100-NVL, A100-40GB, ...; "" for CPU rows
    gpus: int = Field(ge=0)
    gpu_memory_gib: int = Field(ge=0)
    vcpus: int = Field(gt=0)
    memory_gib: int = Field(gt=0)
    fabric: Fabric = Fabric.NONE
    network_gbps: int = Field(ge=0)
    network_cards: int = Field(default=1, ge=1)  # AWS: ENI network cards
    efa_interfaces: int = Field(default=0, ge=0)  # AWS: EFA interfaces (one per network card used)
    ib_ports: int = Field(default=0, ge=0)  # Azure: InfiniBand HCAs
    gpu_nics: int = Field(default=0, ge=0)  # GCP: extra GPU NICs, one extra VPC each
    accelerator_type: str = ""  # GCP guest accelerator type (nvidia-h100-mega-80gb, ...)
    local_nvme_gib: int = Field(default=0, ge=0)
    nccl_busbw_gbyte_per_s: float = Field(default=0, ge=0)  # health-gate pass threshold, all-reduce bus bandwidth
    default_for_gpu: bool = False  # chosen when a pool asks for this GPU and count on this cloud
    quota: QuotaKey
    source: str

    @field_validator("source")
    @classmethod
    def _source_is_link(cls, v: str) -> str:
        if not v.startswith("https://"):
            raise ValueError("source must be an https link")
        return v

    @property
    def interconnect(self) -> bool:
        return self.fabric is not Fabric.NONE

    @property
    def quota_units_per_node(self) -> int:
        return self.vcpus if self.quota.unit is QuotaUnit.VCPUS else self.gpus


def _split(value: str) -> tuple[str, ...]:
    return tuple(v for v in value.split() if v)


@cache
def machine_types() -> tuple[MachineType, ...]:
    with (DATA / "machine_types.csv").open(newline="") as fh:
        rows = []
        for row in csv.DictReader(fh):
            quota = QuotaKey(on_demand=row.pop("quota_on_demand"), spot=row.pop("quota_spot"),
                             unit=row.pop("quota_unit"))
            fields = {k: v for k, v in row.items() if v != ""}
            rows.append(MachineType(quota=quota, **fields))
    return tuple(rows)


@cache
def gpu_products() -> tuple[GpuProduct, ...]:
    with (DATA / "gpu_products.csv").open(newline="") as fh:
        return tuple(GpuProduct.model_validate(row) for row in csv.DictReader(fh))


def gpu_product(name: str) -> GpuProduct | None:
    return next((p for p in gpu_products() if p.name == name), None)


def gpu_families() -> dict[str, list[str]]:
    """family -> its products, the default first."""
    out: dict[str, list[str]] = {}
    for p in sorted(gpu_products(), key=lambda p: (not p.family_default, p.name)):
        out.setdefault(p.family, []).append(p.name)
    return out


def resolve_gpu(name: str) -> str | None:
    """The product a GPU name means: a product name is itself; a family name that is not also a product
    (``A100``) is the family's default product (``A100-40GB``); anything else is None."""
    if gpu_product(name):
        return name
    variants = gpu_families().get(name)
    return variants[0] if variants else None


def gpu_names() -> list[str]:
    """Every name a node pool's ``accelerator`` accepts: the products and the families that are not products."""
    return sorted({p.name for p in gpu_products()} | set(gpu_families()))


@cache
def offerings() -> dict[tuple[Cloud, str], dict[str, tuple[str, ...]]]:
    """(cloud, machine type) -> {region: zones that offer it}."""
    out: dict[tuple[Cloud, str], dict[str, tuple[str, ...]]] = {}
    with (DATA / "offerings.csv").open(newline="") as fh:
        for row in csv.DictReader(fh):
            key = (Cloud(row["cloud"]), row["machine_type"])
            out.setdefault(key, {})[row["region"]] = _split(row["zones"])
    return out


def by_name(cloud: Cloud, name: str) -> MachineType | None:
    return next((m for m in machine_types() if m.cloud == cloud and m.name == name), None)


def names(cloud: Cloud, gpu: bool = True) -> list[str]:
    return [m.name for m in machine_types() if m.cloud == cloud and (m.gpus > 0) == gpu]


def gpu_models() -> list[str]:
    """The GPU products some machine type carries: the names demand, quotas, offers and Kueue teams use."""
    return sorted({m.gpu for m in machine_types() if m.gpu})


def matching(cloud: Cloud, gpu: str, gpus: int | None) -> list[MachineType]:
    return [m for m in machine_types()
            if m.cloud == cloud and m.gpu == gpu and (gpus is None or m.gpus == gpus)]


def regions(cloud: Cloud, name: str) -> dict[str, tuple[str, ...]]:
    return offerings().get((cloud, name), {})


def smallest_cpu(cloud: Cloud, vcpus: int, memory_gib: int) -> MachineType | None:
    """The smallest CPU machine type with at least this many vCPUs and this much memory."""
    fits = [m for m in machine_types()
            if m.cloud == cloud and m.gpus == 0 and m.vcpus >= vcpus and m.memory_gib >= memory_gib]
    return min(fits, key=lambda m: (m.vcpus, m.memory_gib), default=None)


def for_cloud(cloud: Cloud) -> Iterable[MachineType]:
    return (m for m in machine_types() if m.cloud == cloud)
