"""One queue for the fleet, in the clusters (docs/fleet-queue.md): Kueue's MultiKueue objects on the manager, and
on each worker the least-privilege role the manager acts through.

Manager: per team a ClusterQueue whose only admission check is the team's MultiKueue AdmissionCheck (Kueue allows one
per ClusterQueue, never per flavor: pkg/cache/scheduler/clusterqueue.go at the pin), its MultiKueueConfig listing the
team's workers in the order they are tried, one MultiKueueCluster per worker whose kubeconfig is a Secret (by
reference), Kueue's incremental dispatcher one worker at a time in the config's order, and the CronJob that keeps
those Secrets' short-lived tokens fresh (``data/mint_kubeconfigs.py``). No GPU pools: one ResourceFlavor per GPU model
without node labels, quotas per team from the spec and its workers' queues.

Worker: the team queues it has anyway (components/k8s/kueue.py), and a ClusterRole bound to the manager's identity
there: the worker-side role of Kueue's own MultiKueue setup script for the kinds it covers, each job kind's adapter
calls for the ones it lacks, and only for the kinds this worker runs (every name and verb from the kueue digest).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi

from components import multikueue
from components.catalog import Cloud
from components.fleet import Cluster
from components.k8s import kueue, upstream
from components.k8s.model import Manifest, Obj, Rendered, as_nobody, config_map, namespace, obj
from components.k8s.probe import IMAGE

PIN = "kueue"
SCRIPT = Path(__file__).parent / "data" / "mint_kubeconfigs.py"
SETUP_SCRIPT = "site/static/examples/multikueue/create-multikueue-kubeconfig.sh"
MANAGER_ROLE = "config/components/rbac/role.yaml"
TYPES = "apis/kueue/v1beta2/multikueue_types.go"
CONFIG_TYPES = "apis/config/v1beta2/configuration_types.go"
FEATURES = "pkg/features/kube_features.go"
ROLE = "gpufleet-multikueue-manager"  # on a worker: what the manager may do there
MANAGER_GROUP = "gpufleet:multikueue-manager"  # the Kubernetes group a cloud maps the manager's identity to (EKS)
MINTER = "multikueue-token-minter"  # the manager's ServiceAccount whose tokens the workers' clouds trust
SCHEDULE = "*/5 * * * *"
REFRESH_S = 600  # rewrite a kubeconfig once its token has under 10 minutes left (EKS tokens live 14)
PROJECTED_TTL_S = 3600  # the projected ServiceAccount tokens the clouds exchange (Kubernetes' minimum is 600)
STEP_SIZE = 1  # the incremental dispatcher nominates one more worker per round: the config's order decides
TOKENS = "/var/run/secrets/gpufleet/tokens"


def _digest() -> dict[str, Any]:
    return upstream.digest(PIN)


def subject() -> str:
    """The minter as the manager cluster's OIDC issuer names it in its tokens (what the workers' clouds trust)."""
    return f"system:serviceaccount:{kueue.NAMESPACE}:{MINTER}"


@dataclass(frozen=True)
class WorkerLink:
    """A worker as the manager's program sees it: where it is, its cluster (from its stack file), and what its stack
    exported for the manager (API server, CA, the identity to become; None until that stack is up)."""

    worker: multikueue.Worker
    access: pulumi.Input[Any] | None

    @property
    def name(self) -> str:
        return self.worker.name

    @property
    def secret(self) -> str:
        return f"multikueue-{self.name}"


@dataclass(frozen=True)
class ManagerSubject:
    """Who the manager is on a worker: the RBAC subject its cloud identity arrives as."""

    kind: str  # Group (EKS access entry's Kubernetes group) or User (a Google service account, an Entra object id)
    name: pulumi.Input[str]


# --- the manager --------------------------------------------------------------------------------------------------

def config_extra() -> Obj:
    """The manager's Configuration sections: the incremental dispatcher, one worker per round, in config order."""
    gates = _digest()["constants"][FEATURES]
    return {"multiKueue": {"dispatcherName": kueue.constant(CONFIG_TYPES, "MultiKueueDispatcherModeIncremental"),
                           "incrementalDispatcherConfig": {"stepSize": STEP_SIZE}},
            "featureGates": {gates["MultiKueueIncrementalDispatcherConfig"]: True,
                             gates["MultiKueueIncrementalDispatcherRespectConfigOrder"]: True}}


def flavor_name(gpu: str) -> str:
    return gpu.lower()


def team_quota(team: Any, gpu: str, workers: list[multikueue.Worker]) -> dict[str, int]:
    """The team's quota on the manager for one GPU model: its GPUs as the spec says; CPU, memory and devices the
    sum of what its workers' queues give it alongside that GPU (the workers admit within their own)."""
    out: dict[str, int] = {}
    for w in workers:
        shares = kueue.gpu_shares(w.cluster).get(team.name, {})
        for pool in (p for p in w.cluster.pools if p.machine.gpu == gpu and shares.get(p.name)):
            for resource, amount in kueue.quota_amounts(pool, shares[pool.name]).items():
                out[resource] = out.get(resource, 0) + amount
    return {**out, kueue.GPU: team.gpus[gpu]}


