"""The stack's Lustre file system reaches every team namespace as a ReadWriteMany claim through the cloud's driver."""

from __future__ import annotations

import pytest

from components.k8s import probe
from components.k8s.storage import csi_driver
from gpufleet.engine.capture import UNKNOWN_MASK, Graph
from tests.components.k8s.conftest import STACKS, clusters
from tests.conftest import of_type


@pytest.mark.parametrize("stack", STACKS)
def test_lustre_claims_bind_to_the_stacks_file_system(graphs: dict[str, Graph], stack: str) -> None:
    [cluster] = clusters(stack)
    volumes = {r.inputs["metadata"]["name"]: r.inputs["spec"]
               for r in of_type(graphs[stack], "core/v1:PersistentVolume")}
    claims = {r.inputs["metadata"]["namespace"]: r.inputs["spec"]
              for r in of_type(graphs[stack], "core/v1:PersistentVolumeClaim")}
    if cluster.spec.storage.lustre is None:
        assert not volumes and not claims
        return
    probe_ns = {probe.NAMESPACE} if cluster.spec.addons.monitoring else set()  # the checkpoint probe's claim
    assert set(claims) == {t.name for t in cluster.spec.addons.kueue_teams} | probe_ns
    for namespace, claim in claims.items():
        volume = volumes[claim["volumeName"]]
        assert claim["accessModes"] == volume["accessModes"] == ["ReadWriteMany"]
        assert volume["claimRef"] == {"namespace": namespace, "name": "lustre"}
        assert volume["csi"]["driver"] == csi_driver(cluster.cloud)
        assert UNKNOWN_MASK not in (volume["csi"]["volumeHandle"], *volume["csi"]["volumeAttributes"].values())
