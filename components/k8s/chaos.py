"""Network profiles in the cluster: Chaos Mesh NetworkChaos objects that shape traffic between node pools.

Nothing is installed or shaped unless a profile is ``enabled``. Then: the pinned Chaos Mesh chart (its daemon only
on the profiles' pools), the rehearsal namespace, and per ordered pool pair one NetworkChaos per action the
profile needs (delay with jitter, loss, bandwidth), each selecting pods of that one namespace on the source pool
(and the profile's labels) and shaping their traffic to the same kind of pods on the target pool, for the
profile's duration. Chaos Mesh facts (kinds, fields, units) come from the pinned release: see charts.CHAOS_MESH.
"""

from __future__ import annotations

import hashlib

from components.fleet import Cluster
from components.k8s import charts, kueue
from components.k8s.model import Manifest, Obj, Release, Rendered, namespace, obj
from components.k8s.scheduling import POOL_LABEL, on_pools, tolerations
from components.network_profiles import shaper_bytes
from components.spec import NetworkProfileSpec

RELEASE = "chaos-mesh"
NAMESPACE = "chaos-mesh"
API = "chaos-mesh.org/v1alpha1"
# containerd on EKS, GKE and AKS nodes; the chart's default is docker. No dashboard: nothing to expose.
VALUES = {"chaosDaemon": {"runtime": "containerd", "socketPath": "/run/containerd/containerd.sock"},
          "dashboard": {"create": False}}


def network_chaos(cluster: Cluster) -> Rendered:
    """The Chaos Mesh release and objects of the cluster's enabled network profiles (nothing when none is)."""
    profiles = [p for p in cluster.spec.network_profiles if p.enabled]
    if not profiles:
        return Rendered()
    pool_names = {name for p in profiles for name in (*p.pools, *p.to_pools)}
    pools = [pool for pool in cluster.pools if pool.name in pool_names]
    daemon = {"tolerations": tolerations(cluster.cloud, pools), "affinity": on_pools(pools)}
    release = Release(RELEASE, charts.CHAOS_MESH, NAMESPACE,
                      {**VALUES, "chaosDaemon": {**VALUES["chaosDaemon"], **daemon}})
    out = Rendered(releases=[release], manifests=[namespace(NAMESPACE)])
    teams = set(kueue.team_namespaces(cluster))
    for ns in sorted({p.namespace for p in profiles} - teams):  # Kueue already creates the team namespaces
        out.manifests.append(namespace(ns, {"gpufleet.io/purpose": "network-rehearsal"}))
    for profile in profiles:
        out.manifests += [Manifest(o, after=(RELEASE,)) for o in objects(profile)]
    return out


def objects(p: NetworkProfileSpec) -> list[Obj]:
    """One NetworkChaos per ordered (source pool, target pool) pair and action of the profile."""
    out = []
    for src in p.pools:
        for dst in p.to_pools or p.pools:
            for action, detail in _actions(p).items():
                out.append(obj(API, "NetworkChaos", _name(p.name, action, src, dst), p.namespace,
                               labels={"gpufleet.io/network-profile": p.name},
                               spec={"action": action, "mode": "all", "selector": _selector(p, src),
                                     "direction": "to", "target": {"mode": "all", "selector": _selector(p, dst)},
                                     "duration": f"{p.duration_minutes}m", action: detail}))
    return out


def _actions(p: NetworkProfileSpec) -> dict[str, Obj]:
    out: dict[str, Obj] = {}
    if p.latency_ms > 0:
        out["delay"] = {"latency": f"{p.latency_ms:g}ms", "jitter": f"{p.jitter_ms:g}ms", "correlation": "0"}
    if p.loss_pct > 0:
        out["loss"] = {"loss": f"{p.loss_pct:g}", "correlation": "0"}  # percent, as the profile
    if p.bandwidth_mbps is not None:
        bucket, queue = shaper_bytes(p.bandwidth_mbps)
        # a whole number with a tc unit (Chaos Mesh's rate check); kbit keeps fractional Mbit/s exact to 1 kbit/s
        out["bandwidth"] = {"rate": f"{round(p.bandwidth_mbps * 1000)}kbit", "buffer": bucket, "limit": queue}
    return out


def _selector(p: NetworkProfileSpec, pool: str) -> Obj:
    selector: Obj = {"namespaces": [p.namespace], "nodeSelectors": {POOL_LABEL: pool}}
    if p.labels:
        selector["labelSelectors"] = dict(p.labels)
    return selector


def _name(profile: str, action: str, src: str, dst: str) -> str:
    """<profile>-<action>-<src>-to-<dst>, shortened with a hash past 63 characters (a label-safe length)."""
    name = f"{profile}-{action}-{src}-to-{dst}"
    if len(name) <= 63:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[:54].rstrip('-')}-{digest}"
