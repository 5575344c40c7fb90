"""Invariants of the bundled machine catalogue (components/data/*.csv) and its loader.

Each test states a fact that a wrong or careless row would break: a duplicated name, an EFA count
larger than the card count, a fabric without the devices it needs, two defaults for one request,
an offering that names no catalogue row.
"""

from __future__ import annotations

import csv
import re
from collections import Counter, defaultdict

import pytest

from components import catalog
from components.capabilities import capabilities
from components.catalog import Cloud, Fabric, MachineType, QuotaUnit

ROWS = catalog.machine_types()
GPU_ROWS = [m for m in ROWS if m.gpus > 0]
CPU_ROWS = [m for m in ROWS if m.gpus == 0]
OFFERINGS = catalog.offerings()

KNOWN_GPUS = {"A100-40GB", "A100-80GB", "A10G", "B200", "GB200", "H100", "H100-NVL", "H200", "L4", "L40S"}
SOURCE_HOSTS = {
    Cloud.AWS: ("docs.aws.amazon.com", "aws.amazon.com"),
    Cloud.GCP: ("cloud.google.com",),
    Cloud.AZURE: ("learn.microsoft.com",),
}
GCP_FABRICS = {Fabric.TCPX, Fabric.TCPXO, Fabric.RDMA}


def row(cloud: Cloud, name: str) -> MachineType:
    m = catalog.by_name(cloud, name)
    assert m is not None, f"{cloud.value}:{name} is not in the catalogue"
    return m


def _ids(rows: list[MachineType]) -> list[str]:
    return [f"{m.cloud.value}:{m.name}" for m in rows]


# --------------------------------------------------------------------------- files and loader


def test_machine_types_header_is_exactly_the_schema() -> None:
    """A misspelt column would be silently ignored by the loader (and its default used instead)."""
    with (catalog.DATA / "machine_types.csv").open(newline="") as fh:
        header = next(csv.reader(fh))
    expected = [f for f in MachineType.model_fields if f != "quota"]
    expected += ["quota_on_demand", "quota_spot", "quota_unit"]
    assert sorted(header) == sorted(expected)
    assert len(header) == len(set(header))


def test_every_csv_line_is_one_complete_row() -> None:
    for path in ("machine_types.csv", "offerings.csv", "gpu_products.csv"):
        with (catalog.DATA / path).open(newline="") as fh:
            lines = list(csv.reader(fh))
        width = len(lines[0])
        bad = [i for i, line in enumerate(lines[1:], start=2) if len(line) != width]
        assert not bad, f"{path}: lines {bad} do not have {width} fields"


def test_catalogue_covers_every_cloud_and_gpu_model() -> None:
    assert {m.cloud for m in ROWS} == set(Cloud)
    assert set(catalog.gpu_models()) == KNOWN_GPUS


def test_names_are_unique_per_cloud() -> None:
    counts = Counter((m.cloud, m.name) for m in ROWS)
    dupes = [f"{c.value}:{n}" for (c, n), k in counts.items() if k > 1]
    assert not dupes, f"duplicated machine types: {dupes}"


@pytest.mark.parametrize("m", ROWS, ids=_ids(ROWS))
def test_source_is_the_vendor_page(m: MachineType) -> None:
    host = re.match(r"https://([^/]+)/", m.source)
    assert host, m.source
    assert host.group(1).endswith(SOURCE_HOSTS[m.cloud]), m.source


# --------------------------------------------------------------------------- GPU and CPU rows


@pytest.mark.parametrize("m", GPU_ROWS, ids=_ids(GPU_ROWS))
def test_gpu_rows_are_complete(m: MachineType) -> None:
    assert m.gpu in KNOWN_GPUS
    assert m.gpu_memory_gib > 0
    assert m.memory_gib >= m.vcpus  # at least 1 GiB per vCPU on every GPU host sold today
    assert m.network_gbps > 0


