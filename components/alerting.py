"""Checks of the Alertmanager receivers a cluster declares (addons.alerting): one integration each, unique names,
and every secret by reference. A secret written into the stack file is refused without ever being repeated: the
error names its config path, never its value."""

from __future__ import annotations

from collections.abc import Iterator

from components.errors import SpecProblem, duplicates
from components.spec import ClusterSpec, ReceiverSpec, SecretRef

KINDS = ("pagerduty", "slack", "webhook")
SECRET_FIELD = {"pagerduty": "routing_key", "slack": "api_url", "webhook": "url"}


def kind(receiver: ReceiverSpec) -> str:
    """The receiver's one integration (the spec passed ``check``)."""
    return next(k for k in KINDS if getattr(receiver, k) is not None)


def secret_ref(receiver: ReceiverSpec) -> SecretRef:
    ref = getattr(getattr(receiver, kind(receiver)), SECRET_FIELD[kind(receiver)])
    assert isinstance(ref, SecretRef), "check() refuses plain-text secrets"
    return ref


def check(c: ClusterSpec, path: str) -> Iterator[SpecProblem]:
    where = f"{path}.addons.alerting.receivers"
    receivers = c.addons.alerting.receivers
    yield from duplicates(where, "receiver", (r.name for r in receivers))
    for i, r in enumerate(receivers):
        given = [k for k in KINDS if getattr(r, k) is not None]
        if len(given) != 1:
            yield SpecProblem(f"{where}[{i}]", f"names {len(given)} integrations ({', '.join(given) or 'none'}).",
                              f"Give exactly one of {', '.join(KINDS)}; declare another receiver for another.")
            continue
        field = SECRET_FIELD[given[0]]
        if not isinstance(getattr(getattr(r, given[0]), field), SecretRef):
            yield SpecProblem(f"{where}[{i}].{given[0]}.{field}", "is written in plain text in the stack file (its "
                              "value is not repeated here).",
                              "Remove it and rotate it (the stack file is in version control), put it in a Kubernetes "
                              "Secret of the monitoring namespace (kubectl -n monitoring create secret generic NAME "
                              f"--from-literal={field.replace('_', '-')}=...), and reference it: "
                              f"{field}: {{secret: NAME, key: {field.replace('_', '-')}}}.")
        if len(set(r.severities)) != len(r.severities) or not r.severities:
            yield SpecProblem(f"{where}[{i}].severities", f"{r.severities} must list critical and/or warning once.",
                              "Use [critical] or [critical, warning].")
