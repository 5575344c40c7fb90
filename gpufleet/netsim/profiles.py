"""Find a network profile by name in the stacks' fleet descriptions, and read sizes like '512MiB'."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from components.errors import did_you_mean
from components.spec import NetworkProfileSpec
from gpufleet.netsim.model import Link
from stacks.config import load_stack_file, stack_file, stack_names

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
SWEEPABLE = ("bandwidth_mbps", "latency_ms", "jitter_ms", "loss_pct", "workers")


class ProfileError(ValueError):
    """A bad name or value on the command line: the message says what is wrong and how to fix it."""


@dataclass(frozen=True)
class FoundProfile:
    stack: str
    cluster: str
    spec: NetworkProfileSpec
    cloud: str = ""  # the stack's cloud: how many TCP streams NCCL's socket transport opens there

    @property
    def link(self) -> Link:
        s = self.spec
        return Link(bandwidth_mbps=s.bandwidth_mbps, latency_ms=s.latency_ms, jitter_ms=s.jitter_ms,
                    loss_pct=s.loss_pct)


def find_profile(name: str, stacks_dir: Path, stack: str | None = None) -> FoundProfile:
    """The one profile called ``name`` (in ``stack`` if given, else in any stack); a ProfileError otherwise."""
    names = stack_names(stacks_dir)
    if stack is not None and stack not in names:
        raise ProfileError(f"no stack file for {stack!r} in {stacks_dir}. Stacks: {', '.join(names) or 'none'}.")
    found: list[FoundProfile] = []
    known: set[str] = set()
    for s in [stack] if stack else names:
        fleet = load_stack_file(stack_file(s, stacks_dir))
        for cluster in fleet.clusters:
            for profile in cluster.spec.network_profiles:
                known.add(profile.name)
                if profile.name == name:
                    found.append(FoundProfile(s, cluster.name, profile, fleet.cloud.value))
    if len(found) == 1:
        return found[0]
    if found:
        where = ", ".join(f"{f.stack}/{f.cluster}" for f in found)
        raise ProfileError(f"network profile {name!r} is defined in several places ({where}). "
                           "Pick one with --stack.")
    guess = did_you_mean(name, known)
    hint = f" Did you mean {guess!r}?" if guess else ""
    scope = f"stack {stack!r}" if stack else f"the stacks in {stacks_dir}"
    raise ProfileError(f"no network profile {name!r} in {scope}.{hint} Known: {', '.join(sorted(known)) or 'none'}. "
                       "Profiles are declared under clusters[].network_profiles in the stack file.")


def parse_bytes(text: str) -> int:
    """'1GiB' -> 1073741824, '512MB' -> 512000000, '4096' -> 4096."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    unit = match[2].lower() if match else None
    if match is None or unit not in _UNITS:
        raise ProfileError(f"{text!r} is not a size. Write a number with an optional unit: "
                           f"{', '.join(u for u in _UNITS if u)} (like 512MiB or 1GB).")
    value = int(float(match[1]) * _UNITS[unit])
    if value <= 0:
        raise ProfileError(f"{text!r} is not a positive size.")
    return value


def parse_sweep(text: str) -> tuple[str, list[float]]:
    """'latency_ms=0,10,50' -> ('latency_ms', [0.0, 10.0, 50.0])."""
    field, _, values = text.partition("=")
    field = field.strip()
    if field not in SWEEPABLE:
        guess = did_you_mean(field, SWEEPABLE)
        hint = f" Did you mean {guess!r}?" if guess else ""
        raise ProfileError(f"--sweep: {field!r} cannot be swept.{hint} Allowed: {', '.join(SWEEPABLE)}.")
    try:
        points = [float(v) for v in values.split(",") if v.strip()]
    except ValueError:
        raise ProfileError(f"--sweep: {values!r} is not a comma-separated list of numbers, "
                           "like latency_ms=0,10,50,100.") from None
    if not points:
        raise ProfileError("--sweep needs values, like latency_ms=0,10,50,100.")
    return field, points


def with_value(link: Link, field: str, value: float) -> Link:
    """The link with one swept field changed; the same range rules as the fleet spec."""
    low_ok = value >= 0.001 if field == "bandwidth_mbps" else value >= 0
    if not low_ok or (field == "loss_pct" and value >= 100):
        allowed = ">= 0.001" if field == "bandwidth_mbps" else "0 <= x < 100" if field == "loss_pct" else ">= 0"
        raise ProfileError(f"--sweep: {field}={value:g} is out of range; allowed: {allowed}.")
    return replace(link, **{field: value})
