"""Names Azure wants globally unique (storage accounts, key vaults): readable, stable per stack, and valid for both
(3-24 lowercase letters and digits, starting with the cluster name's letter)."""

from __future__ import annotations

import hashlib
import re

import pulumi


def globally_unique(cluster: str, suffix: str) -> str:
    """A readable prefix (cluster + suffix, 14 characters at most) plus a hash of project, stack, cluster and suffix."""
    stem = re.sub(r"[^a-z0-9]", "", f"{cluster}{suffix}")[:14]
    digest = hashlib.sha256(f"{pulumi.get_project()}/{pulumi.get_stack()}/{cluster}/{suffix}".encode()).hexdigest()
    return f"{stem}{digest[:10]}"