def manager_queues(cluster: Cluster, workers: list[multikueue.Worker]) -> list[Manifest]:
    ordered = multikueue.orders(cluster.spec, workers)
    gpus = sorted({g for t in cluster.spec.addons.kueue_teams for g in t.gpus})
    out = [Manifest(obj(kueue.API, "ResourceFlavor", flavor_name(g), spec={}), after=("kueue",)) for g in gpus]
    config = _digest()["crds"]["kueue.x-k8s.io/MultiKueueConfig"]
    for team in cluster.spec.addons.kueue_teams:
        mine = ordered[team.name]
        covered = sorted({"cpu", "memory", kueue.GPU, *(r for w in mine for r in kueue.covered_resources(w.cluster))},
                         key=_resource_order)
        flavors = []
        for gpu in sorted(team.gpus):
            amounts = team_quota(team, gpu, mine)
            flavors.append({"name": flavor_name(gpu), "resources": [
                {"name": r, "nominalQuota": kueue.quantity(r, amounts.get(r, 0))} for r in covered]})
        check = f"multikueue-{team.name}"
        out += [
            namespace(team.name, {"gpufleet.io/team": team.name}),
            Manifest(obj(kueue.API, "ClusterQueue", team.name, spec={
                "cohortName": cluster.name,
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": team.name}},
                "queueingStrategy": "BestEffortFIFO",
                "resourceGroups": [{"coveredResources": covered, "flavors": flavors}],
                "admissionChecksStrategy": {"admissionChecks": [{"name": check}]}}), after=("kueue",)),
            Manifest(obj(kueue.API, "LocalQueue", team.name, team.name, spec={"clusterQueue": team.name}),
                     after=("kueue",)),
            Manifest(obj(kueue.API, "AdmissionCheck", check, spec={
                "controllerName": kueue.constant(TYPES, "MultiKueueControllerName"),
                "parameters": {"apiGroup": config["group"], "kind": config["kind"], "name": team.name}}),
                after=("kueue",)),
            Manifest(obj(kueue.API, "MultiKueueConfig", team.name, spec={"clusters": [w.name for w in mine]}),
                     after=("kueue",)),
        ]
    return out


def _resource_order(resource: str) -> tuple[int, str]:
    return (["cpu", "memory", kueue.GPU].index(resource) if resource in ("cpu", "memory", kueue.GPU) else 3, resource)


def clusters(links: list[WorkerLink]) -> list[Manifest]:
    """One MultiKueueCluster per worker, its kubeconfig the Secret the minter writes (in Kueue's namespace)."""
    return [Manifest(obj(kueue.API, "MultiKueueCluster", link.name, spec={"clusterSource": {"kubeConfig": {
        "locationType": "Secret", "location": link.secret}}}), after=("kueue",)) for link in links]


def _worker_entry(link: WorkerLink, access: dict[str, Any] | None) -> dict[str, Any]:
    """One line of the minter's workers file: the worker stack's export, plus where its token and Secret are."""
    return {**(access or {}), "name": link.name, "cloud": link.worker.cloud.value, "secret": link.secret,
            "token_file": f"{TOKENS}/{link.name}"}


def workers_file(links: list[WorkerLink]) -> pulumi.Output[str]:
    accesses = [pulumi.Output.from_input(link.access) for link in links]
    return pulumi.Output.all(*accesses).apply(
        lambda got: json.dumps([_worker_entry(link, a) for link, a in zip(links, got, strict=True)], indent=1,
                               sort_keys=True))


def _audience(link: WorkerLink) -> pulumi.Input[str]:
    """The audience the worker's cloud expects on the projected token (its stack exports it)."""
    return pulumi.Output.from_input(link.access).apply(lambda a: (a or {}).get("audience") or "pending")


