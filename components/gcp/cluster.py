"""The GKE control plane: regional, private nodes (and a private endpoint unless the spec opens it), Workload
Identity, Dataplane V2 with multi-networking, a release channel whose minor and node upgrades wait for an
operator, DCGM metrics in managed monitoring, the Lustre and GCS FUSE CSI drivers, shielded nodes."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from components.catalog import Cloud
from components.deploy_path import origin
from components.kubeconfig import exec_kubeconfig
from components.multikueue import manager_cidrs, manager_reach
from components.reach import Route, reach
from components.spec import ClusterSpec

CONTROL_PLANE_CIDR = "172.16.0.0/28"
RELEASE_CHANNEL = "REGULAR"
# Training runs for weeks: GKE may patch the control plane, but minor versions and node upgrades (which recreate
# GPU nodes) wait until an operator lifts this exclusion, at the latest at the version's end of support.
UPGRADE_EXCLUSION = {"exclusion_name": "no-minor-or-node-upgrades", "start_time": "2026-01-01T00:00:00Z",
                     "exclusion_options": {"scope": "NO_MINOR_OR_NODE_UPGRADES",
                                           "end_time_behavior": "UNTIL_END_OF_SUPPORT"}}
MAINTENANCE_WINDOW = {"start_time": "2026-01-03T02:00:00Z", "end_time": "2026-01-03T08:00:00Z",
                      "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU"}
MONITORED = ["SYSTEM_COMPONENTS", "DCGM"]  # DCGM: GPU metrics into Managed Service for Prometheus
LOGGED = ["SYSTEM_COMPONENTS", "WORKLOADS"]
# GKE nodes before 1.33.2-gke.4655000 reach Managed Lustre only on the legacy port 6988:
# https://cloud.google.com/managed-lustre/docs/lustre-csi-driver-new-volume (enable-legacy-lustre-port)
LEGACY_LUSTRE_BELOW = "1.33.2-gke.4655000"


@dataclass(frozen=True)
class GkeClusterArgs:
    spec: ClusterSpec
    project: pulumi.Input[str]
    network_id: pulumi.Input[str]
    subnet_id: pulumi.Input[str]
    pods_range: str
    services_range: str
    node_service_account: pulumi.Input[str]
    labels: dict[str, str]
    multi_networking: bool  # GPUDirect pools attach extra VPCs
    secrets_key: pulumi.Input[str]  # Cloud KMS key for application-layer secrets encryption
    key_ready: list[pulumi.Resource]


def gke_version_key(version: str) -> tuple[int, int, int, int]:
    """'1.33.2-gke.4655000' -> (1, 33, 2, 4655000); a bare minor '1.33' is its earliest node version (1, 33, 0, 0)."""
    release, _, build = version.partition("-gke.")
    numbers = [int(p) for p in release.split(".")] + [0, 0]
    return numbers[0], numbers[1], numbers[2], int(build or 0)


def legacy_lustre_port(node_version: str) -> bool:
    """Keyed on the node version: a spec that names only the minor (1.33) may get any of its patches, the
    earliest of which still needs the legacy port, so it gets it."""
    return gke_version_key(node_version) < gke_version_key(LEGACY_LUSTRE_BELOW)


class GkeCluster(pulumi.ComponentResource):
    def __init__(self, name: str, args: GkeClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:gcp:GkeCluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.cluster = _control_plane(name, args, child)
        self.name = self.cluster.name
        self.endpoint = self.cluster.endpoint
        self.kubeconfig = pulumi.Output.secret(kubeconfig(self.cluster, dns_endpoint(args.spec)))
        self.register_outputs({"name": self.name, "endpoint": self.endpoint, "kubeconfig": self.kubeconfig})


def dns_endpoint(spec: ClusterSpec) -> bool:
    """A private cluster whose deployer runs outside the VPC is reached over GKE's DNS-based endpoint (IAM-authorised,
    components/reach.py); the kubeconfig then names it too, so users get in the same way. So is one whose MultiKueue
    manager runs outside it."""
    return reach(Cloud.GCP, spec, origin(Cloud.GCP, spec)).route is Route.DNS_ENDPOINT or manager_via_dns(spec)


def manager_via_dns(spec: ClusterSpec) -> bool:
    found = manager_reach(Cloud.GCP, spec)
    return found is not None and found.route is Route.DNS_ENDPOINT


def issuer(project: pulumi.Input[str], region: str, name: str) -> pulumi.Output[str]:
    """The issuer of the cluster's ServiceAccount tokens, which GKE publishes for OIDC discovery (typed from
    https://cloud.google.com/kubernetes-engine/docs/how-to/workload-identity, "issuer" of a cluster's tokens)."""
    return pulumi.Output.concat("https://container.googleapis.com/v1/projects/", project, f"/locations/{region}/"
                                f"clusters/{name}")


