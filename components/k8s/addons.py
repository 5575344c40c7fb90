"""The ClusterAddons component: registers the rendered add-ons of one cluster through that cluster's Kubernetes
provider (passed in by ``deploy_addons``; there is no default provider)."""

from __future__ import annotations

import re
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pulumi_random as random

from components.fleet import Cluster
from components.k8s import observability, paging
from components.k8s.inputs import AddonInputs
from components.k8s.model import Manifest, Release
from components.k8s.render import render

# API group -> pulumi_kubernetes module for the built-in kinds the add-ons render; anything else is a custom resource.
_CORE_GROUPS = {"": "core", "apps": "apps", "batch": "batch", "storage.k8s.io": "storage",
                "scheduling.k8s.io": "scheduling", "rbac.authorization.k8s.io": "rbac"}
HELM_TIMEOUT_S = 900  # the GPU operator compiles or loads drivers on first install


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def child_name(component: str, m: Manifest) -> str:
    """Stable Pulumi names (child names are API): <component>-<kind>-[<namespace>-]<name>."""
    ns = m.obj["metadata"].get("namespace")
    return f"{component}-{m.kind.lower()}-{ns + '-' if ns else ''}{m.name}"


class ClusterAddons(pulumi.ComponentResource):
    def __init__(self, name: str, cluster: Cluster, inputs: AddonInputs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:k8s:ClusterAddons", name, None, opts)
        rendered = render(cluster, inputs)
        self.resources: dict[str, pulumi.Resource] = {}
        namespaces = {m.name: m for m in rendered.manifests if m.kind == "Namespace"}
        for m in [m for m in rendered.manifests if m.kind == "Namespace"]:
            self._manifest(name, m, [])
        if cluster.spec.addons.monitoring:  # before kube-prometheus-stack, whose Grafana logs in with it
            ns = self.resources[f"namespace/{observability.NAMESPACE}"]
            self._manifest(name, self._grafana_admin(name, cluster), [ns])
        for release in rendered.releases:
            self._release(name, release, self._needs(release.after, namespaces.get(release.namespace)))
        for file in rendered.files:
            self.resources[f"file/{file.name}"] = k8s.yaml.v2.ConfigFile(
                f"{name}-{file.name}", file=file.url, opts=self._opts(self._needs(file.after, None)))
        for m in rendered.manifests:
            if m.kind != "Namespace":
                ns = namespaces.get(m.obj["metadata"].get("namespace", ""))
                self._manifest(name, m, self._needs(m.after, ns))
        self.releases = [r.name for r in rendered.releases]
        self.register_outputs({"releases": self.releases})

    def _grafana_admin(self, name: str, cluster: Cluster) -> Manifest:
        """Grafana's admin password: generated once, kept in the stack's state as a secret, never the chart's. Its
        own explicit provider: stacks disable default providers."""
        provider = random.Provider(f"{name}-random", opts=pulumi.ResourceOptions(parent=self))
        password = random.RandomPassword(f"{name}-grafana-admin", length=paging.PASSWORD_LENGTH, special=False,
                                         opts=pulumi.ResourceOptions(parent=self, provider=provider))
        return paging.grafana_admin(cluster, observability.NAMESPACE, pulumi.Output.secret(password.result))

    def _needs(self, after: tuple[str, ...], ns: Manifest | None) -> list[pulumi.Resource]:
        """Releases and files by name (absent ones are add-ons this cluster does not get); manifests by key, which
        must be registered already (an earlier manifest of the list)."""
        manifests = [a for a in after if "/" in a]
        missing = [a for a in manifests if a not in self.resources]
        if missing:
            raise ValueError(f"{', '.join(missing)}: no such manifest rendered before the one that needs it")
        keys = [f"{what}/{a}" for a in after for what in ("release", "file")] + manifests + (
            [f"namespace/{ns.name}"] if ns else [])
        return [self.resources[k] for k in keys if k in self.resources]

    def _opts(self, depends_on: list[pulumi.Resource]) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self, depends_on=depends_on)

    def _release(self, component: str, r: Release, depends_on: list[pulumi.Resource]) -> None:
        chart = r.chart
        self.resources[f"release/{r.name}"] = k8s.helm.v3.Release(
            f"{component}-{r.name}", name=r.name, chart=chart.chart, version=chart.version,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=chart.repo) if chart.repo else None,
            namespace=r.namespace, create_namespace=False, values=r.values, atomic=True, cleanup_on_fail=True,
            timeout=HELM_TIMEOUT_S, opts=self._opts(depends_on))

    def _manifest(self, component: str, m: Manifest, depends_on: list[pulumi.Resource]) -> None:
        group, _, version = m.obj["apiVersion"].rpartition("/")
        body: dict[str, Any] = {k: v for k, v in m.obj.items() if k not in ("apiVersion", "kind")}
        opts = self._opts(depends_on)
        if group in _CORE_GROUPS:
            cls = getattr(getattr(getattr(k8s, _CORE_GROUPS[group]), version), m.kind)
            resource = cls(child_name(component, m), opts=opts, **{_snake(k): v for k, v in body.items()})
        else:
            resource = k8s.apiextensions.CustomResource(child_name(component, m), api_version=m.obj["apiVersion"],
                                                        kind=m.kind, opts=opts, **body)
        self.resources[m.key] = resource