def minter(links: list[WorkerLink]) -> list[Manifest]:
    """The ServiceAccount the workers' clouds trust, the Secrets it may write (and nothing else), its CronJob."""
    ns, labels = kueue.NAMESPACE, {"app.kubernetes.io/name": MINTER}
    secrets = sorted(link.secret for link in links)
    role = obj("rbac.authorization.k8s.io/v1", "Role", MINTER, ns, labels, rules=[
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},  # create cannot be limited by name
        {"apiGroups": [""], "resources": ["secrets"], "resourceNames": secrets, "verbs": ["get", "update"]}])
    binding = obj("rbac.authorization.k8s.io/v1", "RoleBinding", MINTER, ns, labels,
                  roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": MINTER},
                  subjects=[{"kind": "ServiceAccount", "name": MINTER, "namespace": ns}])
    env = {"MINT_WORKERS": "/minter/workers/workers.json", "MINT_NAMESPACE": ns, "MINT_REFRESH_S": str(REFRESH_S),
           "MINT_SECRET_KEY": kueue.constant(TYPES, "MultiKueueConfigSecretKey")}
    tokens = {"name": "tokens", "projected": {"sources": [
        {"serviceAccountToken": {"audience": _audience(link), "expirationSeconds": PROJECTED_TTL_S,
                                 "path": link.name}} for link in links]}}
    pod: Obj = {
        "serviceAccountName": MINTER, "restartPolicy": "Never",
        "containers": [{
            "name": "mint", "image": IMAGE, "command": ["python", f"/minter/script/{SCRIPT.name}"],
            "env": [{"name": k, "value": v} for k, v in env.items()],
            "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
            "securityContext": as_nobody(),
            "volumeMounts": [{"name": "script", "mountPath": "/minter/script", "readOnly": True},
                             {"name": "workers", "mountPath": "/minter/workers", "readOnly": True},
                             {"name": "tokens", "mountPath": TOKENS, "readOnly": True}]}],
        "volumes": [{"name": "script", "configMap": {"name": MINTER}},
                    {"name": "workers", "configMap": {"name": f"{MINTER}-workers"}}, tokens]}
    cronjob = obj("batch/v1", "CronJob", MINTER, ns, labels, spec={
        "schedule": SCHEDULE, "timeZone": "Etc/UTC", "concurrencyPolicy": "Forbid", "startingDeadlineSeconds": 120,
        "successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 3,
        "jobTemplate": {"spec": {"backoffLimit": 1, "activeDeadlineSeconds": 240,
                                 "template": {"metadata": {"labels": labels}, "spec": pod}}}})
    account = obj("v1", "ServiceAccount", MINTER, ns, labels)
    return [Manifest(account), Manifest(role), Manifest(binding),
            config_map(MINTER, ns, {SCRIPT.name: SCRIPT.read_text()}, labels),
            config_map(f"{MINTER}-workers", ns, {"workers.json": workers_file(links)}, labels),
            Manifest(cronjob)]


def manager(cluster: Cluster, monitoring: bool, frameworks: list[str], after: tuple[str, ...],
            links: list[WorkerLink]) -> Rendered:
    workers = [link.worker for link in links]
    return Rendered(releases=[kueue.kueue_release(monitoring, frameworks, after, config_extra())],
                    manifests=[namespace(kueue.NAMESPACE), *kueue.priority_classes(),
                               *manager_queues(cluster, workers), *clusters(links), *minter(links)])


# --- a worker -----------------------------------------------------------------------------------------------------

def _group_kind(framework: str) -> tuple[str, str]:
    group, _, kind = framework.partition("/")
    return group, kind


def _plural(group: str, kind: str, roles: list[list[Obj]]) -> str:
    """The resource of a job kind, as Kueue's own RBAC names it (the first role that has the group)."""
    for rules in roles:
        names = {r for rule in rules if group in rule["apiGroups"] for r in rule["resources"] if "/" not in r}
        found = [r for r in sorted(names) if r.removesuffix("s") == kind]
        if found:
            return found[0]
    raise KeyError(f"no resource of kind {kind} in group {group} in the kueue digest's ClusterRoles")


def worker_rules(frameworks: list[str]) -> list[Obj]:
    """What the manager may do on a worker: Kueue's setup-script role for workloads and queues, and per job kind the
    worker runs, that role's rules for it, or the adapter's calls where the role lacks the kind."""
    roles = _digest()["cluster_roles"]
    [setup] = roles[SETUP_SCRIPT].values()
    [kueue_manager] = roles[MANAGER_ROLE].values()
    adapters = {fw: a["verbs"] for a in _digest()["multikueue_adapters"].values() for fw in a["frameworks"]}
    out = [rule for rule in setup if rule["apiGroups"] == ["kueue.x-k8s.io"]]
    for framework in frameworks:
        group, kind = _group_kind(framework)
        plural = _plural(group, kind, [setup, kueue_manager])
        mine = [rule for rule in setup if group in rule["apiGroups"]
                and set(rule["resources"]) & {plural, f"{plural}/status"}]
        out += mine or [{"apiGroups": [group], "resources": [plural], "verbs": adapters[framework]}]
    return out


def worker(frameworks: list[str], who: ManagerSubject | None) -> Rendered:
    """The manager's role on this worker, bound to its identity (nothing until the cloud layer names it)."""
    if who is None:
        return Rendered()
    role = obj("rbac.authorization.k8s.io/v1", "ClusterRole", ROLE, rules=worker_rules(frameworks))
    binding = obj("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", ROLE,
                  roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ROLE},
                  subjects=[{"kind": who.kind, "name": who.name, "apiGroup": "rbac.authorization.k8s.io"}])
    return Rendered(manifests=[Manifest(role), Manifest(binding)])


def manager_subject(cloud: Cloud, name: pulumi.Input[str] | None) -> ManagerSubject | None:
    """EKS maps the manager's role to a group (its access entry); GKE and AKS name the identity itself."""
    if cloud is Cloud.AWS:
        return ManagerSubject("Group", MANAGER_GROUP)
    return None if name is None else ManagerSubject("User", name)