def api_server(cluster: gcp.container.Cluster, dns: bool) -> tuple[pulumi.Output[str], pulumi.Output[str]]:
    """https://<endpoint> and its CA (base64 PEM): the DNS endpoint's certificate is publicly trusted (no CA)."""
    if dns:
        return (cluster.control_plane_endpoints_config.apply(lambda c: f"https://{c.dns_endpoint_config.endpoint}"),
                pulumi.Output.from_input(""))
    return cluster.endpoint.apply(lambda e: f"https://{e}"), cluster.master_auth.cluster_ca_certificate


def _control_plane(name: str, args: GkeClusterArgs, opts: pulumi.ResourceOptions) -> gcp.container.Cluster:
    spec = args.spec
    private = spec.endpoint == "private"
    # the runner's and an in-network MultiKueue manager's: the private endpoint's too
    authorized = [*spec.public_access_cidrs, *spec.deploy.runner_cidrs, *manager_cidrs(spec)]
    return gcp.container.Cluster(
        f"{name}-gke",
        name=spec.name,
        location=spec.region,  # regional control plane; node pools pin their own zones
        node_locations=spec.zones,
        network=args.network_id,
        subnetwork=args.subnet_id,
        networking_mode="VPC_NATIVE",
        ip_allocation_policy={"cluster_secondary_range_name": args.pods_range,
                              "services_secondary_range_name": args.services_range},
        datapath_provider="ADVANCED_DATAPATH",  # Dataplane V2, which multi-networking requires
        enable_multi_networking=args.multi_networking or None,
        private_cluster_config={"enable_private_nodes": True, "enable_private_endpoint": private,
                                "master_ipv4_cidr_block": CONTROL_PLANE_CIDR,
                                "master_global_access_config": {"enabled": True}},
        master_authorized_networks_config={
            "cidr_blocks": [{"cidr_block": c, "display_name": f"public-access-{i}"}
                            for i, c in enumerate(authorized)],
            "gcp_public_cidrs_access_enabled": False},
        control_plane_endpoints_config={"dns_endpoint_config": {"allow_external_traffic": dns_endpoint(spec)}},
        workload_identity_config={"workload_pool": pulumi.Output.concat(args.project, ".svc.id.goog")},
        release_channel={"channel": RELEASE_CHANNEL},
        min_master_version=spec.kubernetes_version,
        maintenance_policy={"recurring_window": MAINTENANCE_WINDOW, "maintenance_exclusions": [UPGRADE_EXCLUSION]},
        addons_config={"gcs_fuse_csi_driver_config": {"enabled": True},
                       "lustre_csi_driver_config": {
                           "enabled": True, "enable_legacy_lustre_port": legacy_lustre_port(spec.kubernetes_version)},
                       "gce_persistent_disk_csi_driver_config": {"enabled": True}},
        monitoring_config={"enable_components": MONITORED if spec.addons.monitoring else ["SYSTEM_COMPONENTS"],
                           "managed_prometheus": {"enabled": spec.addons.monitoring}},
        logging_config={"enable_components": LOGGED},
        database_encryption={"state": "ENCRYPTED", "key_name": args.secrets_key},
        enable_shielded_nodes=True,
        security_posture_config={"mode": "BASIC", "vulnerability_mode": "VULNERABILITY_BASIC"},
        # The default pool is removed once the cluster exists; until then it runs as the node account too.
        remove_default_node_pool=True,
        initial_node_count=1,
        node_config={"service_account": args.node_service_account,
                     "oauth_scopes": ["https://www.googleapis.com/auth/cloud-platform"],
                     "workload_metadata_config": {"mode": "GKE_METADATA"},
                     "shielded_instance_config": {"enable_secure_boot": True,
                                                  "enable_integrity_monitoring": True}},
        resource_labels=args.labels,
        deletion_protection=True,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
            depends_on=args.key_ready, ignore_changes=["nodeConfig", "initialNodeCount"])),
    )


def kubeconfig(cluster: gcp.container.Cluster, dns: bool) -> pulumi.Output[str]:
    """A kubeconfig that authenticates with gke-gcloud-auth-plugin (no static credentials). Over the DNS endpoint
    the server is its name, whose certificate is publicly trusted (no CA data); else the IP endpoint and its CA."""
    server, ca = api_server(cluster, dns)
    return pulumi.Output.all(cluster.name, server, ca).apply(
        lambda a: exec_kubeconfig(a[0], a[1], a[2], "gke-gcloud-auth-plugin", [],
                                  provideClusterInfo=True,
                                  installHint="Install gke-gcloud-auth-plugin: gcloud components install "
                                              "gke-gcloud-auth-plugin"))
