"""The install plan approver: the real script, run as the Job runs it (the rendered Job's environment), against a
FAKE Kubernetes API server (HTTPS with a throwaway self-signed CA, bearer token from a service-account-shaped
directory) that serves OLM InstallPlans and plays OLM's part after an approval (Installing, then Complete).
Expected names come from the digest files (components/k8s/upstream/digests/*.json), not from the module."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from components.k8s import installplans
from components.k8s.inputs import AddonInputs
from components.k8s.render import render
from gpufleet.engine.capture import Graph
from tests.capacity.loopback import JsonHandler, https_servers, service_account
from tests.components.k8s.conftest import STACKS, clusters, kubernetes_objects
from tests.components.k8s.validation import validate

DIGESTS = Path(__file__).resolve().parents[3] / "components" / "k8s" / "upstream" / "digests"
TOKEN = "fake-service-account-token"


def digest(name: str) -> dict[str, Any]:
    return json.loads((DIGESTS / f"{name}.json").read_text())


def pinned_csv(pin: str) -> str:
    """OLM names a bundle's CSV <package>.<version>; the package from the bundle annotations, the version the tag."""
    d = digest(pin)
    return d["manifests"]["bundle"]["annotations"]["operators.operatorframework.io.bundle.package.v1"] + "." + \
        d["source"]["ref"]


NHC, SNR = pinned_csv("node-healthcheck-operator"), pinned_csv("self-node-remediation")
OLM = digest("olm")
PLAN_CRD = OLM["crds"]["operators.coreos.com/InstallPlan"]
TYPES = "vendor/github.com/operator-framework/api/pkg/operators/v1alpha1/"
CONSTANTS, SUB_CONSTANTS = (OLM["constants"][TYPES + f] for f in ("installplan_types.go", "subscription_types.go"))
# the collection path, from the CRD digest (group, served version) and the CRD object name in OLM's crds.yaml
NAMESPACE = "gpufleet-remediation"  # the Medik8s operators' own namespace (privileged Pod Security: SNR's agent)
PLANS_PATH = f"/apis/{PLAN_CRD['group']}/{PLAN_CRD['served'][0]}/namespaces/{NAMESPACE}/installplans"


def test_the_pins_are_the_bundles_operatorhub_serves() -> None:
    # k8s-operatorhub/community-operators: operators/node-healthcheck-operator/0.12.0, self-node-remediation/0.13.0
    assert (NHC, SNR) == ("node-healthcheck-operator.v0.12.0", "self-node-remediation.v0.13.0")
    assert "installplans.operators.coreos.com" in OLM["release"]["crds"]


# ---- the FAKE API server ------------------------------------------------------------------------------------------

def plan(name: str, csvs: list[str], phase: str = "RequiresApproval", approved: bool = False,
         message: str = "") -> dict[str, Any]:
    """An InstallPlan as OLM v0.46.0 createInstallPlan writes it (spec.approval Manual, approved false)."""
    return {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"clusterServiceVersionNames": csvs, "approval": "Manual", "approved": approved, "generation": 1},
            "status": {"phase": phase, "catalogSources": ["operatorhubio-catalog"],
                       **({"message": message} if message else {})}}


@dataclass
class FakeOlm:
    """FAKE: the install plan API of one namespace. ``later`` plans appear after ``appear_after`` lists; an approved
    plan turns Installing, and Complete on the next list; ``rewrite_on_patch`` changes a plan's CSVs just before a
    patch lands (as if OLM had re-resolved it)."""

    plans: dict[str, dict[str, Any]]
    later: list[dict[str, Any]] = field(default_factory=list)
    appear_after: int = 0
    rewrite_on_patch: list[str] | None = None
    requests: list[tuple[str, str, Any, str]] = field(default_factory=list)
    lists: int = 0

    def list(self) -> dict[str, Any]:
        self.lists += 1
        if self.lists > self.appear_after:
            self.plans.update({p["metadata"]["name"]: p for p in self.later})
            self.later = []
        for p in self.plans.values():
            if p["status"]["phase"] == "Installing":
                p["status"]["phase"] = "Complete"
        out = {"kind": "InstallPlanList", "items": copy.deepcopy(list(self.plans.values()))}
        for p in self.plans.values():
            if p["spec"]["approved"] and p["status"]["phase"] == "RequiresApproval":
                p["status"]["phase"] = "Installing"
        return out

    def patch(self, name: str, ops: list[dict[str, Any]]) -> tuple[int, dict[str, Any]]:
        target = self.plans[name]
        if self.rewrite_on_patch is not None:
            target["spec"]["clusterServiceVersionNames"] = self.rewrite_on_patch
        candidate = copy.deepcopy(target)
        for op in ops:  # RFC 6902: all or nothing
            *parents, leaf = op["path"].strip("/").split("/")
            node = candidate
            for key in parents:
                node = node[key]
            if op["op"] == "test" and node.get(leaf) != op["value"]:
                return 422, {"kind": "Status", "message": f"testing value {op['path']} failed"}
            if op["op"] == "replace":
                node[leaf] = op["value"]
        self.plans[name] = candidate
        return 200, candidate


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A service-account-shaped directory (token, ca.crt) and the fake server's key, for 127.0.0.1."""
    return service_account(tmp_path_factory.mktemp("serviceaccount"), TOKEN)


