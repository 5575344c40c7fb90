"""Every policy of the pack, in theme order; names are unique (checked at import)."""

from __future__ import annotations

from pulumi_policy import Policy

from policies import cost, gpu, ledger, reliability, security, storage

NAME = "gpufleet"
THEMES = {"security": security.POLICIES, "gpu": gpu.POLICIES,
          "cost": cost.POLICIES + ledger.POLICIES + storage.POLICIES, "reliability": reliability.POLICIES}


def all_policies() -> list[Policy]:
    policies = [p for group in THEMES.values() for p in group]
    names = [p.name for p in policies]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise ValueError(f"policy names must be unique; repeated: {duplicated}")
    return policies