@pytest.mark.parametrize("m", CPU_ROWS, ids=_ids(CPU_ROWS))
def test_cpu_rows_carry_no_gpu_facts(m: MachineType) -> None:
    assert m.gpu == ""
    assert m.gpu_memory_gib == 0
    assert m.fabric is Fabric.NONE
    assert m.accelerator_type == ""
    assert not m.default_for_gpu
    assert m.nccl_busbw_gbyte_per_s == 0


@pytest.mark.parametrize("cloud", list(Cloud))
def test_each_cloud_has_system_pool_cpu_rows_from_4_to_16_vcpus(cloud: Cloud) -> None:
    cpu = [m for m in CPU_ROWS if m.cloud is cloud]
    assert {4, 8, 16} <= {m.vcpus for m in cpu}
    assert all(4 <= m.vcpus <= 16 for m in cpu)
    assert catalog.names(cloud, gpu=False)
    smallest = catalog.smallest_cpu(cloud, vcpus=4, memory_gib=16)
    assert smallest is not None and smallest.vcpus == 4
    assert catalog.smallest_cpu(cloud, vcpus=5, memory_gib=1).vcpus == 8
    assert catalog.smallest_cpu(cloud, vcpus=17, memory_gib=1) is None


# --------------------------------------------------------------------------- fabrics


@pytest.mark.parametrize("m", ROWS, ids=_ids(ROWS))
def test_fabric_devices_match_the_fabric(m: MachineType) -> None:
    if m.fabric is Fabric.EFA:
        assert m.cloud is Cloud.AWS
        assert 1 <= m.efa_interfaces <= m.network_cards
    else:
        assert m.efa_interfaces == 0

    if m.fabric is Fabric.INFINIBAND:
        assert m.cloud is Cloud.AZURE
        assert m.ib_ports > 0
        assert m.ib_ports <= m.gpus  # one HCA per GPU at most
    else:
        assert m.ib_ports == 0

    if m.fabric in GCP_FABRICS:
        assert m.cloud is Cloud.GCP
        assert m.gpu_nics > 0
        assert m.accelerator_type
    else:
        assert m.gpu_nics == 0

    if m.cloud is not Cloud.AWS:
        assert m.network_cards == 1


@pytest.mark.parametrize("m", ROWS, ids=_ids(ROWS))
def test_nccl_threshold_only_on_fabric_rows_and_below_line_rate(m: MachineType) -> None:
    assert (m.nccl_busbw_gbyte_per_s > 0) == m.interconnect
    # GB/s threshold versus Gb/s line rate: a pass mark above the wire would always fail.
    assert m.nccl_busbw_gbyte_per_s <= m.network_gbps / 8


def test_gcp_gpu_rows_have_accelerator_type_and_others_do_not() -> None:
    for m in ROWS:
        if m.cloud is Cloud.GCP and m.gpus > 0:
            assert re.fullmatch(r"nvidia-[a-z0-9-]+", m.accelerator_type), m.name
        else:
            assert m.accelerator_type == "", m.name


def test_one_gce_accelerator_type_means_one_gpu_model_and_memory() -> None:
    seen: dict[str, tuple[str, int]] = {}
    for m in ROWS:
        if m.accelerator_type:
            assert seen.setdefault(m.accelerator_type, (m.gpu, m.gpu_memory_gib)) == (m.gpu, m.gpu_memory_gib)


# --------------------------------------------------------------------------- defaults


def test_at_most_one_default_per_cloud_gpu_and_count() -> None:
    groups: dict[tuple[Cloud, str, int], list[MachineType]] = defaultdict(list)
    for m in GPU_ROWS:
        groups[(m.cloud, m.gpu, m.gpus)].append(m)
    for key, members in groups.items():
        defaults = [m.name for m in members if m.default_for_gpu]
        assert len(defaults) <= 1, f"{key}: several defaults {defaults}"
        if len(members) > 1:
            assert defaults, f"{key} is ambiguous ({[m.name for m in members]}) but has no default"


