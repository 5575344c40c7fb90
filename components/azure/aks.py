"""The AKS control plane: private API server integrated into the VNet, Entra ID with Azure RBAC and no local
accounts, OIDC issuer and Workload Identity, Kubernetes secrets encrypted with a Key Vault key (KMS, private
vault), Azure CNI overlay behind a NAT gateway, auto-upgrade channels held to a maintenance window, a
user-assigned control-plane identity with Network Contributor on its two subnets only and the KMS key's roles,
and the CPU system pool."""

from __future__ import annotations

import base64
from dataclasses import dataclass

import pulumi
import pulumi_azure_native as azure

from components.azure.keys import KeyRef, grant_key
from components.azure.roles import KEY_VAULT_CONTRIBUTOR, NETWORK_CONTRIBUTOR, grant
from components.catalog import MachineType
from components.spec import Nodes

POD_CIDR = "10.244.0.0/16"  # overlay: pod addresses never consume VNet space
SERVICE_CIDR = "10.0.0.0/16"
DNS_SERVICE_IP = "10.0.0.10"
SYSTEM_TAINT = "CriticalAddonsOnly=true:NoSchedule"
# Upgrades and node image updates only in this weekly window (UTC), never during the training week.
MAINTENANCE = {"day_of_week": "Sunday", "start_time": "02:00", "duration_hours": 4}
MAINTENANCE_CONFIGS = ("aksManagedAutoUpgradeSchedule", "aksManagedNodeOSUpgradeSchedule")


@dataclass(frozen=True)
class AksClusterArgs:
    cluster_name: str
    resource_group_name: pulumi.Input[str]
    location: str
    kubernetes_version: str
    zones: list[str]
    nodes_subnet_id: pulumi.Input[str]
    apiserver_subnet_id: pulumi.Input[str]  # delegated to AKS: the API server's VNet integration
    kms_key: KeyRef  # Kubernetes secrets are encrypted with this key before etcd stores them
    public_endpoint: bool
    public_access_cidrs: list[str]
    admin_group_ids: list[str]
    monitoring: bool
    system_machine: MachineType
    system_nodes: Nodes
    subscription_id: pulumi.Input[str]
    tags: dict[str, str]


