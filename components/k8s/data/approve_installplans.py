"""Approve the OLM install plans of the pinned operator versions, and nothing else (docs/addons.md "Self-healing GPU
nodes", operating it). Runs as a Kubernetes Job that `pulumi up` creates after the Subscriptions; stdlib only.

Environment (set by components/k8s/olmapprove.py):
  APPROVE_NAMESPACE     the namespace of the Subscriptions and their install plans
  APPROVE_CSVS          the pinned ClusterServiceVersion names, comma-separated
  APPROVE_PLANS         the install plan collection's path, /apis/<group>/<version>/namespaces/<ns>/<plural>
                        (from the OLM CRD digest)
  APPROVE_TIMEOUT_S     how long to wait for every pinned CSV to be installed
  APPROVE_POLL_S        seconds between two looks
  APPROVE_STUCK_POLLS   consecutive looks at "only other versions wait" before giving up
  KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT_HTTPS   the API server, as the kubelet sets them
  SERVICEACCOUNT_DIR    the mounted service account token and CA (default: the path Kubernetes mounts them at)

A plan is approved only if it waits for approval (phase RequiresApproval, approval Manual, not approved) and every
CSV it names is pinned. The approval is a JSON patch whose `test` operations repeat what was checked (the CSV list,
approved=false), so a plan that changed since it was read is not approved. Exit 0 once each pinned CSV is in a
Complete plan; exit 2 if only plans naming other CSVs wait (never approved) or a pinned plan failed and no newer
one is on its way; exit 3 on timeout. Plans naming other CSVs (the next version OLM offers after the pin) are
always left alone.
"""

from __future__ import annotations

import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.request
from typing import Any

# OLM's install plan vocabulary (operator-framework/api v1alpha1 installplan_types.go, vendored by OLM v0.46.0;
# tests hold these to components/k8s/upstream/digests/olm.json)
MANUAL = "Manual"
REQUIRES_APPROVAL = "RequiresApproval"
COMPLETE = "Complete"
FAILED = "Failed"
# the fields read and patched (JSON pointers into an InstallPlan; tests hold them to the InstallPlan CRD digest)
CSV_NAMES = "/spec/clusterServiceVersionNames"
APPROVED = "/spec/approved"
APPROVAL = "/spec/approval"
PHASE = "/status/phase"
MESSAGE = "/status/message"
# the Subscription conditions that say why no plan came (subscription_types.go at the same tag), named on timeout
SUBSCRIPTION_CONDITIONS = ("ResolutionFailed", "CatalogSourcesUnhealthy", "BundleUnpacking", "BundleUnpackFailed")

REFUSED, TIMED_OUT = 2, 3
SERVICEACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"  # where the kubelet mounts the token and CA


def log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} approve-installplans: {message}", flush=True)


def at(doc: dict[str, Any], pointer: str) -> Any:
    for key in pointer.strip("/").split("/"):
        doc = doc.get(key) if isinstance(doc, dict) else None  # type: ignore[assignment]
    return doc


class Api:
    """The API server, with the pod's service account token (read per request: projected tokens rotate)."""

    def __init__(self, env: dict[str, str]):
        host = env["KUBERNETES_SERVICE_HOST"]
        host = f"[{host}]" if ":" in host else host  # an IPv6 address
        self.base = f"https://{host}:{env['KUBERNETES_SERVICE_PORT_HTTPS']}{env['APPROVE_PLANS']}"
        self.account = env.get("SERVICEACCOUNT_DIR", SERVICEACCOUNT)
        self.tls = ssl.create_default_context(cafile=f"{self.account}/ca.crt")

    def call(self, method: str, url: str, body: Any = None, content_type: str = "") -> Any:
        with open(f"{self.account}/token") as f:
            token = f.read().strip()
        request = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode(),
                                         headers={"Authorization": f"Bearer {token}", "Accept": "application/json",
                                                  **({"Content-Type": content_type} if content_type else {})})
        with urllib.request.urlopen(request, context=self.tls, timeout=30) as response:
            return json.load(response)

    def plans(self) -> list[dict[str, Any]]:
        return list(self.call("GET", self.base).get("items") or [])

    def approve(self, plan: dict[str, Any]) -> None:
        """Approve only the plan as it was read: the test operations fail the whole patch otherwise (RFC 6902)."""
        patch = [{"op": "test", "path": CSV_NAMES, "value": at(plan, CSV_NAMES)},
                 {"op": "test", "path": APPROVED, "value": False},
                 {"op": "replace", "path": APPROVED, "value": True}]
        self.call("PATCH", f"{self.base}/{plan['metadata']['name']}", patch, "application/json-patch+json")