@pytest.mark.parametrize(
    ("cloud", "gpu", "gpus", "expected"),
    [
        (Cloud.AWS, "A100-40GB", 8, "p4d.24xlarge"),
        (Cloud.AWS, "A100-80GB", 8, "p4de.24xlarge"),
        (Cloud.AWS, "H200", 8, "p5en.48xlarge"),
        (Cloud.GCP, "H100", 8, "a3-megagpu-8g"),
        (Cloud.GCP, "A100-40GB", 8, "a2-highgpu-8g"),
        (Cloud.GCP, "A100-80GB", 8, "a2-ultragpu-8g"),
        (Cloud.AZURE, "H100", 8, "Standard_ND96isr_H100_v5"),
        (Cloud.AZURE, "H100-NVL", 1, "Standard_NC40ads_H100_v5"),
        (Cloud.AZURE, "A100-40GB", 8, "Standard_ND96asr_v4"),
        (Cloud.AZURE, "A100-80GB", 8, "Standard_ND96amsr_A100_v4"),
    ],
)
def test_default_is_what_a_trainer_expects(cloud: Cloud, gpu: str, gpus: int, expected: str) -> None:
    candidates = catalog.matching(cloud, gpu, gpus)
    assert [m.name for m in candidates if m.default_for_gpu] == [expected]


# GPU memory per GPU as each cloud's own page states it (literal, with the page): the product a row names must
# agree, so an 80 GB machine can never be filed under a 40 GB product (or SXM under NVL).
VENDOR_GPU_MEMORY = [
    # https://aws.amazon.com/ec2/instance-types/p4/: p4d 8 x A100 with 320 GB HBM2; p4de 8 x A100 with 640 GB HBM2e
    (Cloud.AWS, "p4d.24xlarge", "A100-40GB", 40),
    (Cloud.AWS, "p4de.24xlarge", "A100-80GB", 80),
    # https://aws.amazon.com/ec2/instance-types/p5/: p5 640 GB HBM3 (8 x H100); p5e / p5en 1128 GB HBM3e (8 x H200)
    (Cloud.AWS, "p5.48xlarge", "H100", 80),
    (Cloud.AWS, "p5e.48xlarge", "H200", 141),
    (Cloud.AWS, "p5en.48xlarge", "H200", 141),
    # https://aws.amazon.com/ec2/instance-types/p6/: p6-b200.48xlarge 8 x B200, 1440 GB HBM3e
    (Cloud.AWS, "p6-b200.48xlarge", "B200", 180),
    # https://cloud.google.com/compute/docs/accelerator-optimized-machines: a2-highgpu 40 GB HBM2 per GPU,
    # a2-ultragpu 80 GB HBM2e, a3-high / a3-mega 80 GB HBM3, a3-ultra 141 GB HBM3e, a4 180 GB HBM3e (1440 / 8)
    (Cloud.GCP, "a2-highgpu-8g", "A100-40GB", 40),
    (Cloud.GCP, "a2-ultragpu-8g", "A100-80GB", 80),
    (Cloud.GCP, "a3-highgpu-8g", "H100", 80),
    (Cloud.GCP, "a3-megagpu-8g", "H100", 80),
    (Cloud.GCP, "a3-ultragpu-8g", "H200", 141),
    (Cloud.GCP, "a4-highgpu-8g", "B200", 180),
    # https://learn.microsoft.com/en-us/azure/virtual-machines/sizes/gpu-accelerated/ndasra100v4-series: A100 40GB;
    # .../ndma100v4-series: A100 80GB; .../ndh100v5-series: H100 80GB; .../ncadsh100v5-series: H100 NVL 94GB;
    # .../nd-h200-v5-series: H200 141GB; .../nd-gb200-v6-series: "Nvidia Blackwell GPU (192GB)"
    (Cloud.AZURE, "Standard_ND96asr_v4", "A100-40GB", 40),
    (Cloud.AZURE, "Standard_ND96amsr_A100_v4", "A100-80GB", 80),
    (Cloud.AZURE, "Standard_ND96isr_H100_v5", "H100", 80),
    (Cloud.AZURE, "Standard_NC40ads_H100_v5", "H100-NVL", 94),
    (Cloud.AZURE, "Standard_NC80adis_H100_v5", "H100-NVL", 94),
    (Cloud.AZURE, "Standard_ND96isr_H200_v5", "H200", 141),
    (Cloud.AZURE, "Standard_ND128isr_NDR_GB200_v6", "GB200", 192),
]


