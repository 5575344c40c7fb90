"""Boundaries and branches of the catalogue policies (machine type, EFA interfaces, GPU NICs, guest accelerators)
and of maintenance-window-set / node-auto-repair, in the table style of cases_boundaries.py: one count fewer and one
more than the catalogue row says, and each way a rule is met. Messages and counts are typed in; the counts come from
the catalogue rows named in the comments (components/data/machine_types.csv, whose rows cite
https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html and
https://cloud.google.com/compute/docs/accelerator-optimized-machines)."""

from collections.abc import Callable
from typing import Any

from tests.policies import keys as k
from tests.policies.helpers import DROP, Case, case

MTC = "machine-type-in-catalog"
NOT_IN = ("machine type {!r} is not in the {} catalogue (components/data/machine_types.csv): its GPUs, fabric and "
          "quota are unknown, so nothing else can be checked")
BOUNDARY_MACHINE = [
    case(MTC, "aws-train", k.NG_H100, {"instanceTypes": ["p5.48xlarge"]}, label="aws-listed"),
    case(MTC, "aws-train", k.NG_H100, {"instanceTypes": ["P5.48xlarge"]}, NOT_IN.format("P5.48xlarge", "AWS"),
         label="aws-case-sensitive"),
    case(MTC, "aws-train", k.NG_H100, {"instanceTypes": ["p5.48xlarge", "p5.48xlarg"]},
         NOT_IN.format("p5.48xlarg", "AWS"), label="aws-second-type-unknown"),
    case(MTC, "aws-train", k.NG_H100, {"instanceTypes": []}, "names no machine type", label="aws-no-type"),
    case(MTC, "gke", k.GKE_POOL, {"nodeConfig.machineType": "a3-highgpu-8"}, NOT_IN.format("a3-highgpu-8", "GCP"),
         label="gke-near-miss"),
    case(MTC, "gke", k.GKE_POOL, {"nodeConfig.machineType": "a3-megagpu-8g"}, label="gke-listed"),
    case(MTC, "aks", k.AKS_POOL, {"vmSize": "Standard_ND96isr_H100_v5"}, label="aks-listed"),
]


def _nics(change: Callable[[list[dict[str, Any]]], None]) -> Callable[[dict[str, Any]], None]:
    return lambda inputs: change(inputs["networkInterfaces"])


def _extra_card(cards: int) -> Callable[[dict[str, Any]], None]:
    """One more EFA-only interface, on the next network card (what components/aws/nodegroup.py would add)."""
    return _nics(lambda nics: nics.append({"networkCardIndex": cards, "deviceIndex": 1, "interfaceType": "efa-only"}))


def _last_on_card_0(inputs: dict[str, Any]) -> None:
    inputs["networkInterfaces"][-1]["networkCardIndex"] = 0


def _plain_nics(inputs: dict[str, Any]) -> None:
    for nic in inputs["networkInterfaces"]:
        nic["interfaceType"] = "interface"


def _fabric_off(inputs: dict[str, Any]) -> None:
    inputs.setdefault("labels", {})["gpufleet.io/fabric"] = "none"


EFA = "efa-interfaces-match-catalog"
A100_RUNS = "node group train-a100-eval-ng runs {}: {}"
H100_RUNS = "node group train-h100-ng runs p5.48xlarge: {}"
BOUNDARY_EFA = [
    # p4d.24xlarge: efa_interfaces 4 (catalogue row aws,p4d.24xlarge); the base template has exactly 4
    case(EFA, "aws-train", k.LT_A100, {}, on=None, label="p4d-4-interfaces"),
    case(EFA, "aws-train", k.LT_A100, _extra_card(4),
         A100_RUNS.format("p4d.24xlarge", "5 EFA interfaces, the catalogue says 4"), label="p4d-one-more"),
    case(EFA, "aws-train", k.LT_A100, _nics(lambda nics: nics.pop()),
         A100_RUNS.format("p4d.24xlarge", "3 EFA interfaces, the catalogue says 4"), label="p4d-one-fewer"),
    case(EFA, "aws-train", k.LT_A100, _last_on_card_0,
         A100_RUNS.format("p4d.24xlarge", "EFA interfaces on network cards [0, 0, 1, 2], want one on each of cards "
                                          "0..3"), label="p4d-two-on-card-0"),
    # p5.48xlarge: efa_interfaces 32 (catalogue row aws,p5.48xlarge)
    case(EFA, "aws-train", k.LT_H100, _nics(lambda nics: nics.pop()),
         H100_RUNS.format("31 EFA interfaces, the catalogue says 32"), label="p5-one-fewer"),
    case(EFA, "aws-train", k.LT_H100, _extra_card(32), H100_RUNS.format("33 EFA interfaces, the catalogue says 32"),
         label="p5-one-more"),
    # the pool turned its fabric off: the template is not held to the catalogue's count
    Case(EFA, "aws-train", ((k.NG_A100, _fabric_off), (k.LT_A100, _nics(lambda nics: nics.pop()))), [],
         label="fabric-off"),
    # g5.xlarge: fabric none, efa_interfaces 0 (catalogue row aws,g5.xlarge): EFA asked for is wrong, plain is fine
    case(EFA, "aws-train", k.NG_A100, {"instanceTypes": ["g5.xlarge"]},
         "node group train-a100-eval-ng runs g5.xlarge, which has no EFA, but the template asks for EFA interfaces",
         on=k.LT_A100, label="no-efa-machine-asks-efa"),
    Case(EFA, "aws-train", ((k.NG_A100, {"instanceTypes": ["g5.xlarge"]}), (k.LT_A100, _plain_nics)), [],
         label="no-efa-machine-plain-nics"),
]