class AksCluster(pulumi.ComponentResource):
    def __init__(self, name: str, args: AksClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:azure:AksCluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.identity = azure.managedidentity.UserAssignedIdentity(
            f"{name}-identity", resource_group_name=args.resource_group_name, location=args.location,
            tags=args.tags, opts=child)
        roles = _control_plane_roles(name, args, self.identity.principal_id, child)
        self.cluster = _managed_cluster(name, args, self.identity, pulumi.ResourceOptions.merge(
            child, pulumi.ResourceOptions(depends_on=roles)))
        self.maintenance = [_maintenance(f"{name}-{config}", args, self.cluster, config, child)
                            for config in MAINTENANCE_CONFIGS]
        self.name = self.cluster.name
        self.fqdn = self.cluster.private_fqdn if not args.public_endpoint else self.cluster.fqdn
        self.oidc_issuer = self.cluster.oidc_issuer_profile.apply(lambda p: p.issuer_url if p else None)
        self.kubeconfig = pulumi.Output.secret(kubeconfig(args.resource_group_name, self.cluster, child))
        self.register_outputs({"name": self.name, "fqdn": self.fqdn, "oidc_issuer": self.oidc_issuer,
                               "kubeconfig": self.kubeconfig})


def _control_plane_roles(name: str, args: AksClusterArgs, principal_id: pulumi.Output[str],
                         opts: pulumi.ResourceOptions) -> list[pulumi.Resource]:
    """What the control-plane identity needs before the cluster exists: join the nodes and API server subnets,
    encrypt / decrypt with the KMS key (that key only), and add AKS's private endpoint to the private vault."""
    def network(suffix: str, subnet_id: pulumi.Input[str], what: str) -> pulumi.Resource:
        return grant(f"{name}-{suffix}", scope=subnet_id, principal_id=principal_id, role=NETWORK_CONTRIBUTOR,
                     subscription_id=args.subscription_id, description=f"AKS control plane: {what}", opts=opts)
    key = args.kms_key
    return [network("subnet-join", args.nodes_subnet_id, "join nodes and load balancers to the nodes subnet"),
            network("apiserver-subnet-join", args.apiserver_subnet_id, "place the API server in its subnet"),
            grant_key(f"{name}-kms-key-user", key, principal_id, args.subscription_id, opts),
            grant(f"{name}-kms-private-link", scope=key.vault_id, principal_id=principal_id,
                  role=KEY_VAULT_CONTRIBUTOR, subscription_id=args.subscription_id,
                  description="AKS KMS: private link from the API server to the private key vault", opts=opts)]


def kms_profile(key: KeyRef) -> dict:
    """KMS with a private vault: AKS reaches it over its own private link, through API server VNet integration."""
    return {"enabled": True, "key_id": key.key_url, "key_vault_network_access": "Private",
            "key_vault_resource_id": key.vault_id}


def system_pool_profile(args: AksClusterArgs) -> dict:
    """The inline System pool AKS requires at creation: add-ons only, spread over the cluster's zones."""
    nodes = args.system_nodes
    return {
        "name": "system", "mode": "System", "vm_size": args.system_machine.name, "os_type": "Linux",
        "os_sku": "AzureLinux", "type": "VirtualMachineScaleSets", "availability_zones": args.zones,
        "count": max(nodes.initial, 1), "min_count": max(nodes.min, 1), "max_count": nodes.max,
        "enable_auto_scaling": True, "vnet_subnet_id": args.nodes_subnet_id, "os_disk_size_gb": 128,
        "node_taints": [SYSTEM_TAINT], "node_labels": {"gpufleet.io/pool": "system"},
        "enable_node_public_ip": False, "enable_encryption_at_host": True, "upgrade_settings": {"max_surge": "33%"},
    }


def _managed_cluster(name: str, args: AksClusterArgs, identity: azure.managedidentity.UserAssignedIdentity,
                     opts: pulumi.ResourceOptions) -> azure.containerservice.ManagedCluster:
    return azure.containerservice.ManagedCluster(
        f"{name}-aks",
        resource_name_=args.cluster_name,
        resource_group_name=args.resource_group_name,
        location=args.location,
        dns_prefix=args.cluster_name,
        kubernetes_version=args.kubernetes_version,
        sku={"name": "Base", "tier": "Standard"},  # the uptime SLA tier
        identity={"type": "UserAssigned", "user_assigned_identities": [identity.id]},
        agent_pool_profiles=[system_pool_profile(args)],
        api_server_access_profile={
            "enable_private_cluster": not args.public_endpoint,
            "private_dns_zone": "system" if not args.public_endpoint else None,
            "authorized_ip_ranges": args.public_access_cidrs or None,
            "enable_vnet_integration": True, "subnet_id": args.apiserver_subnet_id,
            "disable_run_command": True},
        aad_profile={"managed": True, "enable_azure_rbac": True,
                     "admin_group_object_ids": args.admin_group_ids or None},
        disable_local_accounts=True,
        enable_rbac=True,
        oidc_issuer_profile={"enabled": True},
        security_profile={"workload_identity": {"enabled": True},
                          "image_cleaner": {"enabled": True, "interval_hours": 48},
                          "azure_key_vault_kms": kms_profile(args.kms_key)},
        network_profile={"network_plugin": "azure", "network_plugin_mode": "overlay",
                         "pod_cidr": POD_CIDR, "service_cidr": SERVICE_CIDR, "dns_service_ip": DNS_SERVICE_IP,
                         "outbound_type": "userAssignedNATGateway", "load_balancer_sku": "standard"},
        auto_upgrade_profile={"upgrade_channel": "patch", "node_os_upgrade_channel": "NodeImage"},
        azure_monitor_profile={"metrics": {"enabled": args.monitoring}},
        tags=args.tags,
        # GPU pools are AgentPool resources; AKS reports them in agentPoolProfiles too, and the API cannot
        # update the inline pool in place.
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(ignore_changes=["agentPoolProfiles"])),
    )


def _maintenance(name: str, args: AksClusterArgs, cluster: azure.containerservice.ManagedCluster, config: str,
                 opts: pulumi.ResourceOptions) -> azure.containerservice.MaintenanceConfiguration:
    return azure.containerservice.MaintenanceConfiguration(
        name, config_name=config, resource_group_name=args.resource_group_name, resource_name_=cluster.name,
        maintenance_window={
            "schedule": {"weekly": {"day_of_week": MAINTENANCE["day_of_week"], "interval_weeks": 1}},
            "duration_hours": MAINTENANCE["duration_hours"], "start_time": MAINTENANCE["start_time"],
            "utc_offset": "+00:00"},
        opts=opts)


def kubeconfig(resource_group_name: pulumi.Input[str], cluster: azure.containerservice.ManagedCluster,
               opts: pulumi.ResourceOptions) -> pulumi.Output[str]:
    """The user kubeconfig in exec format: kubelogin signs in with Entra ID; no static credentials."""
    creds = azure.containerservice.list_managed_cluster_user_credentials_output(
        resource_group_name=resource_group_name, resource_name=cluster.name, format="exec",
        opts=pulumi.InvokeOutputOptions(parent=opts.parent, depends_on=[cluster]))
    return creds.kubeconfigs.apply(lambda k: base64.b64decode(k[0].value).decode())
