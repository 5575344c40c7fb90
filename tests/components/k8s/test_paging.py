"""Paging: every critical alert rule reaches a real receiver through the rendered Alertmanager route tree, the
configuration uses only keys Alertmanager v0.28.1 reads (its digest), secrets are files of mounted Secrets, and
Grafana never keeps the chart's default password."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.errors import SpecError
from components.fleet import Fleet
from components.k8s import observability, upstream
from components.validate import resolve
from tests.alertmanager_routes import receivers_for
from tests.conftest import example_fleet

STACKS = ["aws-train", "dev", "gcp-train", "azure-train"]
# https://prometheus.io/docs/alerting/latest/configuration/#receiver-integration-settings: the integrations a
# receiver may name, and the field of each that reads its secret from a file
INTEGRATIONS = {"pagerduty_configs": "routing_key_file", "slack_configs": "api_url_file", "webhook_configs": "url_file"}


def fleet_of(stack: str, raw: dict[str, Any] | None = None) -> Fleet:
    return resolve(raw or example_fleet(stack))


def values(stack: str, raw: dict[str, Any] | None = None) -> dict[str, Any]:
    return observability.kps_values(fleet_of(stack, raw).clusters[0])


def critical_rules(stack: str) -> list[str]:
    cluster = fleet_of(stack).clusters[0]
    groups = observability.alert_groups(cluster, lustre=cluster.spec.storage.lustre is not None)
    return [a.name for alerts in groups.values() for a in alerts if a.severity == "critical"]


@pytest.mark.parametrize("stack", STACKS)
def test_every_critical_rule_routes_to_a_real_receiver(stack: str) -> None:
    config = values(stack)["alertmanager"]["config"]
    real = {r["name"] for r in config["receivers"] if any(r.get(k) for k in INTEGRATIONS)}
    names = critical_rules(stack)
    assert len(names) >= 5  # GPU, fabric / node, storage, queue alerts exist to be routed
    for name in names:
        got = receivers_for(config["route"], {"alertname": name, "severity": "critical", "team": "ml-platform"})
        assert set(got) & real, f"{stack}: {name} reaches only {got}"


def test_warnings_reach_only_receivers_that_asked_for_them() -> None:
    config = values("aws-train")["alertmanager"]["config"]
    assert receivers_for(config["route"], {"alertname": "GpuXidError", "severity": "warning"}) == ["ml-platform"]
    assert receivers_for(config["route"], {"alertname": "GpuFatalXid", "severity": "critical"}) == [
        "gpu-oncall", "ml-platform"]
    assert receivers_for(config["route"], {"alertname": "Watchdog", "severity": "none"}) == ["null"]


def test_no_receiver_means_alerts_go_to_the_null_receiver_only() -> None:
    raw = copy.deepcopy(example_fleet("dev"))
    raw["clusters"][0]["addons"]["alerting"] = {"receivers": []}
    config = values("dev", raw)["alertmanager"]["config"]
    assert receivers_for(config["route"], {"alertname": "GpuFatalXid", "severity": "critical"}) == ["null"]


def _struct(path: str, name: str) -> set[str]:
    struct = upstream.digest("alertmanager")["structs"][path][name]
    fields = set(struct["fields"])
    for inline in struct["inline"]:
        fields |= _struct(path, inline)
    return fields


@pytest.mark.parametrize("stack", STACKS)
def test_the_configuration_uses_only_keys_alertmanager_reads(stack: str) -> None:
    config = values(stack)["alertmanager"]["config"]
    assert set(config) <= _struct("config/config.go", "Config")
    routes = [config["route"], *config["route"]["routes"]]
    assert all(set(r) <= _struct("config/config.go", "Route") for r in routes)
    kinds = {"pagerduty_configs": "PagerdutyConfig", "slack_configs": "SlackConfig", "webhook_configs": "WebhookConfig"}
    for receiver in config["receivers"]:
        assert set(receiver) <= _struct("config/config.go", "Receiver")
        for key, struct in kinds.items():
            for integration in receiver.get(key, []):
                assert set(integration) <= _struct("config/notifiers.go", struct)


@pytest.mark.parametrize("stack", STACKS)
def test_secrets_are_files_of_the_mounted_secrets(stack: str) -> None:
    """Each *_file names <secretsDir>/<secret>/<key> (the operator mounts every alertmanagerSpec.secrets entry at
    /etc/alertmanager/secrets/<name>), and each Secret it names is mounted."""
    am = values(stack)["alertmanager"]
    raw = {r["name"]: r for r in example_fleet(stack)["clusters"][0]["addons"]["alerting"]["receivers"]}
    for receiver in am["config"]["receivers"][1:]:
        [(key, [integration])] = [(k, v) for k, v in receiver.items() if k in INTEGRATIONS]
        declared = next(v for k, v in raw[receiver["name"]].items() if isinstance(v, dict))
        ref = next(iter(declared.values()))
        assert integration[INTEGRATIONS[key]] == f"/etc/alertmanager/secrets/{ref['secret']}/{ref['key']}"
        assert ref["secret"] in am["alertmanagerSpec"]["secrets"]


@pytest.mark.parametrize("field", ["routing_key", "api_url", "url"])
def test_a_plain_text_secret_is_refused_without_repeating_it(field: str) -> None:
    secret = "https://hooks.example.com/services/T000/B000/XXXXXXXXXXXXSECRET"
    kind = {"routing_key": "pagerduty", "api_url": "slack", "url": "webhook"}[field]
    raw = copy.deepcopy(example_fleet("dev"))
    raw["clusters"][0]["addons"]["alerting"] = {"receivers": [{"name": "x", kind: {field: secret}}]}
    with pytest.raises(SpecError) as err:
        resolve(raw, "stacks/Pulumi.dev.yaml")
    [problem] = err.value.problems
    assert problem.path == f"clusters[0].addons.alerting.receivers[0].{kind}.{field}"
    assert "XXXXSECRET" not in str(err.value) and "plain text" in str(err.value)


@pytest.mark.parametrize(("receiver", "path"), [
    ({"name": "x"}, "clusters[0].addons.alerting.receivers[0]"),
    ({"name": "x", "webhook": {"url": {"secret": "s", "key": "k"}},
      "slack": {"api_url": {"secret": "s", "key": "k"}}}, "clusters[0].addons.alerting.receivers[0]"),
    ({"name": "x", "severities": ["critical", "critical"], "webhook": {"url": {"secret": "s", "key": "k"}}},
     "clusters[0].addons.alerting.receivers[0].severities"),
])
def test_a_receiver_names_exactly_one_integration(receiver: dict[str, Any], path: str) -> None:
    raw = copy.deepcopy(example_fleet("dev"))
    raw["clusters"][0]["addons"]["alerting"] = {"receivers": [receiver]}
    with pytest.raises(SpecError) as err:
        resolve(raw)
    assert [p.path for p in err.value.problems] == [path]


@pytest.mark.parametrize("stack", STACKS)
def test_grafana_has_no_default_password(stack: str) -> None:
    """The chart's default (recorded from its values.yaml) is never set; Grafana reads the generated Secret."""
    chart_default = upstream.digest("kube-prometheus-stack")["chart"]["defaults"]["grafana.adminPassword"]
    grafana = values(stack)["grafana"]
    assert chart_default and "adminPassword" not in grafana
    assert grafana["admin"] == {"existingSecret": "grafana-admin", "userKey": "admin-user",
                                "passwordKey": "admin-password"}


def test_the_alertmanager_pin_is_the_image_the_chart_runs() -> None:
    defaults = upstream.digest("kube-prometheus-stack")["chart"]["defaults"]
    assert upstream.pin("alertmanager")["git"]["ref"] == defaults["alertmanager.alertmanagerSpec.image.tag"]
    assert upstream.pin("prometheus-operator")["git"]["ref"] == upstream.digest("kube-prometheus-stack")["chart"][
        "appVersion"]
