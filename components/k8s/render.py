"""Every add-on of one cluster as plain data, in install order (``components.k8s.addons`` registers it)."""

from __future__ import annotations

from components import checkpoint_tools
from components.fleet import Cluster
from components.k8s import (
    chaos,
    checkpoints,
    fleetqueue,
    healthgate,
    interconnect,
    kueue,
    nodegate,
    nvidia,
    observability,
    operators,
    probe,
    selfheal,
    storage,
    sync,
)
from components.k8s.inputs import AddonInputs
from components.k8s.model import Rendered


def render(cluster: Cluster, inputs: AddonInputs) -> Rendered:
    monitoring = cluster.spec.addons.monitoring
    out = Rendered()
    out.extend(observability.monitoring(cluster, lustre=inputs.lustre is not None))
    out.extend(nvidia.gpu_operator(cluster, monitoring, (observability.RELEASE,) if monitoring else ()))
    out.extend(nvidia.network_operator(cluster))
    out.extend(interconnect.efa_device_plugin(cluster))
    out.extend(interconnect.nccl_installers(cluster))
    out.extend(interconnect.gpu_networks(list(inputs.gpu_nics)))
    jobs = operators.operators(cluster)
    out.extend(jobs)
    after = tuple(r.name for r in jobs.releases)
    if cluster.spec.is_manager:
        out.extend(fleetqueue.manager(cluster, monitoring, operators.frameworks(cluster), after, list(inputs.workers)))
    else:
        out.extend(kueue.kueue(cluster, monitoring, operators.frameworks(cluster), after))
        out.extend(fleetqueue.worker(operators.frameworks(cluster), inputs.manager))
    lustre = inputs.lustre is not None
    # the probe or the sync
    tools = (lustre and monitoring) or sync.wanted(cluster, lustre, inputs.checkpoints, inputs.peers)
    if tools:
        out.extend(checkpoints.tools_namespace(inputs.checkpoints))
    out.extend(storage.lustre(cluster, inputs.lustre, (kueue.team_namespaces(cluster) or ["default"]) +
                              ([checkpoint_tools.NAMESPACE] if tools else [])))
    out.extend(probe.checkpoint_probe(cluster, lustre, monitoring, inputs.checkpoints))
    out.extend(sync.checkpoint_sync(cluster, lustre, inputs.checkpoints, monitoring, inputs.peers))
    out.extend(healthgate.health_gate(cluster))
    out.extend(nodegate.node_gate(cluster))
    out.extend(selfheal.self_healing(cluster, monitoring))
    out.extend(chaos.network_chaos(cluster))
    return out