@pytest.mark.parametrize(("cloud", "name", "gpu", "memory"), VENDOR_GPU_MEMORY,
                         ids=[f"{c.value}:{n}" for c, n, _, _ in VENDOR_GPU_MEMORY])
def test_training_rows_name_the_product_the_vendor_page_describes(cloud: Cloud, name: str, gpu: str,
                                                                  memory: int) -> None:
    assert (row(cloud, name).gpu, row(cloud, name).gpu_memory_gib) == (gpu, memory)


# --------------------------------------------------------------------------- GPU products and families

PRODUCTS = catalog.gpu_products()


def test_products_are_unique_and_cover_every_gpu_row() -> None:
    names = [p.name for p in PRODUCTS]
    assert len(names) == len(set(names))
    assert {m.gpu for m in GPU_ROWS} == set(names) == KNOWN_GPUS


@pytest.mark.parametrize("m", GPU_ROWS, ids=_ids(GPU_ROWS))
def test_every_gpu_row_has_its_products_memory(m: MachineType) -> None:
    """One product, one memory size: a row whose memory disagrees is filed under the wrong variant."""
    product = catalog.gpu_product(m.gpu)
    assert product is not None and product.memory_gb == m.gpu_memory_gib


def test_each_family_has_exactly_one_default() -> None:
    for family, products in catalog.gpu_families().items():
        defaults = [p.name for p in PRODUCTS if p.family == family and p.family_default]
        assert defaults == [products[0]], family


def test_families_and_their_defaults() -> None:
    """The documented rule (docs/capacity.md, README): A100 alone means A100-40GB; H100 is itself a product (SXM)."""
    assert catalog.gpu_families()["A100"] == ["A100-40GB", "A100-80GB"]
    assert catalog.gpu_families()["H100"] == ["H100", "H100-NVL"]
    assert catalog.resolve_gpu("A100") == "A100-40GB"
    assert catalog.resolve_gpu("A100-80GB") == "A100-80GB"
    assert catalog.resolve_gpu("H100") == "H100"
    assert catalog.resolve_gpu("H100-NVL") == "H100-NVL"
    assert catalog.resolve_gpu("A100-40") is None
    assert "A100" in catalog.gpu_names() and "A100" not in catalog.gpu_models()


# --------------------------------------------------------------------------- quotas

AWS_QUOTAS = {  # family letter -> (Running On-Demand ..., All ... Spot Instance Requests)
    "p": ("L-417A185B", "L-7212CCBC"),
    "g": ("L-DB2E81BA", "L-3819A6DF"),
    "m": ("L-1216C47A", "L-34B43A08"),
}


@pytest.mark.parametrize("m", ROWS, ids=_ids(ROWS))
def test_quota_keys_follow_each_clouds_scheme(m: MachineType) -> None:
    q = m.quota
    if m.cloud is Cloud.AWS:
        assert q.unit is QuotaUnit.VCPUS
        assert (q.on_demand, q.spot) == AWS_QUOTAS[m.name[0]]
    elif m.cloud is Cloud.GCP:
        if m.gpus:
            assert q.unit is QuotaUnit.GPUS
            assert re.fullmatch(r"NVIDIA_[A-Z0-9_]+_GPUS", q.on_demand)
            assert q.spot == f"PREEMPTIBLE_{q.on_demand}"
        else:  # Spot vCPUs of every machine series count against the one PREEMPTIBLE_CPUS metric
            assert q.unit is QuotaUnit.VCPUS
            assert re.fullmatch(r"([A-Z0-9]+_)?CPUS", q.on_demand)
            assert q.spot == "PREEMPTIBLE_CPUS"
    else:
        assert q.unit is QuotaUnit.VCPUS
        assert q.spot == "lowPriorityCores"
        assert q.on_demand.replace(" ", "").lower().endswith("family")
    expected_units = m.vcpus if q.unit is QuotaUnit.VCPUS else m.gpus
    assert m.quota_units_per_node == expected_units


