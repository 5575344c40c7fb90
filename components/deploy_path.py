"""The path each cluster's `pulumi up` takes to its API server (docs/clouds.md "Deploy paths"), decided from the
spec and refused, with its config path, when it cannot work.

One stage: the deployer reaches the API server where it runs (GKE's DNS endpoint, or a public endpoint open to the
deployer's fixed egress addresses), so one `pulumi up` builds the cloud layer and the in-cluster layer.
Two stages: the API server is private and reachable only from its network. Stage `cloud` runs anywhere and builds
the cloud layer (`pulumi up` with the in-cluster layer excluded); stage `cluster` runs on a runner inside the
network and builds the rest. One stack, one state: `gpufleet up --stage` and .github/workflows/up.yml run them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from components.catalog import Cloud
from components.errors import SpecProblem
from components.reach import REACH, Origin, Route, Where, reach
from components.spec import ClusterSpec
from components.validate_access import cidr_problems

CLOUD_STAGE = "cloud"
CLUSTER_STAGE = "cluster"
ANYWHERE = "ubuntu-latest"  # the cloud layer needs only the cloud APIs: a GitHub-hosted runner will do
# GitHub-hosted runner labels: those machines run outside every VPC / VNet, with no fixed egress addresses
# (https://docs.github.com/en/actions/using-github-hosted-runners/about-github-hosted-runners)
HOSTED_LABEL = re.compile(r"^(ubuntu|windows|macos)-")


@dataclass(frozen=True)
class Stage:
    name: str  # cloud, or cluster (the in-cluster layer)
    runs_on: tuple[str, ...]  # the runner labels it needs
    what: str


@dataclass(frozen=True)
class DeployPath:
    cluster: str
    route: Route
    how: str
    stages: tuple[Stage, ...]  # one stage: the in-cluster layer goes with the cloud layer

    @property
    def two_stage(self) -> bool:
        return len(self.stages) > 1

    def line(self) -> str:
        steps = "; ".join(f"stage {s.name} on [{', '.join(s.runs_on)}]: {s.what}" for s in self.stages)
        return f"{self.cluster}: {self.route.value} ({self.how}). {steps}"

    def document(self) -> dict[str, Any]:
        return {"route": self.route.value, "how": self.how,
                "stages": [{"name": s.name, "runs_on": list(s.runs_on), "what": s.what} for s in self.stages]}


def deployer(cloud: Cloud, c: ClusterSpec) -> Where:
    if c.deploy.deployer is not None:
        return Where(c.deploy.deployer)
    return Where.OUTSIDE if c.endpoint == "public" else REACH[cloud].private_default


def runner_labels(cloud: Cloud, c: ClusterSpec) -> tuple[str, ...]:
    return tuple(c.deploy.runner_labels) or ("self-hosted", f"gpufleet-{cloud.value}-{c.name}")


def origin(cloud: Cloud, c: ClusterSpec) -> Origin:
    where = deployer(cloud, c)
    cidrs = c.deploy.egress_cidrs if where is Where.OUTSIDE else c.deploy.runner_cidrs
    return Origin(where, tuple(cidrs), "the deployer")


def deploy_path(cloud: Cloud, c: ClusterSpec) -> DeployPath:
    """The path of a cluster whose spec passed ``check``."""
    found = reach(cloud, c, origin(cloud, c))
    assert found.route is not None, found.refused  # check() refused it before anything was built
    if found.route is not Route.IN_NETWORK:
        return DeployPath(c.name, found.route, found.how, (Stage("all", (ANYWHERE,), "cloud and in-cluster layers"),))
    return DeployPath(c.name, found.route, found.how, (
        Stage(CLOUD_STAGE, (ANYWHERE,), "the cloud layer; the in-cluster layer is excluded"),
        Stage(CLUSTER_STAGE, runner_labels(cloud, c), "the in-cluster layer, from inside the network")))


def _unused(values: list[str], where: str, why: str) -> Iterator[SpecProblem]:
    if values:
        yield SpecProblem(where, f"is set but {why}.", "Remove it.")


def check(cloud: Cloud, c: ClusterSpec, path: str) -> Iterator[SpecProblem]:
    """Refuse a deploy path that cannot work, each problem at its config path."""
    api, d, where = REACH[cloud], c.deploy, f"{path}.deploy"
    side = deployer(cloud, c)
    for name in ("egress_cidrs", "runner_cidrs"):
        yield from cidr_problems(getattr(d, name), f"{where}.{name}", "203.0.113.7/32", "is every address.",
                                 "List the runner's own addresses.")
    if side is Where.NETWORK:
        yield from _unused(d.egress_cidrs, f"{where}.egress_cidrs", "the deployer runs inside the network")
        if not api.runner_cidrs_used:
            yield from _unused(d.runner_cidrs, f"{where}.runner_cidrs",
                               f"on {cloud.title} {api.runner_cidrs_unused_why}")
        for k, label in enumerate(d.runner_labels):
            if HOSTED_LABEL.match(label):
                yield SpecProblem(f"{where}.runner_labels[{k}]", f"{label!r} is a GitHub-hosted runner, which runs "
                                  f"outside every {api.network}.", f"Name the labels of {_runner(api.network)}.")
        return
    yield from _unused(d.runner_labels, f"{where}.runner_labels", "the deployer runs outside the network")
    yield from _unused(d.runner_cidrs, f"{where}.runner_cidrs", "the deployer runs outside the network")
    if c.endpoint == "private":
        yield from _unused(d.egress_cidrs, f"{where}.egress_cidrs", "the endpoint is private: no address list "
                           "applies to it")
    found = reach(cloud, c, origin(cloud, c))
    if found.route is None:
        at = f"{where}.egress_cidrs" if c.endpoint == "public" else f"{where}.deployer"
        yield SpecProblem(at, f"`pulumi up` cannot reach the API server: {found.refused}.", _fix(api.network, c))


def _runner(network: str) -> str:
    return f"a self-hosted runner (or a build job) inside the {network} or one peered to it"


def _fix(network: str, c: ClusterSpec) -> str:
    if c.endpoint == "public":
        return ("List the deployer's fixed egress addresses in deploy.egress_cidrs and inside public_access_cidrs, "
                f"or set deploy.deployer: network (two stages, the in-cluster one on {_runner(network)}).")
    return (f"Set deploy.deployer: network (two stages: the cloud layer from anywhere, the in-cluster layer on "
            f"{_runner(network)}, deploy.runner_labels), or endpoint: public with public_access_cidrs covering "
            "deploy.egress_cidrs.")
