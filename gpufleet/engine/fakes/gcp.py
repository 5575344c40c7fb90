"""FAKE GCP answers for the offline preview (see gpufleet/engine/fakes/__init__.py).

Unnamed GCP resources get Pulumi's auto-name shape (`<resource name>-<7 hex>`), and ids take the shape of the
API's resource paths (projects/<p>/global/networks/<name>, ...), since programs pass ids to other resources.
"""

from __future__ import annotations

from typing import Any

from pulumi.runtime import MockResourceArgs

from gpufleet.engine.fakes.base import Invoke, Outputs, hex_id

PROJECT = "gpufleet-preview"
PROJECT_NUMBER = "123456789012"
DEFAULT_REGION = "us-central1"
CA = "RkFLRS1HS0UtQ0EtRk9SLU9GRkxJTkUtUFJFVklFVw=="  # base64("FAKE-GKE-CA-FOR-OFFLINE-PREVIEW")


def _project(inputs: dict[str, Any]) -> str:
    return str(inputs.get("project") or PROJECT)


def _name(a: MockResourceArgs) -> str:
    """The physical name: given, or auto-named like the engine does."""
    return str(a.inputs.get("name") or f"{a.name}-{hex_id(a.typ + a.name, 7)}")


def _cluster(a: MockResourceArgs, rid: str) -> dict[str, Any]:
    private = a.inputs.get("privateClusterConfig", {}).get("enablePrivateEndpoint", False)
    digits = int(hex_id(a.name, 4), 16)
    endpoint = "172.16.0.2" if private else f"34.{digits % 200 + 10}.{digits % 250}.{digits % 240 + 2}"
    # every GKE cluster has a DNS-based endpoint (FAKE name in its documented form, gke-<hash>-<project number>.
    # <location>.gke.goog); allowExternalTraffic says whether users may use it
    dns = {**a.inputs.get("controlPlaneEndpointsConfig", {}).get("dnsEndpointConfig", {}),
           "endpoint": f"gke-{hex_id(a.name + 'dns', 16)}-{digits * 7919}.{a.inputs.get('location')}.gke.goog"}
    endpoints = {**a.inputs.get("controlPlaneEndpointsConfig", {}), "dnsEndpointConfig": dns}
    return {"name": _name(a), "endpoint": endpoint, "masterAuth": {"clusterCaCertificate": CA},
            "controlPlaneEndpointsConfig": endpoints,
            "selfLink": f"https://container.googleapis.com/v1/{rid}", "masterVersion": "1.33.5-gke.1162000"}


def _account(a: MockResourceArgs, rid: str) -> dict[str, Any]:
    email = f"{a.inputs['accountId']}@{_project(a.inputs)}.iam.gserviceaccount.com"
    return {"email": email, "member": f"serviceAccount:{email}", "name": rid,
            "uniqueId": str(int(hex_id(email, 12), 16))}


def _service_identity(a: MockResourceArgs, rid: str) -> dict[str, Any]:
    agent = str(a.inputs["service"]).split(".")[0]
    email = f"service-{PROJECT_NUMBER}@gcp-sa-{agent}.iam.gserviceaccount.com"
    return {"email": email, "member": f"serviceAccount:{email}"}


def _lustre(a: MockResourceArgs, rid: str) -> dict[str, Any]:
    return {"name": rid, "mountPoint": f"10.96.0.2@tcp:/{a.inputs.get('filesystem', 'lustre')}", "state": "ACTIVE"}


def _self_link(a: MockResourceArgs, rid: str) -> dict[str, Any]:
    return {"name": _name(a), "selfLink": f"https://www.googleapis.com/compute/v1/{rid}"}


OUTPUTS: dict[str, Outputs] = {
    "gcp:compute/network:Network": _self_link,
    "gcp:compute/subnetwork:Subnetwork": _self_link,
    "gcp:compute/router:Router": _self_link,
    "gcp:compute/firewall:Firewall": _self_link,
    "gcp:compute/globalAddress:GlobalAddress": _self_link,
    "gcp:container/cluster:Cluster": _cluster,
    "gcp:container/nodePool:NodePool": lambda a, rid: {"name": _name(a), "instanceGroupUrls": []},
    "gcp:serviceaccount/account:Account": _account,
    "gcp:projects/serviceIdentity:ServiceIdentity": _service_identity,
    "gcp:storage/bucket:Bucket": lambda a, rid: {"name": rid, "url": f"gs://{rid}",
                                                 "selfLink": f"https://www.googleapis.com/storage/v1/b/{rid}"},
    "gcp:lustre/instance:Instance": _lustre,
    "gcp:kms/keyRing:KeyRing": lambda a, rid: {"name": _name(a)},
    "gcp:kms/cryptoKey:CryptoKey": lambda a, rid: {"name": _name(a), "primary": [{"name": f"{rid}/cryptoKeyVersions/1",
                                                                                   "state": "ENABLED"}]},
}

_PATHS = {
    "gcp:compute/network:Network": "projects/{p}/global/networks/{n}",
    "gcp:compute/subnetwork:Subnetwork": "projects/{p}/regions/{r}/subnetworks/{n}",
    "gcp:compute/router:Router": "projects/{p}/regions/{r}/routers/{n}",
    "gcp:compute/firewall:Firewall": "projects/{p}/global/firewalls/{n}",
    "gcp:compute/globalAddress:GlobalAddress": "projects/{p}/global/addresses/{n}",
    "gcp:container/cluster:Cluster": "projects/{p}/locations/{l}/clusters/{n}",
    "gcp:serviceaccount/account:Account": "projects/{p}/serviceAccounts/{a}@{p}.iam.gserviceaccount.com",
    "gcp:lustre/instance:Instance": "projects/{p}/locations/{l}/instances/{i}",
    "gcp:kms/keyRing:KeyRing": "projects/{p}/locations/{l}/keyRings/{n}",
    "gcp:kms/cryptoKey:CryptoKey": "{k}/cryptoKeys/{n}",
}


def physical_id(a: MockResourceArgs) -> str | None:
    if not a.typ.startswith("gcp:"):
        return None
    if a.typ == "gcp:storage/bucket:Bucket":
        return _name(a)
    path = _PATHS.get(a.typ)
    if path is None:
        return None
    i = a.inputs
    return path.format(p=_project(i), r=i.get("region", DEFAULT_REGION), l=i.get("location", DEFAULT_REGION),
                       n=_name(a), a=i.get("accountId", ""), i=i.get("instanceId", ""), k=i.get("keyRing", ""))


# --- invokes --------------------------------------------------------------------------------------------

INVOKES: dict[str, Invoke] = {
    "gcp:organizations/getClientConfig:getClientConfig": lambda a: {
        "id": PROJECT, "project": PROJECT, "region": DEFAULT_REGION, "zone": f"{DEFAULT_REGION}-a",
        "accessToken": "FAKE-ACCESS-TOKEN", "defaultLabels": {}},
    "gcp:organizations/getProject:getProject": lambda a: {
        "id": f"projects/{a.get('projectId') or PROJECT}", "projectId": a.get("projectId") or PROJECT,
        "number": PROJECT_NUMBER, "name": a.get("projectId") or PROJECT},
}
