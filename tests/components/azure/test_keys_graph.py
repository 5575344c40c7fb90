"""Customer-managed keys and the Managed Lustre storage grants on the captured azure-train graph: a hardened private
vault, one rotating key per use wired into AKS KMS / storage / Lustre, and every role scoped to one key, one vault
or one storage account."""

from __future__ import annotations

import pytest

from gpufleet.engine.capture import Graph, Resource, run_program
from gpufleet.engine.fakes.azure import TENANT, identity_principal_id, service_principal_object_id
from stacks.config import CONFIG_KEY
from tests.conftest import Capture, example_fleet, of_type, one

KEYS = "train-keys"
# Expected values typed in from the documentation, never imported from the code under test.
# Built-in role definition ids: https://learn.microsoft.com/azure/role-based-access-control/built-in-roles
STORAGE_ACCOUNT_CONTRIBUTOR = "17d1049b-9a84-46fb-8f53-869881c3d3ab"
STORAGE_BLOB_DATA_CONTRIBUTOR = "ba92f5b4-2d11-453d-a403-e96b0029c9fe"
KEY_VAULT_CRYPTO_USER = "12338af0-0e69-4776-bea7-57ae8d297424"
KEY_VAULT_CRYPTO_SERVICE_ENCRYPTION_USER = "e147488a-f6f5-4113-8e2d-b22465e65bf6"
KEY_VAULT_CONTRIBUTOR = "f25e0fa2-a7c8-4377-a976-54943a77a395"
# The "HPC Cache Resource Provider" application Managed Lustre's blob integration runs as:
# https://learn.microsoft.com/azure/azure-managed-lustre/amlfs-prerequisites
HPC_CACHE_RP_APP_ID = "4392ab71-2ce2-4b0d-8770-b352745c73f5"
# AKS KMS etcd encryption takes RSA keys of 2048 bits (https://learn.microsoft.com/azure/aks/use-kms-etcd-encryption);
# ISO 8601 "P1Y": Key Vault rotates a year after creation (the project's documented choice, components/azure/keys.py)
KEY_SIZE_BITS, ROTATE_AFTER = 2048, "P1Y"


@pytest.fixture(scope="module")
def example() -> Graph:
    return run_program("azure-train", {CONFIG_KEY: example_fleet("azure-train")})


def _vault(graph: Graph) -> Resource:
    return one(graph, "keyvault:Vault", f"{KEYS}-vault")


def _vault_id(graph: Graph) -> str:
    vault = _vault(graph)
    return (f"/subscriptions/3f2a6b1c-9d4e-4f5a-8b7c-1d2e3f4a5b6c/resourceGroups/{vault.inputs['resourceGroupName']}"
            f"/providers/Microsoft.KeyVault/vaults/{vault.inputs['vaultName']}")


def _vault_uri(graph: Graph) -> str:
    return f"https://{_vault(graph).inputs['vaultName']}.vault.azure.net/"


def _role(assignment: Resource) -> str:
    return assignment.inputs["roleDefinitionId"].rsplit("/", 1)[-1]


def test_vault_is_private_rbac_only_and_purge_protected(example: Graph) -> None:
    props = _vault(example).inputs["properties"]
    assert props["tenantId"] == TENANT and props["sku"] == {"family": "A", "name": "standard"}
    assert props["enableRbacAuthorization"] is True
    assert (props["enableSoftDelete"], props["softDeleteRetentionInDays"], props["enablePurgeProtection"]) == (
        True, 90, True)
    assert props["publicNetworkAccess"] == "Disabled"
    assert props["networkAcls"] == {"defaultAction": "Deny", "bypass": "AzureServices", "ipRules": [],
                                    "virtualNetworkRules": []}
    assert not any(props[k] for k in ("enabledForDeployment", "enabledForDiskEncryption",
                                      "enabledForTemplateDeployment"))
    assert "accessPolicies" not in props
    assert len(_vault(example).inputs["vaultName"]) <= 24


def test_vault_is_reached_through_a_private_endpoint(example: Graph) -> None:
    endpoint = one(example, "PrivateEndpoint", f"{KEYS}-vault-pe").inputs
    assert endpoint["privateLinkServiceConnections"] == [
        {"name": "vault", "privateLinkServiceId": _vault_id(example), "groupIds": ["vault"]}]
    assert "/subnets/train-net-endpoints" in endpoint["subnet"]["id"]
    zone = one(example, "PrivateZone", f"{KEYS}-vault-dns").inputs
    assert zone["privateZoneName"] == "privatelink.vaultcore.azure.net"
    group = one(example, "PrivateDnsZoneGroup", f"{KEYS}-vault-pe-dns").inputs
    assert group["privateDnsZoneConfigs"][0]["privateDnsZoneId"].endswith("/privateDnsZones/privatelink.vaultcore"
                                                                          ".azure.net")