def describe(plan: dict[str, Any]) -> str:
    return (f"{plan['metadata']['name']} ({', '.join(at(plan, CSV_NAMES) or []) or 'no CSV'}; "
            f"phase {at(plan, PHASE) or 'not set yet'}{', approved' if at(plan, APPROVED) else ''})")


def waiting(plan: dict[str, Any]) -> bool:
    return at(plan, PHASE) == REQUIRES_APPROVAL and at(plan, APPROVAL) == MANUAL and at(plan, APPROVED) is False


def ours(plan: dict[str, Any], pinned: set[str]) -> bool:
    names = at(plan, CSV_NAMES) or []
    return bool(names) and set(names) <= pinned


def step(plans: list[dict[str, Any]], pinned: set[str]) -> dict[str, Any]:
    """What one look at the plans means: the plans to approve, the pinned CSVs installed, pinned plans that failed,
    the plans left alone, and whether a pinned-only plan is still on its way (created, waiting or installing)."""
    installed = {n for p in plans if at(p, PHASE) == COMPLETE for n in at(p, CSV_NAMES) or []} & pinned
    approve = [p for p in plans if waiting(p) and ours(p, pinned) and set(at(p, CSV_NAMES)) - installed]
    failed = [p for p in plans if at(p, PHASE) == FAILED and set(at(p, CSV_NAMES) or []) & (pinned - installed)]
    others = [p for p in plans if waiting(p) and not ours(p, pinned)]
    moving = any(ours(p, pinned) and at(p, PHASE) not in (COMPLETE, FAILED) for p in plans)
    return {"approve": approve, "installed": installed, "failed": failed, "others": others, "moving": moving}


def run(env: dict[str, str]) -> int:
    pinned = {n.strip() for n in env["APPROVE_CSVS"].split(",") if n.strip()}
    namespace, timeout, poll = env["APPROVE_NAMESPACE"], float(env["APPROVE_TIMEOUT_S"]), float(env["APPROVE_POLL_S"])
    stuck_limit, stuck = int(env["APPROVE_STUCK_POLLS"]), 0
    api, deadline = Api(env), time.monotonic() + timeout
    plans: list[dict[str, Any]] = []
    reported: set[str] = set()
    log(f"waiting up to {timeout:.0f}s for the install plans of {', '.join(sorted(pinned))} in {namespace}")
    while True:
        try:
            plans = api.plans()
            looked = True
        except (urllib.error.URLError, OSError, ValueError) as e:  # API server busy or restarting: look again
            log(f"listing install plans failed ({e}); retrying")
            looked = False
        now = step(plans, pinned)
        if looked:
            for plan in now["others"]:
                if plan["metadata"]["name"] not in reported:
                    reported.add(plan["metadata"]["name"])
                    log(f"leaving {describe(plan)} alone: it names a CSV that is not pinned")
            for plan in now["approve"]:
                try:
                    api.approve(plan)
                    log(f"approved {describe(plan)}")
                except (urllib.error.URLError, OSError, ValueError) as e:  # changed since read, or API error
                    log(f"approving {plan['metadata']['name']} failed ({e}); looking again")
            if now["installed"] == pinned:
                log(f"installed: {', '.join(sorted(pinned))}")
                return 0
            if now["failed"] and not now["moving"]:  # an older failed plan is history once a new one is on its way
                plan = now["failed"][0]
                log(f"FAILED: install plan {describe(plan)}: {at(plan, MESSAGE) or 'no message'}")
                return REFUSED
            stuck = stuck + 1 if now["others"] and not now["moving"] else 0
            if stuck >= stuck_limit:
                log(f"REFUSED: {', '.join(sorted(pinned - now['installed']))} not offered; OLM waits for approval of "
                    f"{'; '.join(describe(p) for p in now['others'])}, which is not the pin: not approved. Pin what "
                    "OLM offers (docs/addons.md, upgrading a pin) or approve it by hand")
                return REFUSED
        if time.monotonic() >= deadline:
            log(f"TIMED OUT after {timeout:.0f}s: {', '.join(sorted(pinned - now['installed']))} not installed; "
                f"plans seen: {'; '.join(describe(p) for p in plans) or 'none'}. Look at the conditions of "
                f"`kubectl -n {namespace} get subscriptions -o yaml` ({', '.join(SUBSCRIPTION_CONDITIONS)})")
            return TIMED_OUT
        time.sleep(poll)


if __name__ == "__main__":
    sys.exit(run(dict(os.environ)))
