"""Azure Managed Lustre (AMLFS) linked to a checkpoint container through HSM settings, its data encrypted with a
customer-managed key that a user-assigned identity unwraps.

Blob integration runs one job at a time per file system, and auto-import reads the storage account's blob change
feed (kept at least 7 days): https://learn.microsoft.com/azure/azure-managed-lustre/auto-import and
https://learn.microsoft.com/azure/azure-managed-lustre/blob-integration. So the one standing job is the
auto-import of the *datasets* prefix (new data lands in Lustre by itself; the storage component turns the change
feed on), and checkpoints go back to blob through an on-demand export job (``export_command``, a stack output):
it pauses auto-import, archives the export prefix, waits, and resumes auto-import.

AMLFS reaches the container as the tenant's "HPC Cache Resource Provider" service principal, which needs
Storage Account Contributor and Storage Blob Data Contributor on the account before the file system is
created. Its object id differs per tenant; its application (client) id does not, so ``hpc_cache_principal_id``
looks it up in Entra ID (pulumi-azuread) and this component grants both roles. Built without a principal id,
the preview warns with the exact commands to run first."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_azure_native as azure
import pulumi_azuread as azuread

from components.azure.keys import KeyRef
from components.azure.roles import STORAGE_ACCOUNT_CONTRIBUTOR, STORAGE_BLOB_DATA_CONTRIBUTOR, grant
from components.spec import LustreSpec

HPC_CACHE_RP = "HPC Cache Resource Provider"
# The first-party application behind it, the same in every tenant (`az ad sp show --id <it>`).
HPC_CACHE_RP_APP_ID = "4392ab71-2ce2-4b0d-8770-b352745c73f5"
AUTO_IMPORT_JOB = "datasets-in"
MAINTENANCE = {"day_of_week": "Sunday", "time_of_day_utc": "02:00"}  # same window as the AKS upgrades


def sku_name(throughput_mbps_per_tib: int) -> str:
    """AMLFS SKUs are named by throughput tier: AMLFS-Durable-Premium-40/125/250/500."""
    return f"AMLFS-Durable-Premium-{throughput_mbps_per_tib}"


def lustre_path(path: str) -> str:
    """A neutral 'checkpoints/' prefix as AMLFS writes it: '/checkpoints'."""
    return "/" + path.strip("/")


@dataclass(frozen=True)
class LustreArgs:
    spec: LustreSpec
    file_system_name: str
    resource_group_name: pulumi.Input[str]
    location: str
    zone: str
    subnet_id: pulumi.Input[str]
    account_id: pulumi.Input[str]
    container_id: pulumi.Input[str]
    logs_container_id: pulumi.Input[str]
    subscription_id: pulumi.Input[str]
    storage_principal_id: pulumi.Input[str] | None  # the tenant's HPC Cache Resource Provider object id
    key: KeyRef  # the customer-managed key and the identity that unwraps it
    tags: dict[str, str]


class ManagedLustre(pulumi.ComponentResource):
    def __init__(self, name: str, args: LustreArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:azure:ManagedLustre", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        roles = _storage_roles(name, args, child)
        spec = args.spec
        imports = [lustre_path(spec.import_path), lustre_path(spec.export_path)]
        self.file_system = azure.storagecache.AmlFilesystem(
            f"{name}-amlfs",
            aml_filesystem_name=args.file_system_name,
            resource_group_name=args.resource_group_name,
            location=args.location,
            sku={"name": sku_name(spec.throughput_mbps_per_tib)},
            storage_capacity_ti_b=spec.capacity_tib,
            zones=[args.zone],
            filesystem_subnet=args.subnet_id,
            maintenance_window=MAINTENANCE,
            hsm={"settings": {"container": args.container_id, "logging_container": args.logs_container_id,
                              "import_prefixes_initial": imports}},
            identity={"type": "UserAssigned", "user_assigned_identities": [args.key.identity_id]},
            encryption_settings=encryption_settings(args.key),
            tags=args.tags,
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(
                depends_on=[*roles, *args.key.grants])),
        )
        job = {"aml_filesystem_name": self.file_system.name, "resource_group_name": args.resource_group_name,
               "location": args.location, "tags": args.tags}
        self.auto_import = azure.storagecache.AutoImportJob(
            f"{name}-auto-import", auto_import_job_name=AUTO_IMPORT_JOB,
            auto_import_prefixes=[lustre_path(spec.import_path)],
            admin_status="Enable", conflict_resolution_mode="Skip", enable_deletions=False, **job, opts=child)
        self.export_command = pulumi.Output.all(args.resource_group_name, self.file_system.name).apply(
            lambda a: export_command(a[0], a[1], lustre_path(spec.export_path)))
        self.mgs_address = self.file_system.client_info.apply(lambda c: c.mgs_address if c else None)
        self.register_outputs({"file_system_id": self.file_system.id, "mgs_address": self.mgs_address})


def export_command(resource_group: str, file_system: str, prefix: str) -> str:
    """Checkpoints back to blob while no other blob-integration job runs: pause auto-import, archive the export
    prefix (AmlFilesystems_Archive), wait until the archive leaves Active, resume auto-import."""
    fs = f"--resource-group {resource_group} --aml-filesystem-name {file_system}"
    toggle = f"az amlfs auto-import update {fs} --auto-import-job-name {AUTO_IMPORT_JOB} --admin-status"
    state = (f"az amlfs show --resource-group {resource_group} --name {file_system} "
             "--query 'hsm.archiveStatus[0].status.state' -o tsv")
    return (f"{toggle} Disable && az amlfs archive --resource-group {resource_group} --amlfs-name {file_system} "
            f"--filesystem-path {prefix} && while [ \"$({state})\" = Active ]; do sleep 60; done; {toggle} Enable")


def encryption_settings(key: KeyRef) -> dict:
    """The key encryption key, by versioned URL and vault; the file system's user-assigned identity unwraps it."""
    return {"key_encryption_key": {"key_url": key.key_url, "source_vault": {"id": key.vault_id}}}


