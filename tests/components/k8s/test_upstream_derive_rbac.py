"""The RBAC and MultiKueue-adapter derivations (scripts/refresh_upstream.py), on small upstream-shaped inputs with
facts worked out by hand."""

from __future__ import annotations

import pytest

from components.k8s.upstream.derive_go import remote_verbs
from components.k8s.upstream.derive_manifests import cluster_roles

SCRIPT = """#!/bin/bash
set -o errexit
SA=multikueue-sa
kubectl apply -f - <<EOF
apiVersion: v1
kind: ServiceAccount
metadata:
  name: ${SA}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: ${SA}-role
rules:
- apiGroups: [batch]
  resources: [jobs]
  verbs: [watch, create, get]
EOF

kubectl apply -f - <<EOF
apiVersion: v1
kind: Secret
metadata:
  name: x
EOF
"""


def test_cluster_roles_are_read_from_a_scripts_kubectl_heredocs_with_verbs_sorted() -> None:
    assert cluster_roles(SCRIPT) == {"${SA}-role": [{"apiGroups": ["batch"], "resources": ["jobs"],
                                                     "verbs": ["create", "get", "watch"]}]}


def test_cluster_roles_of_a_plain_manifest_and_a_file_without_one() -> None:
    text = "kind: ClusterRole\nmetadata: {name: r}\nrules:\n- apiGroups: ['']\n  resources: [pods]\n  verbs: [get]\n"
    assert cluster_roles(text) == {"r": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}
    with pytest.raises(KeyError):
        cluster_roles("kind: Role\nmetadata: {name: r}\n")


ADAPTER = """
func (b *multiKueueAdapter) SyncJob(ctx context.Context, localClient client.Client, remoteClient client.Client) error {
	err = remoteClient.Get(ctx, key, &remoteJob)
	return remoteClient.Create(ctx, &remoteJob)
}
func (b *multiKueueAdapter) DeleteRemoteObject(ctx context.Context, remoteClient client.Client) error {
	return client.IgnoreNotFound(remoteClient.Delete(ctx, &job))
}
var _ jobframework.MultiKueueWatcher = (*multiKueueAdapter)(nil)
"""


def test_remote_verbs_are_the_worker_client_calls_plus_list_and_watch_for_a_watcher() -> None:
    assert remote_verbs(ADAPTER, ["batch/job"]) == {"frameworks": ["batch/job"],
                                                   "verbs": ["create", "delete", "get", "list", "watch"]}
    no_watch = ADAPTER.replace("jobframework.MultiKueueWatcher", "jobframework.MultiKueueAdapter")
    assert remote_verbs(no_watch, ["x/y"])["verbs"] == ["create", "delete", "get"]
    with pytest.raises(KeyError):
        remote_verbs("err := localClient.Get(ctx, key, &job)", ["x/y"])
