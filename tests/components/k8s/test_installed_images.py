"""Every image the layer installs is its pin's: each container image of every object rendered for the example stacks,
the README fleets and the user-shaped fleets (tests/components/k8s/upstream_cases.py), Job templates in ConfigMaps
included, and of the checked-in example jobs, is one of the images the pinned releases name, computed here from the
digests and data files themselves (never from the modules under test). Images a Helm release runs are its chart
version's defaults (no values override an image), so the chart pin covers them.

Where each expected image comes from:
- node-problem-detector: the repository upstream's manifest pulls from, at the release's version.txt (the manifest's
  own tag is an old example's: it must never be installed);
- DCGM (health watcher, gate diagnostics): the gpu-operator chart's dcgm.repository / image / version defaults;
- GKE GPUDirect (installers, NRI injector, RxDM sidecars): the images of the digested upstream manifests;
- training images: the AWS DLC per region (aws-dlc-pytorch digest: registry table, release repository, tag) and
  NGC PyTorch (components/k8s/data/ngc_pytorch.json, a cited data file);
- rclone: the rclone digest's image and tag; the Ray sample image: the kuberay-operator digest;
- the NVIDIA network operator's driver and RDMA plugin: hack/release.yaml of the pinned release (the driver from the
  public NGC repository, docs/addons.md says why);
- python:3.12-slim (stdlib scripts: probe, install-plan approver, node gate): the Docker Official Image, typed with
  its citation in components/k8s/probe.py, not derived.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.components.k8s.upstream_cases import rendered

ROOT = Path(__file__).resolve().parents[3]
DIGESTS = ROOT / "components/k8s/upstream/digests"


def digest(name: str) -> dict[str, Any]:
    return dict(json.loads((DIGESTS / f"{name}.json").read_text()))


def _workload_images(d: dict[str, Any]) -> set[str]:
    return {c["image"] for m in d.get("manifests", {}).values() for w in m.get("workloads", [])
            for c in w["initContainers"] + w["containers"]}


def expected() -> set[str]:
    npd = digest("node-problem-detector")
    [example] = _workload_images({"manifests": {"ds": npd["manifests"]["daemonset"]}})
    out = {f"{example.rsplit(':', 1)[0]}:{npd['texts']['version.txt']}"}
    defaults = digest("gpu-operator")["chart"]["defaults"]
    out.add(f"{defaults['dcgm.repository']}/{defaults['dcgm.image']}:{defaults['dcgm.version']}")
    out |= _workload_images(digest("gke-gpudirect"))
    dlc = digest("aws-dlc-pytorch")
    spec = dlc["values"]["pytorch/training/buildspec-2-6-ec2.yml"]
    tag = spec["images.BuildEC2GPUPTTrainPy3cu126DockerImage.tag"]
    repo = spec["repository_info.training_repository.release_repository_name"]
    out |= {f"{row['Example URL'].split('/')[0]}/{repo}:{tag}" for row in dlc["tables"]["available_images.md"]}
    out.add(json.loads((ROOT / "components/k8s/data/ngc_pytorch.json").read_text())["image"])
    rclone = digest("rclone")["tool"]
    out.add(f"{rclone['image']}:{rclone['tag']}")
    out |= set(digest("kuberay-operator")["images"]["pytorch-sample"]["images"])
    out.add("python:3.12-slim")  # Docker Official Image, cited in components/k8s/probe.py (typed, not derived)
    return out


def stale() -> str:
    [example] = _workload_images({"manifests": {"ds": digest("node-problem-detector")["manifests"]["daemonset"]}})
    return example


def images(node: Any) -> Iterator[str]:
    """Every container image under a rendered object, pod templates at any depth, a TrainJob's trainer image and Job
    templates kept as YAML in a ConfigMap (the health gate's) included."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "trainer" and isinstance(value, dict) and "image" in value:
                yield value["image"]
            if key in ("containers", "initContainers") and isinstance(value, list):
                yield from (c["image"] for c in value if isinstance(c, dict) and "image" in c)
            elif key == "data" and isinstance(value, dict):
                for text in value.values():
                    if isinstance(text, str) and "kind: Job" in text:
                        for doc in yaml.safe_load_all(text):
                            yield from images(doc)
            yield from images(value)
    elif isinstance(node, list):
        for item in node:
            yield from images(item)


RENDERED = rendered()


@pytest.mark.parametrize("case", sorted(RENDERED))
def test_every_installed_image_is_its_pins(case: str) -> None:
    _, out = RENDERED[case]
    found = {image for m in out.manifests for image in images(m.obj)}
    assert found, case
    assert found <= expected(), sorted(found - expected())
    assert stale() not in found


@pytest.mark.parametrize("case", sorted(RENDERED))
def test_the_network_operators_images_are_its_releases(case: str) -> None:
    _, out = RENDERED[case]
    release = digest("network-operator")["values"]["hack/release.yaml"]
    for m in out.manifests:
        if m.kind == "NicClusterPolicy":
            plugin = m.obj["spec"]["rdmaSharedDevicePlugin"]
            assert {k: plugin[k] for k in ("image", "repository", "version")} == release["RdmaSharedDevicePlugin"]
            driver = m.obj["spec"]["ofedDriver"]
            assert (driver["image"], driver["version"]) == (release["Mofed"]["image"], release["Mofed"]["version"])
            assert driver["repository"] == "nvcr.io/nvidia/mellanox"  # public NGC repository, docs/addons.md


def test_the_checked_in_example_jobs_run_pinned_images() -> None:
    for path in sorted((ROOT / "examples/jobs").rglob("*.yaml")):
        found = set(images(yaml.safe_load(path.read_text())))
        assert found and found <= expected(), (path, sorted(found - expected()))


def test_nothing_is_applied_from_a_repository_tree_that_is_not_the_release() -> None:
    """OLM's quickstart directory in git is OLM 0.18.3's; the release's manifests are release assets."""
    for case, (_, out) in RENDERED.items():
        assert not [f.url for f in out.files if "deploy/upstream/quickstart" in f.url], case