@pytest.mark.parametrize(("use", "operations"), [("aks-kms", ["encrypt", "decrypt"]),
                                                 ("storage", ["wrapKey", "unwrapKey"]),
                                                 ("lustre", ["wrapKey", "unwrapKey"])])
def test_one_rotating_key_per_use(example: Graph, use: str, operations: list[str]) -> None:
    key = one(example, "keyvault:Key", f"{KEYS}-{use}").inputs
    assert (key["keyName"], key["vaultName"]) == (use, _vault(example).inputs["vaultName"])
    props = key["properties"]
    assert (props["kty"], props["keySize"], props["keyOps"]) == ("RSA", KEY_SIZE_BITS, operations)
    actions = {a["action"]["type"]: a["trigger"] for a in props["rotationPolicy"]["lifetimeActions"]}
    assert actions["rotate"] == {"timeAfterCreate": ROTATE_AFTER}
    assert "timeBeforeExpiry" in actions["notify"]
    assert props["attributes"] == {"enabled": True, "exportable": False}


def test_aks_encrypts_secrets_with_its_key_in_the_private_vault(example: Graph) -> None:
    aks = one(example, "ManagedCluster", "train-aks").inputs
    kms = aks["securityProfile"]["azureKeyVaultKms"]
    assert kms["enabled"] is True
    assert kms["keyId"].startswith(_vault_uri(example) + "keys/aks-kms/")  # versioned, as AKS requires
    assert (kms["keyVaultNetworkAccess"], kms["keyVaultResourceId"]) == ("Private", _vault_id(example))
    # a private vault needs API server VNet integration, in a subnet delegated to AKS
    access = aks["apiServerAccessProfile"]
    assert access["enableVnetIntegration"] is True
    subnet = one(example, "Subnet", "train-net-apiserver").inputs
    assert "/subnets/train-net-apiserver" in access["subnetId"]
    assert subnet["delegations"] == [{"name": "aks-apiserver",
                                      "serviceName": "Microsoft.ContainerService/managedClusters"}]
    assert subnet["addressPrefix"] == "10.20.65.0/28"


def test_aks_identity_holds_the_kms_roles_before_the_cluster(example: Graph) -> None:
    principal = identity_principal_id("train-identity")
    key_user = one(example, "RoleAssignment", "train-kms-key-user").inputs
    assert (_role(one(example, "RoleAssignment", "train-kms-key-user")), key_user["principalId"]) == (
        KEY_VAULT_CRYPTO_USER, principal)
    assert key_user["scope"] == _vault_id(example) + "/keys/aks-kms"  # the key, not the vault
    private_link = one(example, "RoleAssignment", "train-kms-private-link")
    assert (_role(private_link), private_link.inputs["scope"]) == (KEY_VAULT_CONTRIBUTOR, _vault_id(example))
    api = one(example, "RoleAssignment", "train-apiserver-subnet-join").inputs
    assert api["scope"] == one(example, "ManagedCluster", "train-aks").inputs["apiServerAccessProfile"]["subnetId"]
    cluster = one(example, "ManagedCluster", "train-aks")
    for name in ("train-kms-key-user", "train-kms-private-link", "train-apiserver-subnet-join",
                 "train-subnet-join"):
        assert f"azure-native:authorization:RoleAssignment::{name}" in cluster.dependencies


def test_storage_account_encrypts_with_its_key_and_identity(example: Graph) -> None:
    account = one(example, "StorageAccount", "train-checkpoints-account")
    encryption = account.inputs["encryption"]
    assert encryption["keySource"] == "Microsoft.Keyvault"
    assert encryption["keyVaultProperties"] == {"keyName": "storage", "keyVaultUri": _vault_uri(example)}
    identity_id = encryption["encryptionIdentity"]["encryptionUserAssignedIdentity"]
    assert "/userAssignedIdentities/train-keys-storage-identity" in identity_id
    assert account.inputs["identity"] == {"type": "UserAssigned", "userAssignedIdentities": [identity_id]}
    assert encryption["requireInfrastructureEncryption"] is True
    assert "azure-native:authorization:RoleAssignment::train-keys-storage-key-user" in account.dependencies


