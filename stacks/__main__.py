"""The Pulumi program: one stack, one cloud, one or more GPU clusters from the neutral fleet spec."""

import pulumi

from components import fleetlinks, replicas
from components.k8s import deploy_addons
from components.translators import deploy
from stacks import config

fleet = config.load()
for note in fleet.notes:  # e.g. which product a GPU family resolved to: shown by `pulumi preview` / `up`
    pulumi.log.info(note.render())
peers = config.peers(fleet)  # the stacks its MultiKueue clusters name (checked by config.load)
# every resource is registered while building one cluster: the offline preview may build shares of the clusters in
# parallel processes and merge what they registered (gpufleet/engine/shares.py)
for cluster in fleet.clusters:
    built = deploy(fleet.cloud, cluster)
    links, sources = fleetlinks.peer_links(pulumi.get_stack(), cluster, peers)  # checkpoints across the fleet queue
    deploy_addons(cluster, built, workers=tuple(fleetlinks.worker_links(cluster, peers)), peers=links)
    pulumi.export(f"{cluster.name}-kubeconfig", built.kubeconfig)
    fleetlinks.export(cluster, built)
    fleetlinks.export_replica(cluster, built, replicas.trust_peers(cluster, built, sources))
pulumi.export("gpus", {c.name: c.gpus_by_model() for c in fleet.clusters})
