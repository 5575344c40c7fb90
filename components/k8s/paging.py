"""Paging: the Alertmanager configuration of kube-prometheus-stack, built from addons.alerting (docs/addons.md
"Paging"), and Grafana's admin login in a Secret of its own.

Every receiver reads its secret from a file: the Prometheus operator mounts each Secret listed in
``alertmanagerSpec.secrets`` at <secretsDir>/<secret>/<key> (the prometheus-operator digest), and Alertmanager's
``*_file`` keys (the alertmanager digest) read it there. No secret value passes through the program, the stack file
or the preview.
"""

from __future__ import annotations

from typing import Any

import pulumi

from components import alerting
from components.fleet import Cluster
from components.k8s import upstream
from components.k8s.model import Manifest, Obj, obj
from components.spec import ReceiverSpec

NULL_RECEIVER = "null"  # the chart's own: alerts nobody asked for stay visible in Alertmanager, sent nowhere
FILE_KEY = {"pagerduty": "routing_key_file", "slack": "api_url_file", "webhook": "url_file"}
CONFIGS_KEY = {"pagerduty": "pagerduty_configs", "slack": "slack_configs", "webhook": "webhook_configs"}
GROUP_BY = ["alertname", "namespace"]
GRAFANA_SECRET = "grafana-admin"
GRAFANA_USER_KEY, GRAFANA_PASSWORD_KEY = "admin-user", "admin-password"
PASSWORD_LENGTH = 32


def secrets_dir() -> str:
    return str(upstream.digest("prometheus-operator")["constants"]["pkg/alertmanager/statefulset.go"]["secretsDir"])


def secret_file(receiver: ReceiverSpec) -> str:
    ref = alerting.secret_ref(receiver)
    return f"{secrets_dir()}/{ref.secret}/{ref.key}"


def _integration(receiver: ReceiverSpec) -> dict[str, Any]:
    kind = alerting.kind(receiver)
    config: dict[str, Any] = {FILE_KEY[kind]: secret_file(receiver), "send_resolved": True}
    if kind == "slack" and receiver.slack and receiver.slack.channel:
        config["channel"] = receiver.slack.channel
    return {CONFIGS_KEY[kind]: [config]}


def alertmanager_config(cluster: Cluster) -> Obj:
    """The route tree and receivers: one route per receiver, matching the severities it asked for, each with
    ``continue`` so an alert reaches every receiver that wants it; anything else goes to the null receiver."""
    receivers = cluster.spec.addons.alerting.receivers
    routes: list[Obj] = [{"receiver": NULL_RECEIVER, "matchers": ['alertname="Watchdog"']}]  # the chart's heartbeat
    routes += [{"receiver": r.name, "matchers": [f'severity=~"{"|".join(r.severities)}"'], "continue": True}
               for r in receivers]
    return {"route": {"receiver": NULL_RECEIVER, "group_by": GROUP_BY, "routes": routes},
            "receivers": [{"name": NULL_RECEIVER}, *({"name": r.name, **_integration(r)} for r in receivers)]}


def mounted_secrets(cluster: Cluster) -> list[str]:
    """The Secrets the receivers read, mounted into Alertmanager (it waits for them: create them first)."""
    return sorted({alerting.secret_ref(r).secret for r in cluster.spec.addons.alerting.receivers})


def alertmanager_values(cluster: Cluster) -> Obj:
    return {"config": alertmanager_config(cluster), "alertmanagerSpec": {"secrets": mounted_secrets(cluster)}}


def grafana_values() -> Obj:
    """Grafana logs its admin in with the generated Secret; the chart's default password is never used."""
    return {"admin": {"existingSecret": GRAFANA_SECRET, "userKey": GRAFANA_USER_KEY,
                      "passwordKey": GRAFANA_PASSWORD_KEY}}


def grafana_admin(cluster: Cluster, namespace: str, password: pulumi.Input[str]) -> Manifest:
    return Manifest(obj("v1", "Secret", GRAFANA_SECRET, namespace, type="Opaque",
                        stringData={GRAFANA_USER_KEY: cluster.spec.addons.grafana.admin_user,
                                    GRAFANA_PASSWORD_KEY: password}))

