"""Kubeconfigs that authenticate through the cloud's CLI plugin (no static credentials), one shape for every cloud."""

from __future__ import annotations

import json
from typing import Any

EXEC_API = "client.authentication.k8s.io/v1beta1"


def exec_kubeconfig(name: str, server: str, ca_data: str, command: str, args: list[str],
                    **exec_extra: Any) -> str:
    """One cluster, one context, one user whose token comes from ``command args`` at use time. No ``ca_data``: the
    server's certificate is publicly trusted (GKE's DNS endpoint)."""
    cluster = {"server": server, **({"certificate-authority-data": ca_data} if ca_data else {})}
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": name,
        "clusters": [{"name": name, "cluster": cluster}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "users": [{"name": name, "user": {"exec": {"apiVersion": EXEC_API, "command": command, "args": args,
                                                     **exec_extra}}}],
    })
