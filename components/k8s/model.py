"""The add-on layer's neutral vocabulary: Kubernetes objects and pinned Helm charts as plain data.

Render modules (nvidia, interconnect, storage, kueue, observability, healthgate) are pure functions from a
resolved Cluster to these shapes; ``components.k8s.addons`` alone turns them into Pulumi resources. Keeping
them plain lets tests validate every object without running a Pulumi program.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from typing import Any

import pulumi
import yaml

Obj = dict[str, Any]


def as_nobody() -> Obj:
    """A container's securityContext for tools that need no privilege: uid 65534 (nobody), no escalation, a
    read-only root file system, every capability dropped."""
    return {"runAsNonRoot": True, "runAsUser": 65534, "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}}


@dataclass(frozen=True)
class Chart:
    """A Helm chart pinned to one version. ``repo`` is empty for OCI charts (``chart`` is then the oci:// URL)."""

    chart: str
    version: str
    repo: str
    source: str  # where the version and its values are documented
    pin: str = ""  # its row in components/k8s/upstream/pins.yaml (the digest tests check values against)


@dataclass(frozen=True)
class Release:
    """One Helm release of a pinned chart. ``after`` names releases whose CRDs or webhooks it needs."""

    name: str  # release name, also the Pulumi name suffix
    chart: Chart
    namespace: str
    values: dict[str, Any]
    after: tuple[str, ...] = ()


@dataclass(frozen=True)
class Manifest:
    """One Kubernetes object. ``after`` names the releases or files that install its CRD, webhook or namespace, or
    the ``key`` of another manifest it needs first."""

    obj: Obj
    after: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        return str(self.obj["kind"])

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def key(self) -> str:
        """<kind>/[<namespace>/]<name>, lower-case kind: how ``after`` names this object."""
        ns = self.obj["metadata"].get("namespace")
        return "/".join([self.kind.lower(), *([ns] if ns else []), self.name])


@dataclass(frozen=True)
class ManifestFile:
    """An upstream manifest file the cluster applies as its maintainers ship it (``kubectl apply -f <url>``), for
    software whose maintainers support no Helm chart. ``url`` is pinned to a tag (``upstream/pins.yaml``)."""

    name: str  # stable suffix of the Pulumi name
    url: str
    after: tuple[str, ...] = ()  # names of files applied before this one


@dataclass
class Rendered:
    """Everything one add-on contributes to a cluster."""

    releases: list[Release] = field(default_factory=list)
    manifests: list[Manifest] = field(default_factory=list)
    files: list[ManifestFile] = field(default_factory=list)

    def extend(self, other: Rendered) -> Rendered:
        self.releases += other.releases
        self.manifests += other.manifests
        self.files += other.files
        return self


def obj(api_version: str, kind: str, name: str, namespace: str | None = None,
        labels: dict[str, str] | None = None, **body: Any) -> Obj:
    """A Kubernetes object: apiVersion, kind, metadata (name, namespace, labels), then the body's fields."""
    metadata: Obj = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    metadata["labels"] = {"app.kubernetes.io/managed-by": "gpufleet", **(labels or {})}
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, **body}


def namespace(name: str, labels: dict[str, str] | None = None) -> Manifest:
    return Manifest(obj("v1", "Namespace", name, labels=labels))


def config_map(name: str, ns: str, data: dict[str, pulumi.Input[str]], labels: dict[str, str] | None = None,
               after: tuple[str, ...] = ()) -> Manifest:
    return Manifest(obj("v1", "ConfigMap", name, ns, labels=labels, data=data), after)


_YAML_TEXT: dict[bytes, str] = {}


def yaml_text(docs: list[Obj]) -> str:
    """``docs`` as one YAML stream in their own key order (yaml.safe_dump_all), dumped once per content: clusters of
    one shape render the same documents (50 clusters dumped the same health-gate Jobs and Kueue configuration 50
    times, a twentieth of the preview's CPU). The key is the documents' pickle, which keeps key order, types and
    which dicts and lists are shared: YAML writes those as anchors."""
    key = pickle.dumps(docs)
    text = _YAML_TEXT.get(key)
    if text is None:
        if len(_YAML_TEXT) >= 256:  # bounded: a process may render many fleets
            _YAML_TEXT.clear()
        text = _YAML_TEXT[key] = yaml.safe_dump_all(docs, sort_keys=False)
    return text
