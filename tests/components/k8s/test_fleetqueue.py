"""One queue for the fleet, in the example stacks' previews (docs/fleet-queue.md): the manager (stacks/Pulumi.fleet.
yaml, GKE) holds Kueue's MultiKueue objects for every team, its workers (gcp-train on GKE, azure-train on AKS) the
manager's least-privilege role and cloud identity. Every object is validated against Kueue 0.19.2's CRDs by
test_upstream_crds.py and test_manifests.py over the same graphs; here, what they say."""

from __future__ import annotations

import json
from typing import Any

import yaml

from components.k8s.upstream import digest
from gpufleet.engine.capture import Graph
from tests.conftest import of_type, one

# typed from https://kueue.sigs.k8s.io/docs/concepts/multikueue/ ("controllerName: kueue.x-k8s.io/multikueue")
CONTROLLER = "kueue.x-k8s.io/multikueue"
INCREMENTAL = "kueue.x-k8s.io/multikueue-dispatcher-incremental"  # the same page, "Dispatcher"
GCP, AZURE = "gcp-train-train", "azure-train-train"
TEAMS = {"pretrain": [GCP, AZURE],  # the stack file's order
         "research": [AZURE],  # the workers with the team's queue: only azure-train has H100-NVL for research
         "finetune": [GCP]}


def objects(graph: Graph, kind: str) -> dict[str, dict[str, Any]]:
    return {r.inputs["metadata"]["name"]: r.inputs for r in of_type(graph, f":{kind}")}


