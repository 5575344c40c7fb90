"""Built-in Azure role assignments, each scoped to the one resource that needs it."""

from __future__ import annotations

import pulumi
import pulumi_azure_native as azure

# Built-in role definition ids (learn.microsoft.com/azure/role-based-access-control/built-in-roles).
NETWORK_CONTRIBUTOR = "4d97b98b-1d4f-4787-a291-c67834d212e7"
STORAGE_ACCOUNT_CONTRIBUTOR = "17d1049b-9a84-46fb-8f53-869881c3d3ab"
STORAGE_BLOB_DATA_CONTRIBUTOR = "ba92f5b4-2d11-453d-a403-e96b0029c9fe"
# Key Vault data-plane roles (vaults with Azure RBAC authorization), assignable on a vault or on one key:
KEY_VAULT_CRYPTO_USER = "12338af0-0e69-4776-bea7-57ae8d297424"  # encrypt / decrypt (AKS KMS)
KEY_VAULT_CRYPTO_SERVICE_ENCRYPTION_USER = "e147488a-f6f5-4113-8e2d-b22465e65bf6"  # get, wrap / unwrap (CMK)
# Management plane only, no key access; AKS KMS needs it on a private vault to add its own private endpoint.
KEY_VAULT_CONTRIBUTOR = "f25e0fa2-a7c8-4377-a976-54943a77a395"


def role_definition_id(subscription_id: pulumi.Input[str], role: str) -> pulumi.Output[str]:
    return pulumi.Output.concat("/subscriptions/", subscription_id,
                                "/providers/Microsoft.Authorization/roleDefinitions/", role)


def grant(name: str, *, scope: pulumi.Input[str], principal_id: pulumi.Input[str], role: str,
          subscription_id: pulumi.Input[str], description: str, opts: pulumi.ResourceOptions,
          condition: str | None = None) -> azure.authorization.RoleAssignment:
    """One role for one service principal on one scope (the assignment's GUID name is generated), optionally under
    an ABAC condition (syntax version 2.0, the only one)."""
    return azure.authorization.RoleAssignment(
        name, scope=scope, principal_id=principal_id, principal_type="ServicePrincipal",
        role_definition_id=role_definition_id(subscription_id, role), description=description,
        **({"condition": condition, "condition_version": "2.0"} if condition else {}), opts=opts)
