"""Crafted violations of the GPU correctness policies (judged against the catalogue)."""

from typing import Any

from tests.policies import keys as k
from tests.policies.helpers import DROP, case


def _drop_last_nic(inputs: dict[str, Any]) -> None:
    inputs["networkInterfaces"].pop()


def _card0_efa_only(inputs: dict[str, Any]) -> None:
    inputs["networkInterfaces"][0]["interfaceType"] = "efa-only"


CASES = [
    case("machine-type-in-catalog", "aws-train", k.NG_H100, {"instanceTypes": ["p5.48xlarg"]},
         "machine type 'p5.48xlarg' is not in the AWS catalogue (components/data/machine_types.csv): its GPUs, "
         "fabric and quota are unknown, so nothing else can be checked"),
    case("machine-type-in-catalog", "aks", k.AKS_POOL, {"vmSize": "Standard_ND96isr_H100_v9"},
         "machine type 'Standard_ND96isr_H100_v9' is not in the Azure catalogue (components/data/"
         "machine_types.csv): its GPUs, fabric and quota are unknown, so nothing else can be checked"),
    case("efa-interfaces-match-catalog", "aws-train", k.LT_A100, _drop_last_nic,
         "node group train-a100-eval-ng runs p4d.24xlarge: 3 EFA interfaces, the catalogue says 4"),
    case("efa-interfaces-match-catalog", "aws-train", k.LT_H100, _card0_efa_only,
         "node group train-h100-ng runs p5.48xlarge: card 0 / device 0 must be interfaceType 'efa' (it carries "
         "the node's IP traffic)"),
    case("efa-interfaces-match-catalog", "aws-train", k.NG_A100, {"instanceTypes": ["p5.48xlarge"]},
         "node group train-a100-eval-ng runs p5.48xlarge: 4 EFA interfaces, the catalogue says 32", on=k.LT_A100,
         label="node group changes type, template stays"),
    case("gpu-nics-match-catalog", "gke", k.GKE_POOL,
         {"networkConfig.additionalNodeNetworkConfigs": [{"network": "a", "subnetwork": "a"}] * 2},
         "a3-highgpu-8g (tcpx) needs 4 additional node networks (4 GPU NICs); "
         "networkConfig.additionalNodeNetworkConfigs has 2"),
    case("gpu-accelerator-matches-catalog", "gke", k.GKE_POOL, {"nodeConfig.guestAccelerators.0.count": 4},
         "guest accelerator 4 x nvidia-h100-80gb does not match a3-highgpu-8g: 8 x nvidia-h100-80gb"),
    case("interconnect-placement", "aws-train", k.LT_A100, {"placement": DROP},
         "node group train-a100-eval-ng (p4d.24xlarge, up to 4 nodes) is not in a cluster placement group: EFA "
         "traffic then crosses spine switches"),
    case("interconnect-placement", "aws-train", k.PG_A100, {"strategy": "spread"},
         "node group train-a100-eval-ng: placement group strategy must be 'cluster'", on=k.LT_A100),
    case("interconnect-placement", "gke", k.GKE_POOL, {"placementPolicy": DROP},
         "a3-highgpu-8g pool of up to 8 nodes has no compact placement (placementPolicy.type: COMPACT), specific "
         "reservation or queued provisioning"),
    case("interconnect-placement", "aks", k.AKS_POOL, {"vmSize": "Standard_NC40ads_H100_v5"},
         "labelled for InfiniBand but Standard_NC40ads_H100_v5 is not an InfiniBand-capable size"),
    case("gpu-driver-single-owner", "aws-train", k.NG_H100, {"amiType": "AL2023_x86_64_STANDARD"},
         "no NVIDIA driver: the node image does not install it and no GPU operator does"),
    case("gpu-driver-single-owner", "gke", k.GKE_POOL,
         {"nodeConfig.guestAccelerators.0.gpuDriverInstallationConfig.gpuDriverVersion": "INSTALLATION_DISABLED"},
         "no NVIDIA driver: the node image does not install it and no GPU operator does"),
    case("gpu-driver-single-owner", "aks", k.GPU_OPERATOR, {"values.driver.enabled": True},
         "the NVIDIA driver is installed twice: by the node image and by the GPU operator (set the operator's "
         "driver.enabled: false, or use a node image without the driver)", on=k.AKS_POOL),
    case("gpu-taints-present", "aws-train", k.NG_H100,
         {"taints": [{"key": "vpc.amazonaws.com/efa", "value": "true", "effect": "NO_SCHEDULE"}]},
         "GPU pool without the nvidia.com/gpu NoSchedule taint: CPU-only pods would land on (and block) GPU nodes"),
    case("gpu-taints-present", "gke", k.GKE_POOL, {"nodeConfig.taints.0.effect": "PREFER_NO_SCHEDULE"},
         "GPU pool without the nvidia.com/gpu NoSchedule taint: CPU-only pods would land on (and block) GPU nodes"),
    case("gpu-taints-present", "aks", k.AKS_POOL, {"nodeTaints": []},
         "GPU pool without the nvidia.com/gpu NoSchedule taint: CPU-only pods would land on (and block) GPU nodes"),
    case("multi-node-pool-single-zone", "aws-train", k.NG_A100, {"subnetIds": ["subnet-a", "subnet-b"]},
         "a pool of up to 4 GPU nodes spans 2 subnets: multi-node jobs then pay cross-zone latency and egress; "
         "pin the pool to one zone"),
    case("multi-node-pool-single-zone", "gke", k.GKE_POOL, {"nodeLocations": ["us-central1-a", "us-central1-b"]},
         "a pool of up to 8 GPU nodes spans 2 node locations: multi-node jobs then pay cross-zone latency and "
         "egress; pin the pool to one zone"),
    case("multi-node-pool-single-zone", "aks", k.AKS_POOL, {"availabilityZones": ["1", "2"]},
         "a pool of up to 4 GPU nodes spans 2 availability zones: multi-node jobs then pay cross-zone latency and "
         "egress; pin the pool to one zone"),
]