def test_gcp_gpu_quota_metric_is_one_per_accelerator_type() -> None:
    metric_of: dict[str, str] = {}
    for m in GPU_ROWS:
        if m.cloud is Cloud.GCP:
            assert metric_of.setdefault(m.accelerator_type, m.quota.on_demand) == m.quota.on_demand
    assert len(set(metric_of.values())) == len(metric_of)


# --------------------------------------------------------------------------- offerings


def test_every_offering_names_a_catalogue_row() -> None:
    known = {(m.cloud, m.name) for m in ROWS}
    assert not set(OFFERINGS) - known


def test_offering_rows_are_not_repeated() -> None:
    """The loader keeps the last of two rows for one (cloud, type, region) and drops the first."""
    with (catalog.DATA / "offerings.csv").open(newline="") as fh:
        keys = Counter((r["cloud"], r["machine_type"], r["region"]) for r in csv.DictReader(fh))
    assert not [k for k, n in keys.items() if n > 1]


@pytest.mark.parametrize("m", ROWS, ids=_ids(ROWS))
def test_every_row_is_offered_somewhere_with_zones(m: MachineType) -> None:
    regions = catalog.regions(m.cloud, m.name)
    assert regions, "no offering region"
    for region, zones in regions.items():
        assert zones, f"{region} has no zones"
        assert len(zones) == len(set(zones)), f"{region} repeats a zone"
        for zone in zones:
            if m.cloud is Cloud.AWS:  # zone ids, one prefix per region: use1-az6
                assert re.fullmatch(r"[a-z]+[0-9]+-az[0-9]+", zone), zone
                assert {z.rsplit("-", 1)[0] for z in zones} == {zones[0].rsplit("-", 1)[0]}, zones
            elif m.cloud is Cloud.GCP:
                assert re.fullmatch(re.escape(region) + r"-[a-z]", zone), zone
            else:
                assert zone in {"1", "2", "3"}, zone


@pytest.mark.parametrize("cloud", list(Cloud))
def test_a_system_pool_fits_in_every_gpu_region(cloud: Cloud) -> None:
    """A cluster needs a CPU system pool in its zones (validation checks each cluster's; the system pool spreads
    over them): every region with a GPU offering has CPU types in enough zones for a control plane."""
    cpu_zones: dict[str, set[str]] = defaultdict(set)
    for name in catalog.names(cloud, gpu=False):
        for region, zones in catalog.regions(cloud, name).items():
            cpu_zones[region].update(zones)
    needed = capabilities(cloud).min_zones
    for name in catalog.names(cloud, gpu=True):
        for region in catalog.regions(cloud, name):
            assert len(cpu_zones[region]) >= needed, f"{name} in {region}: CPU types in {sorted(cpu_zones[region])}"


@pytest.mark.parametrize(
    ("cloud", "names", "regions"),
    [
        (
            Cloud.AWS,
            [
                "p4d.24xlarge",
                "p5.48xlarge",
                "p5en.48xlarge",
                "p6-b200.48xlarge",
                "g5.48xlarge",
                "g6.48xlarge",
                "g6e.48xlarge",
                "m7i.xlarge",
            ],
            ["us-east-1", "us-east-2", "us-west-2"],
        ),
        # p5e is sold in us-east-2 and us-west-2 (capacity blocks), not us-east-1.
        (Cloud.AWS, ["p5e.48xlarge"], ["us-east-2", "us-west-2"]),
        (
            Cloud.GCP,
            ["a3-highgpu-8g", "a3-megagpu-8g", "a3-ultragpu-8g", "a2-ultragpu-8g", "n2-standard-8"],
            ["us-central1", "us-east5", "europe-west4"],
        ),
        (Cloud.GCP, ["a2-highgpu-8g", "a4-highgpu-8g", "g2-standard-96"], ["us-central1", "europe-west4"]),
        (
            Cloud.AZURE,
            ["Standard_ND96isr_H100_v5", "Standard_D8s_v5"],
            ["eastus", "southcentralus", "westus3", "swedencentral"],
        ),
    ],
)
def test_required_regions_are_offered(cloud: Cloud, names: list[str], regions: list[str]) -> None:
    for name in names:
        offered = catalog.regions(cloud, name)
        assert set(regions) <= set(offered), f"{name}: missing {sorted(set(regions) - set(offered))}"


