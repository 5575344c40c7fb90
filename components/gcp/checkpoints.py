"""The checkpoint tools' GCP identity: GKE Workload Identity for the tools' Kubernetes ServiceAccount, granted object
access on the checkpoint bucket and nothing else.

The ServiceAccount is a principal of its own (no Google service account, no annotation): IAM names it
``principal://iam.googleapis.com/projects/<number>/locations/global/workloadIdentityPools/<project>.svc.id.goog/subject/
ns/<namespace>/sa/<name>`` (https://cloud.google.com/kubernetes-engine/docs/how-to/workload-identity). rclone's gcs
remote with env_auth takes ``google.DefaultClient`` (backend/googlecloudstorage at the rclone pin), which reads the GKE
metadata server the node pools run (``workload_metadata_config: GKE_METADATA``). The bucket is CMEK-encrypted by the
Cloud Storage service agent (``components.gcp.kms``), so the tools need no key role."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from components import checkpoint_tools
from components.gcp.storage import AGENT_ROLE

ROLE = AGENT_ROLE  # roles/storage.objectUser: create, read, update, delete and list objects; no IAM, no bucket admin


def principal(project_number: str, project: str) -> str:
    return (f"principal://iam.googleapis.com/projects/{project_number}/locations/global/workloadIdentityPools/"
            f"{project}.svc.id.goog/subject/ns/{checkpoint_tools.NAMESPACE}/sa/{checkpoint_tools.SERVICE_ACCOUNT}")


def grant_bucket(name: str, bucket: pulumi.Input[str], project_number: pulumi.Input[str],
                 project: pulumi.Input[str], opts: pulumi.ResourceOptions) -> gcp.storage.BucketIAMMember:
    return gcp.storage.BucketIAMMember(f"{name}-checkpoint-tools", bucket=bucket, role=ROLE, member=pulumi.Output.all(
        project_number, project).apply(lambda a: principal(str(a[0]), str(a[1]))), opts=opts)
