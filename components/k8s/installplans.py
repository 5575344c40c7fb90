"""Approve the pinned Medik8s operators' OLM install plans during `pulumi up` (docs/addons.md "Self-healing GPU
nodes", operating it).

The Subscriptions ask for Manual approval so that OLM never installs past the pin (Automatic would follow the
catalog's channel). Instead of a person patching each install plan, a Job runs ``data/approve_installplans.py``
after the Subscriptions: it approves a plan only when every CSV the plan names is a pinned one, and fails (so
`pulumi up` fails, with the reason in the Job's log) when only other versions wait. The Job's name carries the
pinned versions, so a pin bump creates a new Job and approves the new pin once.

Pulumi waits for a Job to complete and fails the update when it fails; it gives up after 10 minutes unless told
otherwise (pulumi_kubernetes 4.34.2 ``batch.v1.Job`` docstring), so the Job's own deadline stays below that, and
``pulumi.com/replaceUnready`` (same docstring) makes the next `pulumi up` replace a Job that failed, i.e. try again.
"""

from __future__ import annotations

from pathlib import Path

from components.k8s import probe, upstream
from components.k8s.model import Manifest, as_nobody, config_map, obj

SCRIPT = Path(__file__).parent / "data" / "approve_installplans.py"
NAME = "olm-installplan-approver"
PULUMI_JOB_AWAIT_S = 600  # pulumi_kubernetes batch.v1.Job: "after 10 minutes, it will time out"
DEADLINE_S = 540  # the whole Job (image pull included), under Pulumi's wait so the Job's own message is what fails
TIMEOUT_S = 420  # the script's wait for every pinned CSV; first install: catalog pod start + bundle unpack + install
POLL_S, STUCK_POLLS = 5, 3  # "only another version waits" must hold on 3 looks in a row before the Job refuses
SHORT = {"node-healthcheck-operator": "nhc", "self-node-remediation": "snr"}  # Job names stay under 63 characters


def api(olm_pin: str) -> tuple[str, str, str]:
    """(group, served version, plural) of OLM's InstallPlan, from the OLM CRD digest; the plural as the CRD's object
    name in the pinned release's crds.yaml spells it (<plural>.<group>)."""
    facts = upstream.crds()["operators.coreos.com/InstallPlan"]
    [version] = facts["served"]
    plural = f"{facts['kind'].lower()}s"
    if f"{plural}.{facts['group']}" not in upstream.digest(olm_pin)["release"]["crds"]:
        raise ValueError(f"OLM's crds.yaml has no CRD {plural}.{facts['group']}: re-check the olm pin's digest")
    return facts["group"], version, plural


def job_name(csvs: dict[str, str]) -> str:
    """approve-<short>-<version>-... from {package: CSV name}, e.g. approve-nhc-v0-12-0-snr-v0-13-0."""
    parts = [f"{SHORT.get(p, p)}-{csv.removeprefix(p + '.').replace('.', '-')}" for p, csv in sorted(csvs.items())]
    return "approve-" + "-".join(parts)


def approver(olm_pin: str, namespace: str, csvs: dict[str, str], subscriptions: tuple[str, ...],
             after: tuple[str, ...]) -> list[Manifest]:
    """The script, a ServiceAccount allowed only to list and patch install plans in ``namespace``, and the Job
    (after ``subscriptions``, keys of the Subscription manifests, and ``after``: what creates the namespace)."""
    group, version, plural = api(olm_pin)
    labels = {"app.kubernetes.io/name": NAME}
    role = obj("rbac.authorization.k8s.io/v1", "Role", NAME, namespace, labels,
               rules=[{"apiGroups": [group], "resources": [plural], "verbs": ["list", "patch"]}])
    binding = obj("rbac.authorization.k8s.io/v1", "RoleBinding", NAME, namespace, labels,
                  roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": NAME},
                  subjects=[{"kind": "ServiceAccount", "name": NAME, "namespace": namespace}])
    env = {"APPROVE_NAMESPACE": namespace, "APPROVE_CSVS": ",".join(sorted(csvs.values())),
           "APPROVE_PLANS": f"/apis/{group}/{version}/namespaces/{namespace}/{plural}",
           "APPROVE_TIMEOUT_S": str(TIMEOUT_S), "APPROVE_POLL_S": str(POLL_S), "APPROVE_STUCK_POLLS": str(STUCK_POLLS)}
    job = obj("batch/v1", "Job", job_name(csvs), namespace, labels, spec={
        "backoffLimit": 0,  # a refusal or a timeout is the answer, not a flake: no retry inside the Job
        "activeDeadlineSeconds": DEADLINE_S,
        # an evicted or preempted pod is not the script's failure: start it again, as in Kubernetes' own
        # backoffLimit 0 + Ignore DisruptionTarget example (https://kubernetes.io/docs/tasks/job/pod-failure-policy/)
        "podFailurePolicy": {"rules": [{"action": "Ignore",
                                        "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]},
        "template": {"metadata": {"labels": labels}, "spec": {
            "serviceAccountName": NAME, "restartPolicy": "Never",
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                "name": "approve", "image": probe.IMAGE, "command": ["python", f"/script/{SCRIPT.name}"],
                "env": [{"name": k, "value": v} for k, v in env.items()],
                "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}},
                "securityContext": as_nobody(),
                "volumeMounts": [{"name": "script", "mountPath": "/script", "readOnly": True}]}],
            "volumes": [{"name": "script", "configMap": {"name": NAME}}]}}})
    # no ttlSecondsAfterFinished: Pulumi owns the Job; a TTL would delete it behind Pulumi's back and a refresh
    # would then create (and run) it again. Pulumi deletes it when the pin, hence the name, changes.
    job["metadata"]["annotations"] = {"pulumi.com/replaceUnready": "true"}
    own = (*after,)
    return [config_map(NAME, namespace, {SCRIPT.name: SCRIPT.read_text()}, labels, after=own),
            Manifest(obj("v1", "ServiceAccount", NAME, namespace, labels), own),
            Manifest(role, own), Manifest(binding, own),
            Manifest(job, (*own, *subscriptions, f"configmap/{namespace}/{NAME}",
                           f"rolebinding/{namespace}/{NAME}", f"serviceaccount/{namespace}/{NAME}"))]