def _api(olm: FakeOlm) -> type[BaseHTTPRequestHandler]:
    class Handler(JsonHandler):
        def handle_one(self, method: str) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or "null")
            olm.requests.append((method, self.path, body, self.headers.get("Content-Type", "")))
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                return self.reply(401, {"kind": "Status", "message": "Unauthorized"})
            if method == "GET" and self.path == PLANS_PATH:
                return self.reply(200, olm.list())
            name = self.path.removeprefix(PLANS_PATH + "/")
            if method == "PATCH" and name in olm.plans:
                if self.headers.get("Content-Type") != "application/json-patch+json":
                    return self.reply(415, {"kind": "Status", "message": "unsupported patch type"})
                return self.reply(*olm.patch(name, body))
            return self.reply(404, {"kind": "Status", "message": f"no {self.path}"})

        def do_GET(self) -> None:
            self.handle_one("GET")

        def do_PATCH(self) -> None:
            self.handle_one("PATCH")

    return Handler


@pytest.fixture
def serve(tls: Path) -> Iterator[Any]:
    """start(olm) -> the port of a fake API server answering for ``olm`` (HTTPS, stopped after the test)."""
    with https_servers(tls, _api) as start:
        yield start


# ---- the rendered objects -----------------------------------------------------------------------------------------

def objects() -> dict[str, dict[str, Any]]:
    [cluster] = clusters("aws-train")
    out = render(cluster, AddonInputs(kubeconfig="fake-kubeconfig")).manifests
    mine = [m.obj for m in out if m.obj["metadata"]["labels"].get("app.kubernetes.io/name") == installplans.NAME]
    return {o["kind"]: o for o in mine}


def job_env() -> dict[str, str]:
    [container] = objects()["Job"]["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e["value"] for e in container["env"]}


@dataclass
class Run:
    code: int
    log: str
    olm: FakeOlm

    @property
    def patches(self) -> list[tuple[str, Any]]:
        return [(path.rsplit("/", 1)[-1], body) for method, path, body, _ in self.olm.requests if method == "PATCH"]


def run_job(serve: Any, tls: Path, olm: FakeOlm, timeout_s: float = 5) -> Run:
    """The script as the Job runs it: the Job's environment, fast polls, the fake server as the API server."""
    env = {**job_env(), "APPROVE_TIMEOUT_S": str(timeout_s), "APPROVE_POLL_S": "0.05",
           "KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT_HTTPS": str(serve(olm)),
           "SERVICEACCOUNT_DIR": str(tls), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, str(installplans.SCRIPT)], env=env, capture_output=True, text=True,
                          timeout=60)
    return Run(done.returncode, done.stdout + done.stderr, olm)


# ---- behaviour ------------------------------------------------------------------------------------------------------

def test_the_pinned_plan_is_approved_and_the_job_waits_until_it_is_complete(serve: Any, tls: Path) -> None:
    # OLM resolves a namespace's Subscriptions together: one plan naming both pinned CSVs
    olm = FakeOlm({"install-abcde": plan("install-abcde", [NHC, SNR])})
    run = run_job(serve, tls, olm)
    assert run.code == 0, run.log
    assert run.patches == [("install-abcde", [
        {"op": "test", "path": "/spec/clusterServiceVersionNames", "value": [NHC, SNR]},
        {"op": "test", "path": "/spec/approved", "value": False},
        {"op": "replace", "path": "/spec/approved", "value": True}])]
    assert {ct for m, _, _, ct in olm.requests if m == "PATCH"} == {"application/json-patch+json"}
    assert olm.plans["install-abcde"]["status"]["phase"] == "Complete"
    assert "approved install-abcde" in run.log and f"installed: {NHC}, {SNR}" in run.log


def test_one_plan_per_operator_each_approved(serve: Any, tls: Path) -> None:
    olm = FakeOlm({"install-a": plan("install-a", [NHC]), "install-b": plan("install-b", [SNR])})
    run = run_job(serve, tls, olm)
    assert run.code == 0, run.log
    assert sorted(name for name, _ in run.patches) == ["install-a", "install-b"]