def test_every_teams_cluster_queue_dispatches_through_its_multikueue_check(graphs: dict[str, Graph]) -> None:
    fleet = graphs["fleet"]
    queues, checks = objects(fleet, "ClusterQueue"), objects(fleet, "AdmissionCheck")
    configs = objects(fleet, "MultiKueueConfig")
    assert set(queues) == set(TEAMS)
    for team, workers in TEAMS.items():
        [check] = queues[team]["spec"]["admissionChecksStrategy"]["admissionChecks"]
        spec = checks[check["name"]]["spec"]
        assert spec["controllerName"] == CONTROLLER
        assert spec["parameters"] == {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": team}
        assert configs[team]["spec"]["clusters"] == workers
    assert not of_type(fleet, ":Topology")  # no GPU pool on the manager: flavors carry no node labels
    assert all(f["spec"] == {} for f in objects(fleet, "ResourceFlavor").values())


def test_the_managers_quota_is_the_teams_gpus_with_its_workers_cpu_and_memory(graphs: dict[str, Graph]) -> None:
    """pretrain: 128 H100 as the stack says; CPU and memory of the nodes its workers' 64 + 64 GPUs fill: 8
    a3-megagpu-8g (208 vCPU, 1872 GiB each) and 8 ND96isr H100 v5 (96 vCPU, 1900 GiB each)."""
    spec = objects(graphs["fleet"], "ClusterQueue")["pretrain"]["spec"]
    [group] = spec["resourceGroups"]
    [flavor] = group["flavors"]
    quota = {r["name"]: r["nominalQuota"] for r in flavor["resources"]}
    assert flavor["name"] == "h100"
    assert (quota["nvidia.com/gpu"], quota["cpu"], quota["memory"]) == ("128", str(8 * 208 + 8 * 96),
                                                                       f"{8 * 1872 + 8 * 1900}Gi")


def test_workers_are_reached_with_credentials_by_reference_only(graphs: dict[str, Graph]) -> None:
    fleet = graphs["fleet"]
    clusters = objects(fleet, "MultiKueueCluster")
    assert set(clusters) == {GCP, AZURE}
    for name, cluster in clusters.items():
        assert cluster["spec"]["clusterSource"] == {"kubeConfig": {"locationType": "Secret",
                                                                   "location": f"multikueue-{name}"}}
    # the stack creates no kubeconfig Secret: the minter writes them on the cluster, with short-lived tokens
    assert not [s for s in of_type(fleet, "core/v1:Secret") if "multikueue" in s.inputs["metadata"]["name"]]
    minter = "queue-addons-configmap-kueue-system-multikueue-token-minter-workers"
    workers = json.loads(one(fleet, "core/v1:ConfigMap", minter).inputs["data"]["workers.json"])
    assert {w["name"]: w["cloud"] for w in workers} == {GCP: "gcp", AZURE: "azure"}
    for w in workers:  # addresses and names the workers' stacks export, never a credential
        assert not {"token", "password", "client_secret", "key"} & set(w), w
        assert w["secret"] == f"multikueue-{w['name']}" and w["server"].startswith("https://")
    gcp, azure = sorted(workers, key=lambda w: w["cloud"] != "gcp")
    assert gcp["service_account"].endswith(".iam.gserviceaccount.com") and gcp["ca_data"] == ""  # DNS endpoint
    assert azure["audience"] == "api://AzureADTokenExchange" and azure["client_id"]


def test_the_minter_may_write_only_those_secrets_and_asks_each_cloud_for_its_audience(graphs: dict[str, Graph]) -> None:
    fleet = graphs["fleet"]
    role = one(fleet, ":Role", "queue-addons-role-kueue-system-multikueue-token-minter").inputs
    named = [r for r in role["rules"] if "resourceNames" in r]
    assert named == [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": [f"multikueue-{AZURE}",
                                                                                     f"multikueue-{GCP}"],
                      "verbs": ["get", "update"]}]
    assert [r["verbs"] for r in role["rules"] if "resourceNames" not in r] == [["create"]]
    cron = one(fleet, ":CronJob", "queue-addons-cronjob-kueue-system-multikueue-token-minter").inputs
    pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    [tokens] = [v for v in pod["volumes"] if v["name"] == "tokens"]
    audiences = {s["serviceAccountToken"]["path"]: s["serviceAccountToken"]["audience"]
                 for s in tokens["projected"]["sources"]}
    assert audiences == {GCP: "gpufleet-multikueue:ml-train-prod:train", AZURE: "api://AzureADTokenExchange"}
    assert all(s["serviceAccountToken"]["expirationSeconds"] <= 3600 for s in tokens["projected"]["sources"])
    assert pod["serviceAccountName"] == "multikueue-token-minter"
    [container] = pod["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["MINT_SECRET_KEY"] == "kubeconfig"  # Kueue reads a MultiKueueCluster Secret's "kubeconfig" key


def test_the_manager_dispatches_one_worker_at_a_time_in_the_configs_order(graphs: dict[str, Graph]) -> None:
    release = one(graphs["fleet"], "helm.sh/v3:Release", "queue-addons-kueue").inputs
    config = yaml.safe_load(release["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert config["multiKueue"] == {"dispatcherName": INCREMENTAL, "incrementalDispatcherConfig": {"stepSize": 1}}
    assert config["featureGates"] == {"MultiKueueIncrementalDispatcherConfig": True,
                                      "MultiKueueIncrementalDispatcherRespectConfigOrder": True}
    assert set(config["integrations"]["frameworks"]) >= {"batch/job", "ray.io/rayjob", "jobset.x-k8s.io/jobset",
                                                          "trainer.kubeflow.org/trainjob"}


def test_each_worker_binds_the_managers_identity_to_the_kinds_it_runs(graphs: dict[str, Graph]) -> None:
    adapters = {fw: a["verbs"] for a in digest("kueue")["multikueue_adapters"].values() for fw in a["frameworks"]}
    for stack, kind in (("gcp-train", "User"), ("azure-train", "User")):
        graph = graphs[stack]
        role = one(graph, ":ClusterRole", "train-addons-clusterrole-gpufleet-multikueue-manager").inputs["rules"]
        granted = {(g, r): set(rule["verbs"]) for rule in role for g in rule["apiGroups"] for r in rule["resources"]}
        assert {"create", "delete", "get", "list", "watch"} <= granted[("kueue.x-k8s.io", "workloads")]
        assert ("", "secrets") not in granted and ("", "pods") not in granted  # nothing beyond the job kinds
        for fw, verbs in adapters.items():  # every call the kind's MultiKueue adapter makes on a worker
            group, _, name = fw.partition("/")
            assert set(verbs) <= granted[(group, f"{name}s")], (stack, fw)
        binding = one(graph, ":ClusterRoleBinding", "train-addons-clusterrolebinding-gpufleet-multikueue-manager")
        [subject] = binding.inputs["subjects"]
        assert subject["kind"] == kind and subject["name"]


def test_the_gke_worker_trusts_the_managers_issuer_for_the_minter_alone(graphs: dict[str, Graph]) -> None:
    provider = one(graphs["gcp-train"], "WorkloadIdentityPoolProvider", "train-multikueue-provider").inputs
    assert provider["attributeCondition"] == ("assertion.sub == "
                                              "'system:serviceaccount:kueue-system:multikueue-token-minter'")
    assert provider["oidc"]["issuerUri"].startswith("https://container.googleapis.com/v1/projects/ml-fleet-prod/")
    role = one(graphs["gcp-train"], "IAMCustomRole", "train-multikueue-connect").inputs
    assert role["permissions"] == ["container.clusters.connect"]


def test_the_aks_worker_federates_the_managers_minter(graphs: dict[str, Graph]) -> None:
    federation = one(graphs["azure-train"], "FederatedIdentityCredential", "train-multikueue-federation").inputs
    assert federation["subject"] == "system:serviceaccount:kueue-system:multikueue-token-minter"
    assert federation["audiences"] == ["api://AzureADTokenExchange"]
    assert federation["issuer"].startswith("https://container.googleapis.com/v1/projects/ml-fleet-prod/")
    assert not [r for r in of_type(graphs["azure-train"], "RoleAssignment") if "multikueue" in r.name]  # no Azure role
