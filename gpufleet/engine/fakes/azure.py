"""FAKE Azure (azure-native) answers for the offline preview (see gpufleet/engine/fakes/__init__.py).

Ids are ARM resource ids built from the resource's own name inputs, as Azure would return them; a resource
whose name input is unset gets an autoname (logical name plus a stable suffix), as the provider would.
"""

from __future__ import annotations

import base64
from typing import Any

from pulumi.runtime import MockResourceArgs

from gpufleet.engine.fakes.base import Invoke, Outputs, hex_id

SUBSCRIPTION = "3f2a6b1c-9d4e-4f5a-8b7c-1d2e3f4a5b6c"
TENANT = "8e1d2c3b-4a59-4f6e-9d8c-7b6a5f4e3d2c"
DEFAULT_REGION = "eastus"
_RG = "/subscriptions/{sub}/resourceGroups/{resourceGroupName}"
_NET = _RG + "/providers/Microsoft.Network"
_AKS = _RG + "/providers/Microsoft.ContainerService/managedClusters"
_SA = _RG + "/providers/Microsoft.Storage/storageAccounts"
_AMLFS = _RG + "/providers/Microsoft.StorageCache/amlFilesystems"
_JOBS = _AMLFS + "/{amlFilesystemName}"
_BLOBS = _SA + "/{accountName}/blobServices"
_VAULTS = _RG + "/providers/Microsoft.KeyVault/vaults"