def test_a_plan_for_another_version_is_left_alone_and_the_job_fails_saying_why(serve: Any, tls: Path) -> None:
    newer = NHC.replace("v0.12.0", "v0.13.0")
    olm = FakeOlm({"install-next": plan("install-next", [newer])})
    run = run_job(serve, tls, olm)
    assert run.code == 2, run.log
    assert run.patches == [] and olm.plans["install-next"]["spec"]["approved"] is False
    assert "REFUSED" in run.log and newer in run.log and "not approved" in run.log and NHC in run.log


def test_a_plan_naming_a_pinned_csv_and_another_is_not_approved(serve: Any, tls: Path) -> None:
    olm = FakeOlm({"install-mix": plan("install-mix", [NHC, SNR, "some-dependency.v1.0.0"])})
    run = run_job(serve, tls, olm)
    assert run.code == 2, run.log
    assert run.patches == []


def test_installed_pins_are_a_no_op_and_the_next_version_waiting_stays_unapproved(serve: Any, tls: Path) -> None:
    # after the pinned install, OLM offers the next version in the channel: a plan waiting for approval
    olm = FakeOlm({"install-pinned": plan("install-pinned", [NHC, SNR], phase="Complete", approved=True),
                   "install-next": plan("install-next", [NHC.replace("v0.12.0", "v0.13.0")])})
    run = run_job(serve, tls, olm)
    assert run.code == 0, run.log
    assert run.patches == [] and olm.plans["install-next"]["spec"]["approved"] is False
    assert "leaving install-next" in run.log


def test_an_approved_plan_still_installing_is_waited_for_not_patched(serve: Any, tls: Path) -> None:
    olm = FakeOlm({"install-x": plan("install-x", [NHC, SNR], phase="Installing", approved=True)})
    run = run_job(serve, tls, olm)
    assert run.code == 0, run.log
    assert run.patches == []


def test_plans_that_appear_late_are_polled_for(serve: Any, tls: Path) -> None:
    olm = FakeOlm({}, later=[plan("install-late", [NHC, SNR])], appear_after=4)
    run = run_job(serve, tls, olm)
    assert run.code == 0, run.log
    assert [name for name, _ in run.patches] == ["install-late"]
    assert olm.lists >= 6  # 4 empty looks, the approval, then Installing -> Complete


def test_no_plan_times_out_with_the_csvs_and_where_to_look(serve: Any, tls: Path) -> None:
    olm = FakeOlm({})
    run = run_job(serve, tls, olm, timeout_s=0.5)
    assert run.code == 3, run.log
    assert "TIMED OUT" in run.log and NHC in run.log and SNR in run.log
    assert all(reason in run.log for reason in SUB_CONSTANTS.values())  # the Subscription conditions to read


def test_a_failed_pinned_plan_fails_the_job_with_olms_message(serve: Any, tls: Path) -> None:
    olm = FakeOlm({"install-f": plan("install-f", [NHC, SNR], phase="Failed", approved=True,
                                     message="error creating csv: forbidden")})
    run = run_job(serve, tls, olm)
    assert run.code == 2, run.log
    assert "error creating csv: forbidden" in run.log


def test_an_old_failed_plan_does_not_stop_a_new_pinned_one(serve: Any, tls: Path) -> None:
    olm = FakeOlm({"install-old": plan("install-old", [NHC, SNR], phase="Failed", approved=True, message="boom"),
                   "install-new": plan("install-new", [NHC, SNR])})
    run = run_job(serve, tls, olm)
    assert run.code == 0, run.log
    assert [name for name, _ in run.patches] == ["install-new"]


def test_a_plan_rewritten_between_read_and_patch_is_not_approved(serve: Any, tls: Path) -> None:
    olm = FakeOlm({"install-r": plan("install-r", [NHC, SNR])}, rewrite_on_patch=[NHC, "other.v9.9.9"])
    run = run_job(serve, tls, olm)
    assert run.code == 2, run.log
    assert olm.plans["install-r"]["spec"]["approved"] is False  # the test operation refused the patch
    assert "approving install-r failed" in run.log


