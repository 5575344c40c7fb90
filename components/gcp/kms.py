"""Customer-managed encryption: one regional Cloud KMS key ring per cluster and a key per purpose, each usable only
by the Google service agent that encrypts with it (GKE for etcd secrets, Compute Engine for node boot disks,
Cloud Storage for buckets; Managed Lustre's agent is granted the data key where its instance is built)."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

ROTATION = "7776000s"  # 90 days
ENCRYPTER = "roles/cloudkms.cryptoKeyEncrypterDecrypter"
# purpose -> the service agents (by their email domain) that use the key
AGENTS = {"secrets": ("container-engine-robot",), "disks": ("compute-system",), "data": ("gs-project-accounts",)}


def agent_member(project_number: pulumi.Input[str], domain: str) -> pulumi.Output[str]:
    return pulumi.Output.concat("serviceAccount:service-", project_number, f"@{domain}.iam.gserviceaccount.com")


@dataclass(frozen=True)
class KeysArgs:
    cluster_name: str
    region: str
    project: pulumi.Input[str]
    labels: dict[str, str]
    data: bool  # a data key for buckets and Lustre is needed


class ClusterKeys(pulumi.ComponentResource):
    """``key(purpose)`` is the key id; ``grants`` are the IAM members a user of the keys must wait for."""

    def __init__(self, name: str, args: KeysArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:gcp:ClusterKeys", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        number = gcp.organizations.get_project_output(
            project_id=args.project, opts=pulumi.InvokeOptions(parent=self)).number
        self.project_number = number
        ring = gcp.kms.KeyRing(f"{name}-ring", location=args.region, opts=child)
        self.keys: dict[str, gcp.kms.CryptoKey] = {}
        self.grants: dict[str, list[gcp.kms.CryptoKeyIAMMember]] = {}
        for purpose, domains in AGENTS.items():
            if purpose == "data" and not args.data:
                continue
            key = gcp.kms.CryptoKey(f"{name}-{purpose}", key_ring=ring.id, purpose="ENCRYPT_DECRYPT",
                                    rotation_period=ROTATION, labels=args.labels,
                                    opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(protect=True)))
            self.keys[purpose] = key
            self.grants[purpose] = [
                gcp.kms.CryptoKeyIAMMember(f"{name}-{purpose}-{domain}", crypto_key_id=key.id, role=ENCRYPTER,
                                           member=agent_member(number, domain), opts=child)
                for domain in domains]
        self.register_outputs({"keys": {p: k.id for p, k in self.keys.items()}})

    def key(self, purpose: str) -> pulumi.Output[str]:
        return self.keys[purpose].id

    def ready(self, purpose: str) -> list[pulumi.Resource]:
        """What a resource encrypted with the key must wait for: its service agents' access."""
        return list(self.grants[purpose])