def hpc_cache_principal_id(provider: azuread.Provider) -> pulumi.Output[str]:
    """The object id of this tenant's HPC Cache Resource Provider service principal, looked up by its
    application id (reading service principals needs Application.Read.All when Pulumi signs in as one)."""
    principal = azuread.get_service_principal_output(
        client_id=HPC_CACHE_RP_APP_ID, opts=pulumi.InvokeOutputOptions(provider=provider))
    return principal.object_id


def _storage_roles(name: str, args: LustreArgs, opts: pulumi.ResourceOptions) -> list[pulumi.Resource]:
    roles = ((STORAGE_ACCOUNT_CONTRIBUTOR, "account", "Storage Account Contributor"),
             (STORAGE_BLOB_DATA_CONTRIBUTOR, "blob-data", "Storage Blob Data Contributor"))
    if args.storage_principal_id is None:
        pulumi.log.warn(
            f"{name}: Managed Lustre needs the '{HPC_CACHE_RP}' service principal to hold "
            f"{' and '.join(r[2] for r in roles)} on the checkpoint storage account before `pulumi up`, and "
            "its object id cannot be looked up here. Run once per account: "
            f"id=$(az ad sp list --display-name '{HPC_CACHE_RP}' --query '[0].id' -o tsv); "
            + "; ".join(f"az role assignment create --assignee-object-id $id --assignee-principal-type "
                        f"ServicePrincipal --role '{r[2]}' --scope <storage account id>" for r in roles))
        return []
    return [grant(f"{name}-{suffix}", scope=args.account_id, principal_id=args.storage_principal_id, role=role,
                  subscription_id=args.subscription_id, description=f"AMLFS blob integration ({label})", opts=opts)
            for role, suffix, label in roles]