# type token -> (the input naming the resource, its ARM id with {name} and other inputs as placeholders)
ARM_IDS: dict[str, tuple[str, str]] = {
    "azure-native:resources:ResourceGroup": ("resourceGroupName", "/subscriptions/{sub}/resourceGroups/{name}"),
    "azure-native:network:VirtualNetwork": ("virtualNetworkName", _NET + "/virtualNetworks/{name}"),
    "azure-native:network:Subnet": ("subnetName", _NET + "/virtualNetworks/{virtualNetworkName}/subnets/{name}"),
    "azure-native:network:PublicIPAddress": ("publicIpAddressName", _NET + "/publicIPAddresses/{name}"),
    "azure-native:network:NatGateway": ("natGatewayName", _NET + "/natGateways/{name}"),
    "azure-native:network:PrivateEndpoint": ("privateEndpointName", _NET + "/privateEndpoints/{name}"),
    "azure-native:network:PrivateDnsZoneGroup": (
        "privateDnsZoneGroupName", _NET + "/privateEndpoints/{privateEndpointName}/privateDnsZoneGroups/{name}"),
    "azure-native:privatedns:PrivateZone": ("privateZoneName", _NET + "/privateDnsZones/{name}"),
    "azure-native:privatedns:VirtualNetworkLink": (
        "virtualNetworkLinkName", _NET + "/privateDnsZones/{privateZoneName}/virtualNetworkLinks/{name}"),
    "azure-native:managedidentity:UserAssignedIdentity": (
        "resourceName", _RG + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/{name}"),
    "azure-native:managedidentity:FederatedIdentityCredential": (
        "federatedIdentityCredentialResourceName",
        _RG + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/{resourceName}/federatedIdentityCredentials/"
              "{name}"),
    "azure-native:authorization:RoleAssignment": (
        "roleAssignmentName", "{scope}/providers/Microsoft.Authorization/roleAssignments/{name}"),
    "azure-native:containerservice:ManagedCluster": ("resourceName", _AKS + "/{name}"),
    "azure-native:containerservice:AgentPool": ("agentPoolName", _AKS + "/{resourceName}/agentPools/{name}"),
    "azure-native:containerservice:MaintenanceConfiguration": (
        "configName", _AKS + "/{resourceName}/maintenanceConfigurations/{name}"),
    "azure-native:storage:StorageAccount": ("accountName", _SA + "/{name}"),
    "azure-native:storage:BlobServiceProperties": ("blobServicesName", _BLOBS + "/{name}"),
    "azure-native:storage:ManagementPolicy": ("managementPolicyName", _SA + "/{accountName}/managementPolicies/{name}"),
    "azure-native:storage:BlobContainer": ("containerName", _BLOBS + "/default/containers/{name}"),
    "azure-native:storagecache:AmlFilesystem": ("amlFilesystemName", _AMLFS + "/{name}"),
    "azure-native:storagecache:AutoImportJob": ("autoImportJobName", _JOBS + "/autoImportJobs/{name}"),
    "azure-native:storagecache:AutoExportJob": ("autoExportJobName", _JOBS + "/autoExportJobs/{name}"),
    "azure-native:keyvault:Vault": ("vaultName", _VAULTS + "/{name}"),
    "azure-native:keyvault:Key": ("keyName", _VAULTS + "/{vaultName}/keys/{name}"),
    "azure-native:features:SubscriptionFeatureRegistration": (
        "featureName", "/subscriptions/{sub}/providers/Microsoft.Features/featureProviders/{providerNamespace}/"
        "subscriptionFeatureRegistrations/{name}"),
}


def _guid(seed: str) -> str:
    h = hex_id(seed, 32)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def identity_principal_id(logical_name: str) -> str:
    """The object id the fake gives the user-assigned identity of that Pulumi name."""
    return _guid(logical_name + "principal")


def service_principal_object_id(client_id: str) -> str:
    """The object id of a first-party application's service principal in the fake tenant."""
    return _guid(TENANT + client_id)


def arm_name(a: MockResourceArgs) -> str:
    """The resource's Azure name: its name input, else the provider's autoname (a GUID for role assignments)."""
    key, _ = ARM_IDS.get(a.typ, ("name", ""))
    if a.inputs.get(key):
        return str(a.inputs[key])
    if a.typ == "azure-native:authorization:RoleAssignment":
        return _guid(a.name)
    return f"{a.name}{hex_id(a.typ + a.name, 8)}"


def physical_id(a: MockResourceArgs) -> str | None:
    if a.typ not in ARM_IDS:
        return None
    fields = {k: v for k, v in a.inputs.items() if isinstance(v, str)}
    return ARM_IDS[a.typ][1].format(**{**fields, "sub": SUBSCRIPTION, "name": arm_name(a)})


def _location(inputs: dict[str, Any]) -> str:
    return str(inputs.get("location") or DEFAULT_REGION)


def _managed_cluster(a: MockResourceArgs, rid: str) -> dict[str, Any]:
    name, region, token = arm_name(a), _location(a.inputs), hex_id(a.name, 8)
    return {
        "name": name,
        "fqdn": f"{name}-{token}.hcp.{region}.azmk8s.io",
        "privateFQDN": f"{name}-{token}.{hex_id(a.name + 'dns', 32)}.privatelink.{region}.azmk8s.io",
        "oidcIssuerProfile": {"enabled": True, "issuerURL": f"https://{region}.oic.prod-aks.azure.com/{TENANT}/"
                                                            f"{_guid(a.name + 'oidc')}/"},
        "nodeResourceGroup": f"MC_{a.inputs.get('resourceGroupName', '')}_{name}_{region}",
        "identityProfile": {"kubeletidentity": {"clientId": _guid(a.name + "kc"), "objectId": _guid(a.name + "ko"),
                                                "resourceId": f"{rid}-agentpool"}},
        "provisioningState": "Succeeded",
        **_identity(a),
    }


def _identity(a: MockResourceArgs) -> dict[str, Any]:
    """Inputs list user-assigned identity ids; Azure answers with a map of id -> identity."""
    if "identity" not in a.inputs:
        return {}
    identity = a.inputs["identity"]
    return {"identity": {**identity, "userAssignedIdentities": {
        uid: {"clientId": _guid(uid + "client"), "principalId": _guid(uid + "principal")}
        for uid in identity.get("userAssignedIdentities", [])}}}


def _vault(a: MockResourceArgs, rid: str) -> dict[str, Any]:
    return {"name": arm_name(a), "properties": {**a.inputs.get("properties", {}),
                                                "vaultUri": f"https://{arm_name(a)}.vault.azure.net/",
                                                "provisioningState": "Succeeded"}}


def _key(a: MockResourceArgs, rid: str) -> dict[str, Any]:
    uri = f"https://{a.inputs.get('vaultName', '')}.vault.azure.net/keys/{arm_name(a)}"
    return {"name": arm_name(a), "keyUri": uri, "keyUriWithVersion": f"{uri}/{hex_id(a.name + 'version', 32)}"}


def _named(a: MockResourceArgs, rid: str) -> dict[str, Any]:
    return {"name": arm_name(a), "provisioningState": "Succeeded"}


OUTPUTS: dict[str, Outputs] = {
    **{token: _named for token in ARM_IDS},
    "azure-native:containerservice:ManagedCluster": _managed_cluster,
    "azure-native:managedidentity:UserAssignedIdentity": lambda a, rid: {
        "name": arm_name(a), "principalId": identity_principal_id(a.name), "clientId": _guid(a.name + "client"),
        "tenantId": TENANT},
    "azure-native:storage:StorageAccount": lambda a, rid: {
        "name": arm_name(a), "primaryEndpoints": {"blob": f"https://{arm_name(a)}.blob.core.windows.net/"},
        **_identity(a)},
    "azure-native:keyvault:Vault": _vault,
    "azure-native:keyvault:Key": _key,
    "azure-native:storagecache:AmlFilesystem": lambda a, rid: {
        "name": arm_name(a), "clientInfo": {"mgsAddress": "10.20.72.4", "mountCommand":
                                            "mount -t lustre -o noatime,flock 10.20.72.4@tcp:/lustrefs /lustre"},
        **_identity(a)},
}


# --- invokes --------------------------------------------------------------------------------------------

def _user_credentials(args: dict[str, Any]) -> dict[str, Any]:
    name = args["resourceName"]
    server = f"https://{name}-{hex_id(name, 8)}.privatelink.{DEFAULT_REGION}.azmk8s.io:443"
    kubeconfig = (f"apiVersion: v1\nkind: Config\ncurrent-context: {name}\nclusters:\n- name: {name}\n  cluster:\n"
                  f"    server: {server}\n    certificate-authority-data: RkFLRS1DQQ==\ncontexts:\n- name: {name}\n"
                  f"  context: {{cluster: {name}, user: clusterUser}}\nusers:\n- name: clusterUser\n  user:\n"
                  "    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: kubelogin\n"
                  "      args: [get-token, --login, azurecli, --server-id, 6dae42f8-4368-4678-94ff-3960e28e3630]\n")
    return {"kubeconfigs": [{"name": "clusterUser", "value": base64.b64encode(kubeconfig.encode()).decode()}]}


# First-party service principals present in every tenant, by application (client) id; their object ids differ
# per tenant, so the fake derives one from the tenant.
FIRST_PARTY_APPS = {"4392ab71-2ce2-4b0d-8770-b352745c73f5": "HPC Cache Resource Provider"}
MICROSOFT_SERVICES_TENANT = "f8cdef31-a31e-4b4a-93e4-5f571e91255a"  # where first-party applications live


def _service_principal(args: dict[str, Any]) -> dict[str, Any]:
    """azuread getServicePrincipal by client id: only the first-party applications above exist here."""
    client_id = args.get("clientId")
    if client_id not in FIRST_PARTY_APPS:
        raise LookupError(f"the fake tenant has no service principal for application {client_id!r} (known: "
                          f"{', '.join(FIRST_PARTY_APPS)}); add it to FIRST_PARTY_APPS in "
                          "gpufleet/engine/fakes/azure.py")
    object_id = service_principal_object_id(client_id)
    return {"id": object_id, "objectId": object_id, "clientId": client_id, "displayName": FIRST_PARTY_APPS[client_id],
            "accountEnabled": True, "applicationTenantId": MICROSOFT_SERVICES_TENANT, "type": "Application",
            "appRoleAssignmentRequired": False, "servicePrincipalNames": [client_id],
            "signInAudience": "AzureADMultipleOrgs",
            "appRoles": [], "appRoleIds": {}, "oauth2PermissionScopes": [], "oauth2PermissionScopeIds": {},
            "alternativeNames": [], "featureTags": [], "features": [], "notificationEmailAddresses": [],
            "redirectUris": [], "samlSingleSignOns": [], "tags": [], "description": "", "notes": "",
            "homepageUrl": "", "loginUrl": "", "logoutUrl": "", "preferredSingleSignOnMode": "", "samlMetadataUrl": ""}


INVOKES: dict[str, Invoke] = {
    "azure-native:authorization:getClientConfig": lambda a: {
        "clientId": _guid("gpufleet-preview-client"), "objectId": _guid("gpufleet-preview-object"),
        "subscriptionId": SUBSCRIPTION, "tenantId": TENANT},
    "azure-native:containerservice:listManagedClusterUserCredentials": _user_credentials,
    "azuread:index/getServicePrincipal:getServicePrincipal": _service_principal,
}
