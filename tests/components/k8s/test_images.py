"""The pool images come from their sources: the AWS DLC from the `aws-dlc-pytorch` digest (derived from
aws/deep-learning-containers at the pinned release tag), NGC PyTorch from the cited data file. Expected values
are read here from those files directly, or are literals from the pinned upstream files (cited where used)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from components.catalog import Cloud, Fabric, for_cloud, regions
from components.k8s import healthgate, images
from gpufleet.jobs.ray_image import RayImageError, check_python
from tests.components.k8s.conftest import STACKS, clusters

ROOT = Path(__file__).resolve().parents[3]
DIGEST = json.loads((ROOT / "components/k8s/upstream/digests/aws-dlc-pytorch.json").read_text())
NGC = json.loads((ROOT / "components/k8s/data/ngc_pytorch.json").read_text())
SPEC = DIGEST["values"]["pytorch/training/buildspec-2-6-ec2.yml"]
GPU_EC2 = "images.BuildEC2GPUPTTrainPy3cu126DockerImage"
DOCKERFILE = DIGEST["dockerfiles"][f"{SPEC['repository_info.training_repository.root']}/"
                                   f"{SPEC[GPU_EC2 + '.docker_file']}"]
REGISTRY = {row["Code"]: row["Example URL"].split("/")[0] for row in DIGEST["tables"]["available_images.md"]}
RAY_VERSION = "2.46.0"  # the pinned KubeRay sample's rayVersion (kuberay-operator digest)


def _expected_dlc(region: str) -> str:
    return f"{REGISTRY[region]}/{SPEC['repository_info.training_repository.release_repository_name']}:" \
           f"{SPEC[GPU_EC2 + '.tag']}"


def test_the_dlc_is_the_ec2_gpu_training_image_with_the_dockerfiles_python_and_cuda() -> None:
    tag = SPEC[GPU_EC2 + ".tag"]
    args = DOCKERFILE["args"]
    assert SPEC[GPU_EC2 + ".target"] == "ec2" and tag.endswith("-ec2")
    assert f"-py{args['PYTHON_SHORT_VERSION'].replace('.', '')}-" in tag
    assert "-cu" + "".join(args["CUDA_VERSION"].split(".")[:2]) + "-" in tag
    assert tag.startswith(args["PYTORCH_VERSION"] + "-gpu-")


def test_the_dlc_carries_what_efa_and_the_ray_path_need() -> None:
    args, apt = DOCKERFILE["args"], DOCKERFILE["apt"]
    # The Dockerfile at the pin says: from EFA installer 1.38.0 on, the installer bundles the aws-ofi-nccl plugin
    # (/opt/amazon/ofi-nccl); the image installs EFA_VERSION with efa_installer.sh.
    assert tuple(map(int, args["EFA_VERSION"].split("."))) >= (1, 38, 0)
    assert "NCCL_VERSION" in args and "libibverbs-dev" in apt
    assert "wget" in apt  # KubeRay's injected probes call wget


@pytest.mark.parametrize("region", sorted(REGISTRY))
def test_every_region_gets_the_registry_available_images_md_names(region: str) -> None:
    assert images.aws_dlc(region) == _expected_dlc(region)


def test_a_region_outside_account_763104351884() -> None:
    # available_images.md at v1.50-pt-ec2-2.6.0-tr-py312: Asia Pacific (Hong Kong) is served by 871362719292
    assert images.aws_dlc("ap-east-1").startswith("871362719292.dkr.ecr.ap-east-1.amazonaws.com/pytorch-training:")


def test_every_catalogue_region_with_an_efa_machine_has_a_dlc_registry() -> None:
    efa_regions = {r for m in for_cloud(Cloud.AWS) if m.fabric is Fabric.EFA for r in regions(Cloud.AWS, m.name)}
    assert efa_regions and efa_regions <= set(REGISTRY)


def test_a_region_without_a_registry_is_refused_with_the_fix() -> None:
    with pytest.raises(images.ImageError, match=r"'xx-nowhere-1'.*us-east-1.*pins.yaml"):
        images.aws_dlc("xx-nowhere-1")


@pytest.mark.parametrize("stack", STACKS)
def test_each_pool_runs_its_sourced_image(stack: str) -> None:
    for cluster in clusters(stack):
        for pool in cluster.pools:
            want = _expected_dlc(cluster.spec.region) if pool.fabric is Fabric.EFA else NGC["image"]
            assert healthgate.image(cluster, pool) == want


def test_the_examples_run_the_sourced_images() -> None:
    text = "".join(p.read_text() for p in (ROOT / "examples/jobs").rglob("*") if p.is_file())
    used = set(re.findall(r"\S+/pytorch(?:-training)?:[\w.-]+", text))
    assert used and used <= {NGC["image"], *(_expected_dlc(r) for r in REGISTRY)}


def test_ngc_facts_are_cited_or_listed_unsourced() -> None:
    assert NGC["release_notes"].endswith(f"rel-{NGC['release'].replace('.', '-')}.html")
    assert NGC["image"] == f"nvcr.io/nvidia/pytorch:{NGC['release']}-py3"
    for fact in NGC["facts"].values():
        assert fact["source"].startswith("https://docs.nvidia.com/") and fact["read"]
    assert not set(NGC["facts"]) & set(NGC["unsourced"])


def test_the_ray_check_uses_the_dockerfiles_python_not_the_tag(monkeypatch: pytest.MonkeyPatch) -> None:
    dlc = _expected_dlc("us-east-1")
    assert images.python(dlc) == (True, DOCKERFILE["args"]["PYTHON_SHORT_VERSION"])
    check_python(dlc, RAY_VERSION)
    # a source saying 3.14 (no Ray 2.46.0 wheel on PyPI) must refuse, whatever the tag says
    monkeypatch.setattr(images, "dlc_dockerfile", lambda: {"args": {"PYTHON_SHORT_VERSION": "3.14"}})
    with pytest.raises(RayImageError, match=r"Python 3\.14"):
        check_python(dlc, RAY_VERSION)


def test_ngc_python_is_unknown_until_sourced() -> None:
    assert images.python(NGC["image"]) == (True, NGC["facts"].get("python", {}).get("value"))
    assert images.python("example.com/other:1-py311") == (False, None)