def test_gcp_hypercomputer_zones() -> None:
    mega = set(catalog.regions(Cloud.GCP, "a3-megagpu-8g")["us-central1"])
    assert {"us-central1-a", "us-central1-c"} & mega
    ultra = catalog.regions(Cloud.GCP, "a3-ultragpu-8g")
    assert ultra.get("us-central1") or "europe-west1-b" in ultra.get("europe-west1", ())
    assert "us-central1-b" in catalog.regions(Cloud.GCP, "a4-highgpu-8g")["us-central1"]


# --------------------------------------------------------------------------- specific facts


@pytest.mark.parametrize(
    ("name", "gpu", "gpus", "cards", "efa"),
    [
        ("p4d.24xlarge", "A100-40GB", 8, 4, 4),
        ("p4de.24xlarge", "A100-80GB", 8, 4, 4),
        ("p5.48xlarge", "H100", 8, 32, 32),
        ("p5e.48xlarge", "H200", 8, 32, 32),
        ("p5en.48xlarge", "H200", 8, 16, 16),
        ("p6-b200.48xlarge", "B200", 8, 8, 8),
        ("g5.48xlarge", "A10G", 8, 1, 1),
        ("g6e.24xlarge", "L40S", 4, 2, 2),
        ("g6e.48xlarge", "L40S", 8, 4, 4),
    ],
)
def test_aws_efa_facts(name: str, gpu: str, gpus: int, cards: int, efa: int) -> None:
    m = row(Cloud.AWS, name)
    assert (m.gpu, m.gpus, m.fabric) == (gpu, gpus, Fabric.EFA)
    assert (m.network_cards, m.efa_interfaces) == (cards, efa)


def test_p5_48xlarge() -> None:
    m = row(Cloud.AWS, "p5.48xlarge")
    assert (m.vcpus, m.memory_gib, m.gpu_memory_gib, m.network_gbps) == (192, 2048, 80, 3200)
    assert m.quota.on_demand == "L-417A185B"


@pytest.mark.parametrize("family", ["g5", "g6", "g6e"])
def test_only_8xlarge_and_up_g_sizes_support_efa(family: str) -> None:
    sizes = {
        "xlarge": False,
        "2xlarge": False,
        "4xlarge": False,
        "8xlarge": True,
        "12xlarge": True,
        "16xlarge": True,
        "24xlarge": True,
        "48xlarge": True,
    }
    for size, efa in sizes.items():
        m = row(Cloud.AWS, f"{family}.{size}")
        assert (m.fabric is Fabric.EFA) == efa, m.name
    assert [row(Cloud.AWS, f"{family}.{s}").gpus for s in sizes] == [1, 1, 1, 1, 4, 1, 4, 8]


@pytest.mark.parametrize(
    ("name", "gpu", "fabric", "nics", "accelerator"),
    [
        ("a3-highgpu-8g", "H100", Fabric.TCPX, 4, "nvidia-h100-80gb"),
        ("a3-megagpu-8g", "H100", Fabric.TCPXO, 8, "nvidia-h100-mega-80gb"),
        ("a3-ultragpu-8g", "H200", Fabric.RDMA, 8, "nvidia-h200-141gb"),
        ("a4-highgpu-8g", "B200", Fabric.RDMA, 8, "nvidia-b200"),
    ],
)
def test_gcp_gpu_network_facts(name: str, gpu: str, fabric: Fabric, nics: int, accelerator: str) -> None:
    m = row(Cloud.GCP, name)
    assert (m.gpu, m.gpus, m.fabric, m.gpu_nics, m.accelerator_type) == (gpu, 8, fabric, nics, accelerator)