def test_without_the_mounted_token_nothing_is_approved(serve: Any, tls: Path, tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_bytes((tls / "ca.crt").read_bytes())
    (tmp_path / "token").write_text("some-other-token")
    olm = FakeOlm({"install-abcde": plan("install-abcde", [NHC, SNR])})
    run = run_job(serve, tmp_path, olm, timeout_s=0.5)
    assert run.code == 3, run.log
    assert "401" in run.log and olm.plans["install-abcde"]["spec"]["approved"] is False


# ---- what is rendered -----------------------------------------------------------------------------------------------

def test_the_script_speaks_olms_vocabulary_at_the_pin() -> None:
    source = installplans.SCRIPT.read_text()
    constants = dict(re.findall(r'^([A-Z_]+) = "([^"]*)"$', source, re.MULTILINE))
    assert constants["MANUAL"] == CONSTANTS["ApprovalManual"]
    assert constants["REQUIRES_APPROVAL"] == CONSTANTS["InstallPlanPhaseRequiresApproval"]
    assert constants["COMPLETE"] == CONSTANTS["InstallPlanPhaseComplete"]
    assert constants["FAILED"] == CONSTANTS["InstallPlanPhaseFailed"]
    fields = PLAN_CRD["fields"][PLAN_CRD["storage"]]
    expected_types = {"CSV_NAMES": "array", "APPROVED": "boolean", "APPROVAL": "string", "PHASE": "string",
                      "MESSAGE": "string"}
    for name, kind in expected_types.items():
        dotted = constants[name].strip("/").replace("/", ".")
        assert fields[dotted]["type"] == kind, name
    assert fields["spec.clusterServiceVersionNames[]"]["type"] == "string"
    listed = re.search(r"SUBSCRIPTION_CONDITIONS = \(([^)]*)\)", source)
    assert listed and set(re.findall(r'"([^"]+)"', listed.group(1))) == set(SUB_CONSTANTS.values())


def test_the_job_approves_the_digests_csvs_and_is_named_after_their_versions() -> None:
    env = job_env()
    job = objects()["Job"]
    assert env["APPROVE_CSVS"].split(",") == sorted([NHC, SNR])
    assert env["APPROVE_PLANS"] == PLANS_PATH
    name = job["metadata"]["name"]
    assert "v0-12-0" in name and "v0-13-0" in name  # the two pinned tags (digests' source.ref), dots made dashes
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name) and len(name) <= 63  # a DNS label: pods label it


def test_the_job_gives_up_before_pulumi_does_and_is_retried_by_the_next_up() -> None:
    spec = objects()["Job"]["spec"]
    pulumi_job_await_s = 600  # pulumi_kubernetes 4.34.2 batch.v1.Job docstring: "after 10 minutes, it will time out"
    assert float(job_env()["APPROVE_TIMEOUT_S"]) < spec["activeDeadlineSeconds"] < pulumi_job_await_s
    assert spec["backoffLimit"] == 0 and spec["template"]["spec"]["restartPolicy"] == "Never"
    assert objects()["Job"]["metadata"]["annotations"] == {"pulumi.com/replaceUnready": "true"}
    assert "ttlSecondsAfterFinished" not in spec


def test_the_role_grants_only_what_the_script_uses(serve: Any, tls: Path) -> None:
    objs = objects()
    assert objs["Role"]["rules"] == [{"apiGroups": [PLAN_CRD["group"]], "resources": ["installplans"],
                                      "verbs": ["list", "patch"]}]
    assert "ClusterRole" not in objs and "ClusterRoleBinding" not in objs
    binding = objs["RoleBinding"]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                  "name": objs["Role"]["metadata"]["name"]}
    sa = objs["ServiceAccount"]["metadata"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": sa["name"], "namespace": sa["namespace"]}]
    assert objs["Job"]["spec"]["template"]["spec"]["serviceAccountName"] == sa["name"]
    assert {o["metadata"]["namespace"] for o in objs.values()} == {NAMESPACE}
    # the verbs the script really used against the fake API: a GET of the collection is list, PATCH is patch
    olm = FakeOlm({"install-a": plan("install-a", [NHC, SNR])})
    assert run_job(serve, tls, olm).code == 0
    used = {("list" if m == "GET" and p == PLANS_PATH else "patch" if m == "PATCH" else f"?{m} {p}")
            for m, p, *_ in olm.requests}
    assert used == set(objs["Role"]["rules"][0]["verbs"])


@pytest.mark.parametrize("stack", STACKS)
def test_the_approvers_objects_validate(stack: str) -> None:
    for cluster in clusters(stack):
        mine = [m.obj for m in render(cluster, AddonInputs(kubeconfig="fake-kubeconfig")).manifests
                if m.obj["metadata"]["labels"].get("app.kubernetes.io/name") == installplans.NAME]
        assert bool(mine) == bool(cluster.pools and cluster.spec.addons.self_healing.enabled)
        for o in mine:
            validate(o, cluster.spec.kubernetes_version)


def test_pulumi_creates_the_job_after_the_subscriptions_and_its_rbac(graphs: dict[str, Graph]) -> None:
    graph = graphs["aws-train"]
    by_key = graph.by_key()
    [job] = [r for r in kubernetes_objects(graph) if r.type == "kubernetes:batch/v1:Job"
             and r.inputs["metadata"]["name"].startswith("approve-")]
    needs = {(by_key[d].type.rsplit(":", 1)[-1], by_key[d].inputs.get("metadata", {}).get("name"))
             for d in job.dependencies if d in by_key}
    assert {("Subscription", "node-healthcheck-operator"), ("Subscription", "self-node-remediation"),
            ("RoleBinding", installplans.NAME), ("ConfigMap", installplans.NAME),
            ("ServiceAccount", installplans.NAME)} <= needs
