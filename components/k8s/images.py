"""The training images the pools' jobs, health gate and RayJobs run, from their sources instead of typed-in tags.

- EFA pools: the AWS Deep Learning Container for PyTorch training (GPU, EC2 variant): the `aws-dlc-pytorch` digest
  (scripts/refresh_upstream.py; pins.yaml says the release tag) gives its release repository and tag (the
  buildspec), its Python, EFA installer and NCCL versions and apt packages (the Dockerfile), and which registry
  account serves each region (available_images.md: not 763104351884 everywhere).
- every other pool: NVIDIA's NGC PyTorch container, a cited data file (``data/ngc_pytorch.json``): the release notes
  URL and the facts read from NVIDIA's pages; what could not be read there is listed as unsourced (None here).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from components.catalog import Fabric
from components.fleet import Cluster, Pool
from components.k8s import upstream

DLC_PIN = "aws-dlc-pytorch"
DLC_IMAGE = "BuildEC2GPUPTTrainPy3cu126DockerImage"  # the buildspec's GPU / EC2 image entry
NGC_FILE = Path(__file__).parent / "data" / "ngc_pytorch.json"


class ImageError(ValueError):
    """No source gives a training image for this cluster (e.g. an AWS region the DLC registry table lacks)."""


@cache
def _dlc() -> dict[str, Any]:
    return upstream.digest(DLC_PIN)


@cache
def ngc() -> dict[str, Any]:
    """The cited NGC PyTorch facts (data/ngc_pytorch.json)."""
    return dict(json.loads(NGC_FILE.read_text()))


def _buildspec() -> dict[str, Any]:
    [spec] = _dlc()["values"].values()
    return dict(spec)


def dlc_dockerfile() -> dict[str, Any]:
    """The digest's facts of the Dockerfile the buildspec builds the GPU EC2 image from."""
    spec = _buildspec()
    path = f"{spec['repository_info.training_repository.root']}/{spec[f'images.{DLC_IMAGE}.docker_file']}"
    return dict(_dlc()["dockerfiles"][path])


def dlc_registries() -> dict[str, str]:
    """Region -> the ECR registry host serving the DLC images there (available_images.md's region table)."""
    [rows] = _dlc()["tables"].values()
    return {row["Code"]: row["Example URL"].split("/", 1)[0] for row in rows}


def aws_dlc(region: str) -> str:
    registries = dlc_registries()
    if region not in registries:
        raise ImageError(f"AWS region {region!r} has no AWS Deep Learning Containers registry in the pinned "
                         f"available_images.md ({DLC_PIN} digest); regions with one: {', '.join(sorted(registries))}."
                         " Use one of those regions for EFA pools, or bump the pin in "
                         "components/k8s/upstream/pins.yaml if AWS has added the region")
    spec = _buildspec()
    return (f"{registries[region]}/{spec['repository_info.training_repository.release_repository_name']}:"
            f"{spec[f'images.{DLC_IMAGE}.tag']}")


def ngc_pytorch() -> str:
    return str(ngc()["image"])


def pool_image(cluster: Cluster, pool: Pool) -> str:
    """The DLC in the cluster's region on an EFA pool (libfabric and aws-ofi-nccl), NGC PyTorch elsewhere."""
    return aws_dlc(cluster.spec.region) if pool.fabric is Fabric.EFA else ngc_pytorch()


def python(image: str) -> tuple[bool, str | None]:
    """(is this one of the pool images, its sourced CPython minor or None when no source says it)."""
    if image == ngc_pytorch():
        return True, ngc()["facts"].get("python", {}).get("value")  # absent while the 25.03 notes are unread
    if image in {aws_dlc(region) for region in dlc_registries()}:
        return True, str(dlc_dockerfile()["args"]["PYTHON_SHORT_VERSION"])
    return False, None