def test_gcp_quota_metrics() -> None:
    assert row(Cloud.GCP, "a3-megagpu-8g").quota.on_demand == "NVIDIA_H100_MEGA_GPUS"
    assert row(Cloud.GCP, "a3-highgpu-8g").quota.on_demand == "NVIDIA_H100_GPUS"
    assert row(Cloud.GCP, "a2-ultragpu-8g").quota.on_demand == "NVIDIA_A100_80GB_GPUS"
    assert row(Cloud.GCP, "g2-standard-96").quota.spot == "PREEMPTIBLE_NVIDIA_L4_GPUS"


def test_g2_sizes() -> None:
    gpus = {4: 1, 8: 1, 12: 1, 16: 1, 24: 2, 32: 1, 48: 4, 96: 8}
    for vcpus, n in gpus.items():
        m = row(Cloud.GCP, f"g2-standard-{vcpus}")
        assert (m.gpu, m.gpus, m.vcpus, m.memory_gib) == ("L4", n, vcpus, 4 * vcpus)


@pytest.mark.parametrize(
    ("name", "gpu", "gpus", "ib", "family"),
    [
        ("Standard_ND96asr_v4", "A100-40GB", 8, 8, "Standard NDASv4_A100 Family"),
        ("Standard_ND96amsr_A100_v4", "A100-80GB", 8, 8, "standard NDAMSv4_A100Family"),
        ("Standard_ND96isr_H100_v5", "H100", 8, 8, "standardNDSH100v5Family"),
        ("Standard_ND96isr_H200_v5", "H200", 8, 8, "standardNDISRH200V5Family"),
        ("Standard_ND128isr_NDR_GB200_v6", "GB200", 4, 4, "standardNDISRGB200V6NDRFamily"),
    ],
)
def test_azure_nd_facts(name: str, gpu: str, gpus: int, ib: int, family: str) -> None:
    m = row(Cloud.AZURE, name)
    assert (m.gpu, m.gpus, m.fabric, m.ib_ports) == (gpu, gpus, Fabric.INFINIBAND, ib)
    assert m.quota.on_demand == family


def test_azure_nc_h100_is_not_a_fabric_type() -> None:
    for name, gpus in [("Standard_NC40ads_H100_v5", 1), ("Standard_NC80adis_H100_v5", 2)]:
        m = row(Cloud.AZURE, name)
        assert (m.gpu, m.gpus, m.gpu_memory_gib, m.fabric) == ("H100-NVL", gpus, 94, Fabric.NONE)
        assert m.quota.on_demand == "StandardNCadsH100v5Family"


# --------------------------------------------------------------------------- lookup helpers


def test_lookups() -> None:
    assert catalog.by_name(Cloud.AWS, "p5.48xlarg") is None
    assert catalog.by_name(Cloud.GCP, "p5.48xlarge") is None
    assert "p5.48xlarge" in catalog.names(Cloud.AWS)
    assert "m7i.xlarge" not in catalog.names(Cloud.AWS)
    assert {m.name for m in catalog.matching(Cloud.AWS, "H200", None)} == {"p5e.48xlarge", "p5en.48xlarge"}
    assert catalog.regions(Cloud.AWS, "no-such-type") == {}
    assert {m.cloud for m in catalog.for_cloud(Cloud.AZURE)} == {Cloud.AZURE}


def test_lookups_accept_the_plain_cloud_string() -> None:
    """Cloud is a StrEnum: "aws" and Cloud.AWS must find the same rows."""
    assert catalog.by_name("aws", "p5.48xlarge") is row(Cloud.AWS, "p5.48xlarge")  # type: ignore[arg-type]
    assert catalog.names("gcp") == catalog.names(Cloud.GCP)  # type: ignore[arg-type]
    assert catalog.regions("gcp", "a4-highgpu-8g") == catalog.regions(Cloud.GCP, "a4-highgpu-8g")  # type: ignore[arg-type]
