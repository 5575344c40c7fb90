"""Every Helm chart the add-on layer installs, built from its row in ``upstream/pins.yaml`` (chart, repository,
version, documentation): bumping a chart is one row there, whose digest ``scripts/refresh_upstream.py``
re-derives, reviewed like any other change (``gpufleet diff`` shows the new version)."""

from __future__ import annotations

from components.k8s import upstream
from components.k8s.model import Chart


def pinned(name: str) -> Chart:
    """The chart of pin row ``name``."""
    row = upstream.pin(name)
    return Chart(row["chart"], str(row["version"]), row.get("repo", ""), row["docs"], pin=name)


GPU_OPERATOR = pinned("gpu-operator")
NETWORK_OPERATOR = pinned("network-operator")
EFA_DEVICE_PLUGIN = pinned("aws-efa-k8s-device-plugin")
FSX_CSI = pinned("aws-fsx-csi-driver")
KUEUE = pinned("kueue")
KUBE_PROMETHEUS_STACK = pinned("kube-prometheus-stack")
CHAOS_MESH = pinned("chaos-mesh")  # only where a network profile is enabled (components/k8s/chaos.py)
KUBERAY = pinned("kuberay-operator")  # job operators: only those addons.operators lists (components/k8s/operators.py)
JOBSET = pinned("jobset")
TRAINER = pinned("kubeflow-trainer")

ALL = (GPU_OPERATOR, NETWORK_OPERATOR, EFA_DEVICE_PLUGIN, FSX_CSI, KUEUE, KUBE_PROMETHEUS_STACK, CHAOS_MESH,
       KUBERAY, JOBSET, TRAINER)
