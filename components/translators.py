"""Cloud -> translator. Imported lazily so a stack only needs its own cloud's SDK."""

from __future__ import annotations

import importlib

import pulumi

from components.catalog import Cloud
from components.fleet import Cluster

_MODULES = {Cloud.AWS: "components.aws", Cloud.GCP: "components.gcp", Cloud.AZURE: "components.azure"}


def deploy(cloud: Cloud, cluster: Cluster) -> pulumi.ComponentResource:
    """Build one cluster with its cloud's translator; the component exposes ``kubeconfig``."""
    module = importlib.import_module(_MODULES[cloud])
    return module.deploy(cluster)
