"""Which image the RayJob example's Ray runs on, and how Ray gets into it.

KubeRay's own distributed PyTorch sample runs ``rayproject/ray-ml`` (the ``images`` digest of the pinned KubeRay),
which carries Ray but none of a fabric's NCCL needs from the image (the EFA plugin aws-ofi-nccl and libfabric on
AWS; on the other fabrics, nothing in the repo says what it carries). On a pool with a fabric, Ray therefore runs on
the pool's image, the one the JobSet / TrainJob examples and the health gate's all-reduce use, with the sample's
Ray version (its ``rayVersion``) added:

- at pod start (default): an ``install-ray`` init container creates a virtualenv that sees the image's packages
  (``--system-site-packages``: its PyTorch and NCCL stay) on a shared emptyDir and pip-installs exactly that
  Ray into it; ``BASH_ENV`` points bash at the virtualenv's ``activate``. KubeRay runs the Ray container's
  command, and its injected ``wait-gcs-ready`` init container (which calls ``ray health-check``, with the Ray
  container's env and mounts; ray-operator/controllers/ray/common/pod.go at v1.6.2), under ``/bin/bash -c``, so
  both find ``ray``. The default submitter pod runs the head's image without that volume (common/job.go), so the
  job is submitted over HTTP by the operator instead (``submissionMode: HTTPMode``).
- prebuilt (``--ray-image IMAGE``): an image built from the generated Dockerfile (FROM the pool image, the same
  pip install at build time), used as is for head, workers and the submitter.

Head and workers always run the same image and the same Ray, hence the same Python.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from components.catalog import Fabric
from components.k8s import images, upstream
from components.k8s.model import Obj

SAMPLE = "pytorch-sample"  # the kuberay-operator pin's `images` row
VENV_MOUNT = "/opt/ray"
VENV = f"{VENV_MOUNT}/venv"
VOLUME = "ray-venv"
INSTALLER = "install-ray"
# `default`: the dashboard and its agent (KubeRay's probes and HTTP job submission talk to them); `train`: Ray Train.
# Both are extras of every Ray release on PyPI (https://pypi.org/project/ray/2.46.0/, metadata Provides-Extra).
EXTRAS = "default,train"
# CPython versions with a manylinux2014 x86_64 wheel per Ray release on PyPI (https://pypi.org/project/ray/2.46.0/#files;
# read 2026-12-01 with `pip install --dry-run --only-binary=:all: --python-version 3.N --platform
# manylinux2014_x86_64 --report` for N = 9..14: cp39-cp313 wheels, none for 3.14). A new pinned Ray version needs
# its row here (the examples refuse to render without it).
WHEEL_PYTHONS = {"2.46.0": ("3.9", "3.10", "3.11", "3.12", "3.13")}


class RayImageError(Exception):
    """The pool image cannot run the pinned Ray (no wheel for its Python), or the pinned Ray has no wheel row."""


@dataclass(frozen=True)
class RayRuntime:
    """The image head and workers run, the Ray version they run, and whether Ray is installed at pod start."""

    image: str
    version: str
    install: bool


def _sample() -> dict:
    return upstream.digest("kuberay-operator")["images"][SAMPLE]


def pinned_version() -> str:
    """The Ray version of the pinned KubeRay's distributed PyTorch sample (its RayJob's ``rayVersion``)."""
    [version] = _sample()["ray_versions"]
    return str(version)


def sample_image() -> str:
    return str(_sample()["images"][0])


def image_python(image: str) -> str | None:
    """The CPython version an image's tag names (``...-py312-...`` -> ``3.12``; Ray's tags say it), None when the
    tag does not (NGC's ``25.03-py3``). Only for images without a source: the pool images' Python comes from
    components/k8s/images.py."""
    found = re.search(r"(?:^|[-:.])py3(\d{1,2})(?:$|[-.])", image.rsplit("/", 1)[-1])
    return f"3.{found.group(1)}" if found else None


def requirement(version: str) -> str:
    return f"ray[{EXTRAS}]=={version}"


def runtime(pool_image: str, fabric: Fabric, ray_image: str | None = None) -> RayRuntime:
    """``ray_image`` when given (prebuilt); else KubeRay's sample image on a pool without a fabric, the pool's image
    with Ray installed at start on a pool with one (after checking PyPI has the pinned Ray for its Python)."""
    version = pinned_version()
    if ray_image:
        return RayRuntime(ray_image, version, install=False)
    if fabric is Fabric.NONE:
        return RayRuntime(sample_image(), version, install=False)
    check_python(pool_image, version)
    return RayRuntime(pool_image, version, install=True)


def check_python(image: str, version: str) -> None:
    if version not in WHEEL_PYTHONS:
        raise RayImageError(f"Ray {version} (the pinned KubeRay sample's rayVersion) has no row in "
                            "gpufleet/jobs/ray_image.py WHEEL_PYTHONS: add the CPython versions PyPI has wheels for")
    known, python = images.python(image)  # a pool image: the Python its source names (None: not sourced)
    if not known:
        python = image_python(image)
    if python is not None and python not in WHEEL_PYTHONS[version]:
        raise RayImageError(f"the pool image {image} is Python {python}; Ray {version} has wheels for Python "
                            f"{', '.join(WHEEL_PYTHONS[version])}: build an image with a supported Python and "
                            "pass it with --ray-image")


def installer(rt: RayRuntime) -> Obj:
    """The init container that puts ``rt.version`` of Ray into the shared virtualenv, on the pool's own Python
    (``--without-pip``: the image's pip, seen through the system site-packages, installs into the virtualenv; no
    ensurepip needed). It fails, and the pod with it, unless the virtualenv then imports both the image's PyTorch
    and Ray (an image whose Python is itself a virtualenv would hide its packages from this one)."""
    script = (f"python3 -m venv --system-site-packages --without-pip {VENV} && "
              f"{VENV}/bin/python -m pip install --no-cache-dir '{requirement(rt.version)}' && "
              f"{VENV}/bin/python -c 'import torch, ray'")
    return {"name": INSTALLER, "image": rt.image, "command": ["/bin/bash", "-c", script],
            "volumeMounts": [{"name": VOLUME, "mountPath": VENV_MOUNT}]}


def with_ray(rt: RayRuntime, pod: Obj) -> Obj:
    """A head or worker pod template with the installer, the shared volume and ``BASH_ENV`` on its Ray container
    (the first) when Ray is installed at start; the installer runs after any sidecar, before KubeRay's init
    container."""
    if not rt.install:
        return pod
    spec = pod["spec"]
    [ray, *others] = spec["containers"]
    ray = {**ray, "env": [*ray.get("env", []), {"name": "BASH_ENV", "value": f"{VENV}/bin/activate"}],
           "volumeMounts": [*ray.get("volumeMounts", []), {"name": VOLUME, "mountPath": VENV_MOUNT}]}
    return {**pod, "spec": {**spec, "initContainers": [*spec.get("initContainers", []), installer(rt)],
                            "containers": [ray, *others],
                            "volumes": [*spec.get("volumes", []), {"name": VOLUME, "emptyDir": {}}]}}


def dockerfile(stack: str, cluster: str, pool: str, base: str, version: str) -> str:
    """The production path: the pool image with the pinned Ray baked in, for ``--ray-image``."""
    return (f"# Generated from stack {stack} by `gpufleet jobs examples --stack {stack}`: do not edit, regenerate.\n"
            f"# Pool {pool} of cluster {cluster}: its image with Ray {version} (the pinned KubeRay's sample Ray\n"
            f"# version) for the RayJob example without a pip install at pod start. Build and push it, then\n"
            f"#   gpufleet jobs examples --stack {stack} --ray-image <registry>/<name>:<tag>\n"
            f"FROM {base}\n"
            f"RUN python3 -m pip install --no-cache-dir '{requirement(version)}'\n")
