"""The RayJob examples' image (gpufleet/jobs/ray_image.py): on a pool with a fabric, head and workers run the pool's
image (the JobSet example's, which carries the fabric's NCCL needs) with exactly the Ray version of the pinned KubeRay's
sample installed by an init container before KubeRay's own; the command override annotation is set exactly where
the command is overridden; --ray-image uses a prebuilt image and installs nothing; the generated Dockerfile builds
FROM the pool image with the same pin. Expected values come from the kuberay-operator digest, KubeRay's source at
the pin (cited) and PyPI's file list (cited), never from the module under test."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from components.catalog import Fabric
from components.k8s import upstream
from gpufleet.cli import app
from gpufleet.jobs.ray_image import RayImageError, check_python, image_python, runtime

ROOT = Path(__file__).resolve().parents[2]
CHECKED_IN = ROOT / "examples" / "jobs"
STACKS = ["aws-train", "gcp-train", "azure-train"]  # EFA, GPUDirect-TCPXO, InfiniBand pools
KUBERAY = upstream.digest("kuberay-operator")
SAMPLE = KUBERAY["images"]["pytorch-sample"]
[RAY_VERSION] = SAMPLE["ray_versions"]
CONSTANTS = KUBERAY["constants"]["ray-operator/controllers/ray/utils/constant.go"]
OVERRIDE = CONSTANTS["RayOverwriteContainerCmdAnnotationKey"]
GEN_CMD = CONSTANTS["KUBERAY_GEN_RAY_START_CMD"]
# KubeRay's own command raises the open-file limit before `ray start`; KUBERAY_GEN_RAY_START_CMD does not carry it
# (ray-operator/controllers/ray/common/pod.go and config/samples/ray-cluster.overwrite-command.yaml at v1.4.2)
ULIMIT = "ulimit -n 65536"
# manylinux2014 x86_64 wheels of ray 2.46.0 on PyPI (https://pypi.org/project/ray/2.46.0/#files): cp39 ... cp313
PYPI_PYTHONS = ["3.9", "3.10", "3.11", "3.12", "3.13"]
runner = CliRunner()


def _job(directory: Path, stack: str, kind: str) -> dict[str, Any]:
    return yaml.safe_load((directory / stack / f"train-{kind}.yaml").read_text())


def _groups(job: dict[str, Any]) -> list[dict[str, Any]]:
    """The head's and each worker group's pod template."""
    ray = job["spec"]["rayClusterSpec"]
    return [ray["headGroupSpec"]["template"], *(g["template"] for g in ray["workerGroupSpecs"])]


def _pool_image(directory: Path, stack: str) -> str:
    jobset = _job(directory, stack, "jobset")
    [main] = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"]
    return str(main["image"])


def _ray_pins(command: str) -> list[str]:
    return re.findall(r"'ray(?:\[[a-z,]+\])?==([^']+)'", command)


def _render(tmp_path: Path, stack: str, *extra: str) -> Path:
    result = runner.invoke(app, ["jobs", "examples", "--stack", stack, "--out", str(tmp_path), *extra])
    assert result.exit_code == 0, result.output
    return tmp_path


def test_the_digest_sample_image_carries_the_samples_ray_version() -> None:
    # KubeRay: rayVersion "should match the Ray version in the image"; the ray-ml tag starts with the version
    [sample] = SAMPLE["images"]
    assert sample.split(":", 1)[1].startswith(f"{RAY_VERSION}.")


@pytest.mark.parametrize("stack", STACKS)
def test_fabric_pools_run_ray_on_the_pool_image_with_exactly_the_pinned_ray_installed_first(stack: str) -> None:
    job = _job(CHECKED_IN, stack, "rayjob")
    pool_image = _pool_image(CHECKED_IN, stack)
    assert pool_image != SAMPLE["images"][0]
    assert job["spec"]["rayClusterSpec"]["rayVersion"] == RAY_VERSION
    installs = []
    for template in _groups(job):
        spec = template["spec"]
        ray = spec["containers"][0]
        assert ray["image"] == pool_image
        init = spec["initContainers"]
        [installer] = [c for c in init if c["name"] == "install-ray"]
        assert installer["image"] == pool_image
        # after every native sidecar (they start first and keep running), last of ours: KubeRay appends its
        # wait-gcs-ready (which runs `ray health-check` in this image) after the user's init containers (pod.go)
        assert init[-1] is installer and all(c.get("restartPolicy") == "Always" for c in init[:-1])
        command = installer["command"][-1]
        assert _ray_pins(command) == [RAY_VERSION]
        # the Ray container (and the wait-gcs-ready copy of its env and mounts) finds that install through bash
        env = {e["name"]: e["value"] for e in ray["env"]}
        venv = env["BASH_ENV"].removesuffix("/bin/activate")
        assert env["BASH_ENV"].endswith("/bin/activate")
        assert f"venv --system-site-packages --without-pip {venv}" in command
        [mount] = installer["volumeMounts"]
        assert mount in ray["volumeMounts"] and venv.startswith(mount["mountPath"] + "/")
        assert {"name": mount["name"], "emptyDir": {}} in spec["volumes"]
        assert "import torch, ray" in command  # the image's PyTorch is visible next to the installed Ray
        installs.append((ray["image"], command))
    assert len(set(installs)) == 1  # head and workers: one image, one install, so one Ray and one Python


@pytest.mark.parametrize("stack", STACKS)
def test_without_ray_in_the_head_image_the_operator_submits_over_http(stack: str) -> None:
    # the default submitter pod runs the head's image without the install volume (common/job.go at v1.4.2)
    assert _job(CHECKED_IN, stack, "rayjob")["spec"]["submissionMode"] == "HTTPMode"


@pytest.mark.parametrize("stack", STACKS)
def test_the_override_annotation_is_set_exactly_where_the_command_is_overridden(stack: str, tmp_path: Path) -> None:
    for directory in (CHECKED_IN, _render(tmp_path, stack, "--ray-image", "example.com/ray:1")):
        for template in _groups(_job(directory, stack, "rayjob")):
            ray = template["spec"]["containers"][0]
            annotations = template.get("metadata", {}).get("annotations", {})
            assert (annotations.get(OVERRIDE) == "true") == ("command" in ray), template
            assert OVERRIDE not in annotations or annotations[OVERRIDE] == "true"
            if "command" in ray:
                script = ray["command"][-1]
                assert script.startswith(f"{ULIMIT}; ") and script.endswith(f"${GEN_CMD}")


def test_only_the_tcpxo_worker_overrides_its_command_to_source_the_nccl_profile() -> None:
    # TCPXO's NCCL settings are a sourced script (nccl-env-profile.sh, upstream's README); EFA and IB have none
    overridden = {stack: [t["spec"]["containers"][0]["command"][-1] for t in _groups(_job(CHECKED_IN, stack, "rayjob"))
                          if "command" in t["spec"]["containers"][0]] for stack in STACKS}
    assert overridden["aws-train"] == [] and overridden["azure-train"] == []
    [script] = overridden["gcp-train"]
    assert "nccl-env-profile.sh && " in script


def test_ray_image_uses_the_prebuilt_image_and_installs_nothing(tmp_path: Path) -> None:
    out = _render(tmp_path, "aws-train", "--ray-image", "example.com/ray:1")
    job = _job(out, "aws-train", "rayjob")
    assert "submissionMode" not in job["spec"]  # KubeRay's default K8sJobMode: the submitter runs this image
    assert job["spec"]["rayClusterSpec"]["rayVersion"] == RAY_VERSION
    for template in _groups(job):
        spec = template["spec"]
        assert spec["containers"][0]["image"] == "example.com/ray:1"
        assert all(c["name"] != "install-ray" for c in spec.get("initContainers", []))
        assert "BASH_ENV" not in {e["name"] for e in spec["containers"][0].get("env", [])}
    assert not list((out / "aws-train").glob("*.Dockerfile"))
    assert _pool_image(out, "aws-train") == _pool_image(CHECKED_IN, "aws-train")  # the other examples keep it


@pytest.mark.parametrize("stack", STACKS)
def test_the_dockerfile_builds_from_the_pool_image_with_the_same_ray_pin(stack: str) -> None:
    text = (CHECKED_IN / stack / "train-ray.Dockerfile").read_text()
    [base] = re.findall(r"^FROM (\S+)$", text, re.MULTILINE)
    assert base == _pool_image(CHECKED_IN, stack)
    [run] = re.findall(r"^RUN (.+)$", text, re.MULTILINE)
    assert _ray_pins(run) == [RAY_VERSION]
    [installer] = [c for c in _groups(_job(CHECKED_IN, stack, "rayjob"))[0]["spec"]["initContainers"]
                   if c["name"] == "install-ray"]
    assert re.findall(r"'ray[^']*'", run) == re.findall(r"'ray[^']*'", installer["command"][-1])


def test_a_pool_without_a_fabric_keeps_kuberays_sample_image() -> None:
    rt = runtime("nvcr.io/nvidia/pytorch:25.03-py3", Fabric.NONE)
    assert (rt.image, rt.version, rt.install) == (SAMPLE["images"][0], RAY_VERSION, False)


def test_image_python_reads_the_tag() -> None:
    assert image_python("rayproject/ray-ml:2.46.0.0e19ea-py311-gpu") == "3.11"
    assert image_python("763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.6.0-gpu-py312-cu126-"
                        "ubuntu22.04-ec2") == "3.12"
    assert image_python("nvcr.io/nvidia/pytorch:25.03-py3") is None  # NGC's tag does not say the minor
    assert image_python("registry.example.com:5000/py312/img:1") is None  # only the tag counts, not the path


@given(st.integers(min_value=0, max_value=99))
def test_image_python_reads_any_minor(minor: int) -> None:
    assert image_python(f"r.example.com/i:1.0-py3{minor}-gpu") == f"3.{minor}"


@pytest.mark.parametrize("python", PYPI_PYTHONS)
def test_a_python_with_a_ray_wheel_passes(python: str) -> None:
    check_python(f"i:1-py{python.replace('.', '')}-gpu", RAY_VERSION)


@pytest.mark.parametrize("python", ["3.8", "3.14"])
def test_a_python_without_a_ray_wheel_is_refused_with_the_fix(python: str) -> None:
    with pytest.raises(RayImageError, match=rf"Python {re.escape(python)}.*--ray-image"):
        runtime(f"i:1-py{python.replace('.', '')}-gpu", Fabric.EFA)


def test_a_ray_version_without_a_wheel_row_is_refused() -> None:
    with pytest.raises(RayImageError, match="WHEEL_PYTHONS"):
        check_python("i:1-py312", "0.0.1")


def test_the_cli_refuses_a_pool_image_without_a_ray_wheel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gpufleet.jobs.examples.image", lambda cluster, pool: "r.example.com/i:1-py314-gpu")
    result = runner.invoke(app, ["jobs", "examples", "--stack", "aws-train", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "pool 'h100'" in result.output and "Python 3.14" in result.output and "--ray-image" in result.output
    assert "Traceback" not in result.output
