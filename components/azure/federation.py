"""Entra workload identity federation: a user-assigned identity that trusts one Kubernetes ServiceAccount's tokens
from one cluster's OIDC issuer, with Entra's token-exchange audience (azure-workload-identity's DefaultAudience)."""

from __future__ import annotations

import pulumi
import pulumi_azure_native as azure

from components.k8s.checkpoints import webhook_constant


def audience() -> str:
    """api://AzureADTokenExchange: the audience Entra accepts in a federated token (the webhook's DefaultAudience)."""
    return webhook_constant("DefaultAudience")


def federate(name: str, *, identity: azure.managedidentity.UserAssignedIdentity,
             resource_group_name: pulumi.Input[str], credential_name: str, issuer: pulumi.Input[str], subject: str,
             opts: pulumi.ResourceOptions) -> azure.managedidentity.FederatedIdentityCredential:
    """``identity`` trusts ``subject``'s tokens from ``issuer``: one credential of the identity's."""
    return azure.managedidentity.FederatedIdentityCredential(
        name, resource_group_name=resource_group_name, resource_name_=identity.name,
        federated_identity_credential_resource_name=credential_name, issuer=issuer, subject=subject,
        audiences=[audience()], opts=opts)
