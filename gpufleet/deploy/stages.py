"""The stages of a stack's `pulumi up` (docs/clouds.md "Deploy paths"): which resources each stage leaves alone and
where each runs. One stack, one state; a stage is `pulumi up --exclude <URN>... --exclude-dependents`:

- ``all``: everything (from a place that reaches every cluster's API server);
- ``cloud``: everything but the in-cluster layer of each two-stage cluster (from anywhere: cloud APIs only);
- ``cluster`` with a cluster name: the cloud layer (unchanged by then) and that cluster's in-cluster layer, leaving
  the other two-stage clusters' in-cluster layers alone (on a runner inside that cluster's network).

The in-cluster layer of a cluster is its Kubernetes provider ``<cluster>-k8s`` and the ``<cluster>-addons``
component; excluding both with their dependents leaves every resource that provider manages, and every child of the
component, untouched (https://www.pulumi.com/docs/iac/operations/stack-management/targeted-updates/). Excluded
resources are never deleted, so rerunning the cloud stage keeps a deployed in-cluster layer as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from components.deploy_path import CLOUD_STAGE, CLUSTER_STAGE, deploy_path
from components.fleet import Fleet

ALL_STAGE = "all"
STAGES = (ALL_STAGE, CLOUD_STAGE, CLUSTER_STAGE)
PROVIDER_TYPE = "pulumi:providers:kubernetes"
ADDONS_TYPE = "gpufleet:k8s:ClusterAddons"


class StageError(ValueError):
    """A stage that does not exist for this stack: the message says which do."""


def project_name(root: Path) -> str:
    return str(yaml.safe_load((root / "Pulumi.yaml").read_text(encoding="utf-8"))["name"])


def urn(stack: str, project: str, type_: str, name: str) -> str:
    """A top-level resource's URN (both in-cluster roots are children of the stack)."""
    return f"urn:pulumi:{stack}::{project}::{type_}::{name}"


def in_cluster_urns(stack: str, project: str, cluster: str) -> list[str]:
    return [urn(stack, project, PROVIDER_TYPE, f"{cluster}-k8s"), urn(stack, project, ADDONS_TYPE, f"{cluster}-addons")]


def two_stage_clusters(fleet: Fleet) -> list[str]:
    return [c.name for c in fleet.clusters if deploy_path(c.cloud, c.spec).two_stage]


def excluded(stack: str, project: str, fleet: Fleet, stage: str, cluster: str | None = None) -> list[str]:
    """The URNs a stage excludes (pass them with exclude_dependents)."""
    if stage not in STAGES:
        raise StageError(f"unknown stage {stage!r}: use {', '.join(STAGES)}")
    staged = two_stage_clusters(fleet)
    if stage == ALL_STAGE:
        return []
    if stage == CLUSTER_STAGE and cluster not in staged:
        raise StageError(f"stage cluster needs --cluster, one of the stack's two-stage clusters: "
                         f"{', '.join(staged) or 'none (every cluster deploys in one stage: use --stage all)'}")
    keep = cluster if stage == CLUSTER_STAGE else None
    return [u for name in staged if name != keep for u in in_cluster_urns(stack, project, name)]


@dataclass(frozen=True)
class Job:
    stack: str
    stage: str
    cluster: str | None
    runs_on: tuple[str, ...]

    def document(self) -> dict[str, Any]:
        return {"stack": self.stack, "stage": self.stage, "cluster": self.cluster, "runs_on": list(self.runs_on)}


def plan(stack: str, fleet: Fleet) -> list[Job]:
    """The jobs of one stack in order: the cloud stage (with every one-stage cluster whole), then one in-cluster job
    per two-stage cluster on its runner."""
    jobs = [Job(stack, CLOUD_STAGE, None, ("ubuntu-latest",))]
    for c in fleet.clusters:
        path = deploy_path(c.cloud, c.spec)
        if path.two_stage:
            jobs.append(Job(stack, CLUSTER_STAGE, c.name, path.stages[1].runs_on))
    return jobs
