"""GPU node pools: accelerator type/count and driver ownership, compact placement, reservation affinity (with a
block), spot, flex-start with queued provisioning, local NVMe, kubelet topology, taints and upgrades."""

from __future__ import annotations

from typing import Any

import pytest

from components.catalog import Cloud, by_name
from tests.components.gcp.fleets import VARIANT, ZOO, graph_of
from tests.conftest import one


def _pool(name: str, fleet: dict[str, Any] = ZOO) -> dict[str, Any]:
    return one(graph_of(fleet), "container/nodePool:NodePool", f"train-{name}-np").inputs


@pytest.mark.parametrize(("pool", "machine", "accelerator"), [
    ("high", "a3-highgpu-8g", "nvidia-h100-80gb"), ("mega", "a3-megagpu-8g", "nvidia-h100-mega-80gb"),
    ("ultra", "a3-ultragpu-8g", "nvidia-h200-141gb"), ("a4", "a4-highgpu-8g", "nvidia-b200"),
    ("l4", "g2-standard-48", "nvidia-l4")])
def test_accelerator_type_and_count_come_from_the_catalogue(pool: str, machine: str, accelerator: str) -> None:
    inputs = _pool(pool)
    [gpus] = inputs["nodeConfig"]["guestAccelerators"]
    assert gpus["type"] == accelerator and gpus["count"] == by_name(Cloud.GCP, machine).gpus
    assert inputs["nodeConfig"]["machineType"] == machine and inputs["nodeLocations"] == ["us-central1-b"]


@pytest.mark.parametrize(("fleet", "pool", "version", "secure_boot", "image"), [
    (ZOO, "mega", "LATEST", True, "COS_CONTAINERD"),
    (VARIANT, "gpu", "INSTALLATION_DISABLED", False, "UBUNTU_CONTAINERD")])
def test_driver_installation_follows_driver_ownership(fleet: dict[str, Any], pool: str, version: str,
                                                      secure_boot: bool, image: str) -> None:
    """The operator's driver manager runs only on Ubuntu with containerd on GKE
    (https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/google-gke.html)."""
    config = _pool(pool, fleet)["nodeConfig"]
    assert config["guestAccelerators"][0]["gpuDriverInstallationConfig"] == {"gpuDriverVersion": version}
    assert config["shieldedInstanceConfig"]["enableSecureBoot"] is secure_boot  # operator drivers are unsigned
    assert config["imageType"] == image


@pytest.mark.parametrize(("pool", "placement"), [
    ("mega", {"type": "COMPACT"}),  # interconnect, on demand
    ("high", {"type": "COMPACT"}),  # interconnect, spot
    ("loose", None),  # compact_placement: false
    ("l4", None),  # no interconnect fabric
    ("megares", None),  # the reservation places its VMs; a second policy would not match it
    ("ultra", None),  # queued provisioning obtains a request's nodes together
])
def test_compact_placement(pool: str, placement: dict[str, str] | None) -> None:
    assert _pool(pool).get("placementPolicy") == placement


@pytest.mark.parametrize(("pool", "value"), [
    ("megares", "a3mega-train"),
    ("a4", "a4-resv/reservationBlocks/a4-resv-block-0001"),
    ("a4shared", "projects/shared-capacity/reservations/a4-resv/reservationBlocks/b1"),
    ("a4proj", "projects/shared-capacity/reservations/a4-resv")])
def test_specific_reservation_affinity_with_blocks_and_shared_reservations(pool: str, value: str) -> None:
    inputs = _pool(pool)
    assert inputs["nodeConfig"]["reservationAffinity"] == {
        "consumeReservationType": "SPECIFIC_RESERVATION", "key": "compute.googleapis.com/reservation-name",
        "values": [value]}
    assert inputs["upgradeSettings"] == {"strategy": "SURGE", "maxSurge": 0, "maxUnavailable": 1}
    assert "spot" not in inputs["nodeConfig"] and "queuedProvisioning" not in inputs


def test_flex_start_uses_queued_provisioning() -> None:
    pool = _pool("ultra")
    assert pool["queuedProvisioning"] == {"enabled": True}
    assert pool["nodeConfig"]["flexStart"] is True and "spot" not in pool["nodeConfig"]
    assert pool["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    assert pool["initialNodeCount"] == 0
    assert pool["autoscaling"] == {"totalMinNodeCount": 0, "totalMaxNodeCount": 4, "locationPolicy": "ANY"}
    assert pool["management"] == {"autoRepair": False, "autoUpgrade": True}


def test_spot_and_on_demand() -> None:
    spot = _pool("high")
    assert spot["nodeConfig"]["spot"] is True and "queuedProvisioning" not in spot
    assert spot["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    assert spot["upgradeSettings"] == {"strategy": "SURGE", "maxSurge": 1, "maxUnavailable": 0}
    on_demand = _pool("mega")["nodeConfig"]
    assert "spot" not in on_demand and "reservationAffinity" not in on_demand and "flexStart" not in on_demand


def test_gpu_node_settings() -> None:
    config = _pool("a4")["nodeConfig"]
    assert config["gvnic"] == {"enabled": True} and config["diskType"] == "hyperdisk-balanced"
    assert config["ephemeralStorageLocalSsdConfig"] == {"localSsdCount": 32}  # 12,000 GiB of local NVMe
    assert config["kubeletConfig"]["cpuManagerPolicy"] == "static"
    assert config["kubeletConfig"]["topologyManager"] == {"policy": "best-effort", "scope": "pod"}
    assert config["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
    assert config["serviceAccount"] == "train-gke-nodes@gpufleet-preview.iam.gserviceaccount.com"
    assert config["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"},
                                {"key": "gpufleet.io/health-gate", "value": "pending", "effect": "NO_SCHEDULE"},
                                {"key": "team", "value": "a", "effect": "NO_SCHEDULE"}]
    assert config["labels"] == {"gpufleet.io/pool": "a4", "gpufleet.io/gpu": "B200", "gpufleet.io/fabric": "rdma",
                                "workload": "pretraining"}
    assert _pool("a4")["networkConfig"]["enablePrivateNodes"] is True
    raw = _pool("loose")["nodeConfig"]
    assert raw["localNvmeSsdBlockConfig"] == {"localSsdCount": 16} and "ephemeralStorageLocalSsdConfig" not in raw
    assert raw["diskType"] == "pd-balanced"


def test_system_pool_spans_the_cluster_zones() -> None:
    pool = _pool("system")
    assert pool["nodeLocations"] == ["us-central1-b", "us-central1-c"] and pool["initialNodeCount"] == 1
    assert pool["nodeConfig"]["machineType"] == "n2-standard-8" and "guestAccelerators" not in pool["nodeConfig"]
    assert pool["autoscaling"]["totalMinNodeCount"] == 2