def networks(n: int) -> dict:
    return {"networkConfig.additionalNodeNetworkConfigs": [{"network": f"n{i}", "subnetwork": f"s{i}"}
                                                            for i in range(n)]}


def gke_machine(name: str, accelerator: str, **more: object) -> dict:
    return {"nodeConfig.machineType": name, "nodeConfig.guestAccelerators.0.type": accelerator, **more}


def _gke_fabric_off(inputs: dict[str, Any]) -> None:
    inputs["nodeConfig"]["labels"]["gpufleet.io/fabric"] = "none"
    inputs["networkConfig"]["additionalNodeNetworkConfigs"] = []


NICS = "gpu-nics-match-catalog"
NEEDS = "{} ({}) needs {} additional node networks ({}); networkConfig.additionalNodeNetworkConfigs has {}"
BOUNDARY_NICS = [
    # a3-highgpu-8g: tcpx, gpu_nics 4 (catalogue row gcp,a3-highgpu-8g)
    case(NICS, "gke", k.GKE_POOL, networks(4), label="a3-high-4"),
    case(NICS, "gke", k.GKE_POOL, networks(3), NEEDS.format("a3-highgpu-8g", "tcpx", 4, "4 GPU NICs", 3),
         label="a3-high-one-fewer"),
    case(NICS, "gke", k.GKE_POOL, networks(5), NEEDS.format("a3-highgpu-8g", "tcpx", 4, "4 GPU NICs", 5),
         label="a3-high-one-more"),
    # a3-megagpu-8g: tcpxo, gpu_nics 8 (catalogue row gcp,a3-megagpu-8g)
    case(NICS, "gke", k.GKE_POOL, gke_machine("a3-megagpu-8g", "nvidia-h100-mega-80gb", **networks(8)),
         label="a3-mega-8"),
    case(NICS, "gke", k.GKE_POOL, gke_machine("a3-megagpu-8g", "nvidia-h100-mega-80gb", **networks(7)),
         NEEDS.format("a3-megagpu-8g", "tcpxo", 8, "8 GPU NICs", 7), label="a3-mega-one-fewer"),
    # a3-ultragpu-8g: rdma, gpu_nics 8 (catalogue row gcp,a3-ultragpu-8g) plus the second gVNIC's network
    case(NICS, "gke", k.GKE_POOL, gke_machine("a3-ultragpu-8g", "nvidia-h200-141gb", **networks(9)),
         label="a3-ultra-9"),
    case(NICS, "gke", k.GKE_POOL, gke_machine("a3-ultragpu-8g", "nvidia-h200-141gb", **networks(8)),
         NEEDS.format("a3-ultragpu-8g", "rdma", 9, "8 GPU NICs plus the second gVNIC", 8),
         label="a3-ultra-8-forgets-gvnic"),
    # no GPU NICs to match: the pool turned its fabric off, or the machine has none (g2-standard-48: gpu_nics 0)
    case(NICS, "gke", k.GKE_POOL, _gke_fabric_off, label="fabric-off"),
    case(NICS, "gke", k.GKE_POOL, gke_machine("g2-standard-48", "nvidia-l4", **networks(0)), label="g2-no-gpu-nics"),
]

ACC = "gpu-accelerator-matches-catalog"
ACC_WRONG = "guest accelerator {} does not match {}: {}"
BOUNDARY_ACCELERATORS = [
    # a3-highgpu-8g: 8 x nvidia-h100-80gb (catalogue row gcp,a3-highgpu-8g)
    case(ACC, "gke", k.GKE_POOL, {"nodeConfig.guestAccelerators.0.count": 8}, label="a3-high-8"),
    case(ACC, "gke", k.GKE_POOL, {"nodeConfig.guestAccelerators.0.count": 7},
         ACC_WRONG.format("7 x nvidia-h100-80gb", "a3-highgpu-8g", "8 x nvidia-h100-80gb"), label="a3-high-7"),
    case(ACC, "gke", k.GKE_POOL, {"nodeConfig.guestAccelerators.0.count": 9},
         ACC_WRONG.format("9 x nvidia-h100-80gb", "a3-highgpu-8g", "8 x nvidia-h100-80gb"), label="a3-high-9"),
    case(ACC, "gke", k.GKE_POOL, {"nodeConfig.guestAccelerators.0.type": "nvidia-h100-mega-80gb"},
         ACC_WRONG.format("8 x nvidia-h100-mega-80gb", "a3-highgpu-8g", "8 x nvidia-h100-80gb"),
         label="a3-high-mega-type"),
    # a3-megagpu-8g: 8 x nvidia-h100-mega-80gb; g2-standard-48: 4 x nvidia-l4 (catalogue rows)
    case(ACC, "gke", k.GKE_POOL, gke_machine("a3-megagpu-8g", "nvidia-h100-mega-80gb"), label="a3-mega"),
    case(ACC, "gke", k.GKE_POOL, gke_machine("g2-standard-48", "nvidia-l4", **{"nodeConfig.guestAccelerators.0."
                                                                                 "count": 4}), label="g2-4-l4"),
    case(ACC, "gke", k.GKE_POOL, gke_machine("g2-standard-48", "nvidia-l4"),
         ACC_WRONG.format("8 x nvidia-l4", "g2-standard-48", "4 x nvidia-l4"), label="g2-8-l4"),
]

