"""Peers' checkpoint tools into a GKE worker's checkpoint bucket (docs/fleet-queue.md "Recovery across clusters"):
per peer, a workload identity pool whose OIDC provider trusts the peer cluster's issuer for the peer's
checkpoint-tools ServiceAccount alone (attribute condition on the token's subject, and the audience pinned), and
for that pool's principal (no Google service account: the federated identity is granted on the bucket directly,
https://cloud.google.com/iam/docs/workload-identity-federation-with-kubernetes) Storage Object User on the bucket
under an IAM condition: objects whose name is under the export prefix (``resource.name`` of an object is
``projects/_/buckets/<bucket>/objects/<name>``), or the bucket itself, against which Cloud Storage checks listing
(so the names of other objects are listed, never read or written). The bucket has uniform bucket-level access,
which IAM conditions need; it is CMEK-encrypted by the Cloud Storage service agent, so no key role."""

from __future__ import annotations

import hashlib
from typing import Any

import pulumi
import pulumi_gcp as gcp

from components import checkpoint_tools
from components.catalog import Cloud
from components.fleet import Cluster
from components.gcp.checkpoints import ROLE
from components.k8s.replicate import audience
from components.replicas import Source, collect, prefix, when_known

PROVIDER_ID = "checkpoint-tools"


def pool_id(worker: str, source: str) -> str:
    """One pool per (this worker, peer): every peer's subject is the same, and pool ids are unique per project,
    which other workers may share. 4-32 characters, lower case: a digest of both names, then the peer's."""
    digest = hashlib.sha256(f"{worker}<{source}".encode()).hexdigest()[:8]
    return f"ckpt-{digest}-{source}"[:32].rstrip("-")


def condition(bucket: str, under: str) -> str:
    return (f'resource.type == "storage.googleapis.com/Bucket" || '
            f'resource.name.startsWith("projects/_/buckets/{bucket}/objects/{under}")')


def _trust(name: str, source: Source, cluster: Cluster, project: Any, project_number: Any, bucket: Any,
           opts: pulumi.ResourceOptions) -> pulumi.Output[Any]:
    under, subject, worker = prefix(cluster), checkpoint_tools.subject(), f"{pulumi.get_stack()}-{cluster.name}"

    def build(issuer: str) -> pulumi.Output[Any]:
        pool = gcp.iam.WorkloadIdentityPool(f"{name}-{source.name}",
                                            workload_identity_pool_id=pool_id(worker, source.name),
                                            project=project, display_name=f"gpufleet checkpoints {source.name}"[:32],
                                            opts=opts)
        provider = gcp.iam.WorkloadIdentityPoolProvider(
            f"{name}-{source.name}", project=project, workload_identity_pool_id=pool.workload_identity_pool_id,
            workload_identity_pool_provider_id=PROVIDER_ID, attribute_mapping={"google.subject": "assertion.sub"},
            attribute_condition=f"assertion.sub == '{subject}'",
            oidc={"issuer_uri": issuer,
                  "allowed_audiences": [audience(Cloud.GCP, cluster.account, cluster.name)]}, opts=opts)
        gcp.storage.BucketIAMMember(
            f"{name}-{source.name}", bucket=bucket, role=ROLE,
            member=pulumi.Output.concat("principal://iam.googleapis.com/projects/", project_number,
                                        "/locations/global/workloadIdentityPools/", pool.workload_identity_pool_id,
                                        f"/subject/{subject}"),
            condition={"title": f"{under} only", "description": f"{source.name}'s checkpoint tools",
                       "expression": pulumi.Output.from_input(bucket).apply(lambda b: condition(b, under))},
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[provider])))
        return provider.name.apply(lambda n: {"provider": n})
    return when_known(source, build)


def trust_peers(cluster: Cluster, built: Any, sources: list[Source]) -> pulumi.Output[Any]:
    assert cluster.spec.storage.lustre is not None
    bucket = built.buckets[cluster.spec.storage.lustre.bucket].bucket_name
    opts, name = pulumi.ResourceOptions(parent=built), f"{cluster.name}-checkpoint-peer"
    identities = {s.name: _trust(name, s, cluster, built.project, built.keys.project_number, bucket, opts)
                  for s in sources}
    return collect({"bucket": bucket, "region": cluster.spec.region}, identities)
