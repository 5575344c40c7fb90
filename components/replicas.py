"""A worker's bucket, open to its peers' checkpoint tools (docs/fleet-queue.md "Recovery across clusters"): each
cloud's part trusts each peer cluster's OIDC issuer for the peer's checkpoint-tools ServiceAccount alone
(``checkpoint_tools.subject()``), limited to the bucket's export prefix. Imported lazily per cloud, like the
translators. A peer whose stack has not exported its issuer yet gets nothing until the next ``pulumi up`` here."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import pulumi

from components.catalog import Cloud
from components.fleet import Cluster

_MODULES = {Cloud.AWS: "components.aws.replica", Cloud.GCP: "components.gcp.replica",
            Cloud.AZURE: "components.azure.replica"}


@dataclass(frozen=True)
class Source:
    """A peer whose checkpoint tools write here: its name (``<stack>-<cluster>``) and its cluster's OIDC issuer
    (None until its stack exported it)."""

    name: str
    issuer: pulumi.Output[Any]


def prefix(cluster: Cluster) -> str:
    """The bucket prefix peers may write: the export path, with its trailing slash."""
    assert cluster.spec.storage.lustre is not None
    return cluster.spec.storage.lustre.export_path.strip("/") + "/"


def when_known(source: Source, build: Any) -> pulumi.Output[Any]:
    """``build(issuer)`` once the peer's issuer is known, else None. The trust is created inside the apply because a
    peer's issuer exists only once its stack is up, and peers reference each other: no order of ``pulumi up`` gives
    every worker its peers' issuers up front (the preview resolves stack references, so it still shows them)."""
    return source.issuer.apply(lambda issuer: build(str(issuer)) if issuer else None)


def trust_peers(cluster: Cluster, built: Any, sources: list[Source]) -> pulumi.Output[Any] | None:
    """This worker's export for its peers (bucket, region, per peer the identity it becomes), or None."""
    if not sources or cluster.spec.storage.lustre is None:
        return None
    return importlib.import_module(_MODULES[cluster.cloud]).trust_peers(cluster, built, sources)


def collect(bucket: dict[str, pulumi.Input[Any]], identities: dict[str, pulumi.Output[Any]]) -> pulumi.Output[Any]:
    """{bucket fields..., "sources": {peer: identity}} without the peers not trusted yet."""
    names = list(identities)
    return pulumi.Output.all(pulumi.Output.from_input(bucket), *identities.values()).apply(
        lambda got: {**got[0], "sources": {n: i for n, i in zip(names, got[1:], strict=True) if i}})