MW = "maintenance-window-set"
GKE_NO_WINDOW = "no maintenance window or exclusion: GKE may upgrade GPU nodes in the middle of a training run"
FSX_NO_WINDOW = "no weeklyMaintenanceStartTime: FSx picks a maintenance slot that may fall in a training run"
EXCLUSION = {"exclusionName": "launch", "startTime": "2026-12-01T00:00:00Z", "endTime": "2026-12-20T00:00:00Z"}
BOUNDARY_MAINTENANCE = [
    # GKE: any of a daily window, a recurring window (the base) or an exclusion
    case(MW, "gke", k.GKE, {"maintenancePolicy": {"dailyMaintenanceWindow": {"startTime": "02:00"}}}, on=None,
         label="gke-daily"),
    case(MW, "gke", k.GKE, {"maintenancePolicy": {"maintenanceExclusions": [EXCLUSION]}}, on=None,
         label="gke-exclusion-only"),
    case(MW, "gke", k.GKE, {"maintenancePolicy": {}}, GKE_NO_WINDOW, label="gke-empty-policy"),
    case(MW, "gke", k.GKE, {"maintenancePolicy": {"maintenanceExclusions": []}}, GKE_NO_WINDOW,
         label="gke-empty-exclusions"),
    # FSx: the aws-train example sets no weeklyMaintenanceStartTime; "d:HH:MM" UTC, d 1 (Monday) to 7, so 6:02:00 is
    # Saturday 02:00 (FSx API WeeklyMaintenanceStartTime, as documented at
    # https://docs.aws.amazon.com/fsx/latest/APIReference/API_UpdateFileCacheLustreConfiguration.html)
    case(MW, "aws-train", k.FSX, {"weeklyMaintenanceStartTime": "6:02:00"}, on=None, label="fsx-window"),
    case(MW, "aws-train", k.FSX, {"weeklyMaintenanceStartTime": ""}, FSX_NO_WINDOW, label="fsx-empty-window"),
    # Managed Lustre: maintenancePolicy; AMLFS: maintenanceWindow.dayOfWeek
    case(MW, "gke", k.GCP_LUSTRE, {"maintenancePolicy": DROP}, "no maintenance window set", label="gcp-lustre-none"),
    case(MW, "aks", k.AML, {"maintenanceWindow.dayOfWeek": DROP}, "no maintenance window set",
         label="amlfs-time-without-day"),
    case(MW, "aks", k.AKS_MAINTENANCE, {}, on=None, label="aks-configuration"),
]

REPAIR = "node-auto-repair"
EKS_OFF = "node auto-repair is off (nodeRepairConfig.enabled): a node that stays NotReady is never replaced"
BOUNDARY_REPAIR = [
    case(REPAIR, "aws-train", k.NG_A100, {"nodeRepairConfig.enabled": True}, label="eks-on"),
    case(REPAIR, "aws-train", k.NG_A100, {"nodeRepairConfig": DROP}, EKS_OFF, label="eks-unset"),
    # a capacity block cannot take a cloud replacement: repair off on purpose (docs/addons.md)
    case(REPAIR, "aws-train", k.NG_A100, {"capacityType": "CAPACITY_BLOCK", "nodeRepairConfig.enabled": False},
         label="eks-capacity-block"),
    case(REPAIR, "aws-train", k.NG_A100, {"capacityType": "SPOT", "nodeRepairConfig.enabled": False}, EKS_OFF,
         label="eks-spot-not-exempt"),
    # GKE: autoRepair defaults to true; only an explicit false is off, and queued provisioning is exempt
    case(REPAIR, "gke", k.GKE_POOL, {"management": DROP}, label="gke-unset"),
    case(REPAIR, "gke", k.GKE_POOL, {"management.autoRepair": False, "queuedProvisioning.enabled": True},
         label="gke-queued"),
    case(REPAIR, "gke", k.GKE_POOL, {"management.autoRepair": False, "queuedProvisioning.enabled": False},
         "node auto-repair is off (management.autoRepair: false)", label="gke-queued-off"),
]

CASES = (BOUNDARY_MACHINE + BOUNDARY_EFA + BOUNDARY_NICS + BOUNDARY_ACCELERATORS + BOUNDARY_MAINTENANCE
         + BOUNDARY_REPAIR)