def test_lustre_encrypts_with_its_key_and_identity(example: Graph) -> None:
    fs = one(example, "AmlFilesystem", "train-lustre-amlfs")
    kek = fs.inputs["encryptionSettings"]["keyEncryptionKey"]
    assert kek["keyUrl"].startswith(_vault_uri(example) + "keys/lustre/")
    assert kek["sourceVault"] == {"id": _vault_id(example)}
    (identity_id,) = fs.inputs["identity"]["userAssignedIdentities"]
    assert fs.inputs["identity"]["type"] == "UserAssigned"
    assert "/userAssignedIdentities/train-keys-lustre-identity" in identity_id
    assert "azure-native:authorization:RoleAssignment::train-keys-lustre-key-user" in fs.dependencies


@pytest.mark.parametrize("use", ["storage", "lustre"])
def test_service_identities_unwrap_only_their_own_key(example: Graph, use: str) -> None:
    assignment = one(example, "RoleAssignment", f"{KEYS}-{use}-key-user")
    assert _role(assignment) == KEY_VAULT_CRYPTO_SERVICE_ENCRYPTION_USER
    assert assignment.inputs["scope"] == f"{_vault_id(example)}/keys/{use}"
    assert assignment.inputs["principalId"] == identity_principal_id(f"{KEYS}-{use}-identity")
    assert assignment.inputs["principalType"] == "ServicePrincipal"


def test_no_key_vault_data_role_is_granted_on_the_whole_vault(example: Graph) -> None:
    data_roles = {KEY_VAULT_CRYPTO_USER, KEY_VAULT_CRYPTO_SERVICE_ENCRYPTION_USER}
    on_keys = [r for r in of_type(example, "RoleAssignment") if _role(r) in data_roles]
    assert len(on_keys) == 3
    assert all("/keys/" in r.inputs["scope"] for r in on_keys)


def test_hpc_cache_resource_provider_is_looked_up_and_granted(example: Graph) -> None:
    """deploy() finds the tenant's HPC Cache Resource Provider by its application id (explicit azuread provider)
    and grants it both storage roles on the linked account before the file system is created."""
    assert one(example, "providers:azuread", "train-azuread")
    principal = service_principal_object_id(HPC_CACHE_RP_APP_ID)
    grants = {r.name: r for r in of_type(example, "RoleAssignment") if r.name.startswith("train-lustre")}
    assert sorted(_role(r) for r in grants.values()) == sorted([STORAGE_ACCOUNT_CONTRIBUTOR,
                                                                STORAGE_BLOB_DATA_CONTRIBUTOR])
    account = one(example, "StorageAccount", "train-checkpoints-account").inputs["accountName"]
    for r in grants.values():
        assert (r.inputs["principalId"], r.inputs["principalType"]) == (principal, "ServicePrincipal")
        assert r.inputs["scope"].endswith(f"/storageAccounts/{account}")
        assert r.key in one(example, "AmlFilesystem", "train-lustre-amlfs").dependencies


def test_cluster_without_lustre_has_no_lustre_key_and_no_azuread(capture: Capture) -> None:
    fleet = example_fleet("azure-train")
    fleet["clusters"][0]["storage"].pop("lustre")
    graph = capture(fleet)
    assert sorted(k.inputs["keyName"] for k in of_type(graph, "keyvault:Key")) == ["aks-kms", "storage"]
    assert not of_type(graph, "providers:azuread")
    assert not [r for r in of_type(graph, "RoleAssignment") if r.name.startswith("train-lustre")]


def test_cluster_without_storage_still_encrypts_its_secrets(capture: Capture) -> None:
    fleet = example_fleet("azure-train")
    fleet["clusters"][0]["storage"] = {}
    graph = capture(fleet)
    assert [k.inputs["keyName"] for k in of_type(graph, "keyvault:Key")] == ["aks-kms"]
    # only the control plane's (and the fleet queue manager's, a worker's identity for it)
    assert not [r for r in of_type(graph, "managedidentity:UserAssignedIdentity") if "multikueue" not in r.name][1:]
    kms = one(graph, "ManagedCluster", "train-aks").inputs["securityProfile"]["azureKeyVaultKms"]
    assert kms["enabled"] is True
