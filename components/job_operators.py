"""The job operators a cluster may install (``addons.operators``) and the checks on that list. What each installs
(pinned chart, CRDs, Kueue integration) is in ``components.k8s.operators``; this module is only the names, so
that validation needs nothing from the in-cluster layer."""

from __future__ import annotations

from collections.abc import Iterator

from components.errors import SpecProblem, unknown_name
from components.spec import ClusterSpec

# name -> what it runs, and the operators it needs installed beside it
KNOWN: dict[str, str] = {
    "kuberay": "KubeRay: RayJob and RayCluster",
    "jobset": "JobSet: groups of Jobs started, failed and restarted together",
    "trainer": "Kubeflow Trainer: TrainJob on ClusterTrainingRuntimes (PyTorch, MPI)",
}
NEEDS: dict[str, tuple[str, ...]] = {"trainer": ("jobset",)}  # Trainer runs every TrainJob as a JobSet


def check(c: ClusterSpec, path: str) -> Iterator[SpecProblem]:
    """Unknown names (with a did-you-mean), repeats, and an operator listed without one it needs. (A cluster without
    GPU pools, e.g. a draft stack `gpufleet capacity apply` starts, installs none of them: nothing to run.)"""
    where = f"{path}.addons.operators"
    listed = c.addons.operators
    for i, name in enumerate(listed):
        if name not in KNOWN:
            yield unknown_name(f"{where}[{i}]", "job operator", name, sorted(KNOWN))
        elif name in listed[:i]:
            yield SpecProblem(f"{where}[{i}]", f"{name!r} is listed twice.", "List each operator once.")
        for need in NEEDS.get(name, ()):
            if need not in listed:
                yield SpecProblem(f"{where}[{i}]", f"{name!r} needs {need!r} installed beside it "
                                  f"({KNOWN[name].split(':')[0]} runs its jobs through it).",
                                  f"Add '{need}' to addons.operators.")
