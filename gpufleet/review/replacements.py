"""Which property changes replace a resource, roll its nodes, or update it in place: a curated, sourced table.

The table is ``gpufleet/review/data/replacements.csv`` (type, property, effect, source, note). ``property`` is a dotted
camelCase input path; a rule matches a changed path equal to it or below it (``launchTemplate.version`` matches
``launchTemplate.version``; ``scalingConfig`` matches ``scalingConfig.maxSize``). ``*`` as the property matches
any path the resource type has no more specific rule for; ``aws:*`` as the type matches every AWS type. A change
no rule covers is reported as "update (replacement unknown)", never guessed.

Effects: ``replace`` (the provider deletes and recreates the resource), ``roll`` (updated in place, but every
node is drained and recreated), ``in_place``, ``replace_if`` (replaces when the new value is lower than the
old one, e.g. a smaller Lustre capacity; otherwise in place; unknown when the values do not compare),
``replace_if_updated`` (replaces when a value set before is set to another one; adding or removing it does not)
and ``replace_if_cluster`` (a Kubernetes provider's kubeconfig: replaces when the new one is unknown or its
active cluster differs, in place when only other parts changed, unknown when either side cannot be read).

Provider resources (``pulumi:providers:*``) follow their provider's DiffConfig; when it asks for replacement,
the engine replaces every resource the provider manages as well (gpufleet/review/diff.py cascades it).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from gpufleet.engine.capture import SECRET_MASK, UNKNOWN_MASK

TABLE = Path(__file__).resolve().parent / "data" / "replacements.csv"
CONDITIONAL = ("replace_if", "replace_if_updated", "replace_if_cluster")


class Effect(StrEnum):
    REPLACE = "replace"
    ROLL = "roll"
    IN_PLACE = "in_place"
    UNKNOWN = "unknown"  # no rule: "update (replacement unknown)"


@dataclass(frozen=True)
class Rule:
    type: str
    property: str
    effect: str  # an Effect, or one of CONDITIONAL
    source: str
    note: str


@dataclass(frozen=True)
class PathEffect:
    """One changed input path and what the provider does about it."""

    path: str
    effect: Effect
    source: str = ""
    note: str = ""


@cache
def rules(path: Path = TABLE) -> tuple[Rule, ...]:
    with path.open(newline="") as fh:
        return tuple(Rule(**row) for row in csv.DictReader(fh))


def normalise(path: str) -> str:
    """Engine paths index lists (``instanceTypes[0]``, ``tags["team"]``); the table does not."""
    path = re.sub(r'\["([^"]*)"\]', r".\1", path)
    return re.sub(r"\[\d+\]", "", path).strip(".")


def _covers(rule_path: str, path: str) -> bool:
    return path == rule_path or path.startswith(rule_path + ".")


def _type_matches(rule_type: str, type_: str) -> bool:
    return rule_type == type_ or (rule_type.endswith(":*") and type_.startswith(rule_type[:-1]))


def find_rule(type_: str, path: str, table: Sequence[Rule] | None = None) -> Rule | None:
    """The most specific rule of ``table`` (default: the shipped one): ``*`` as the property last, then the exact
    type before a cloud wildcard, then the longest property."""
    path = normalise(path)
    found = [r for r in (rules() if table is None else table)
             if _type_matches(r.type, type_) and (r.property == "*" or _covers(r.property, path))]
    if not found:
        return None
    return max(found, key=lambda r: (r.property != "*", r.type == type_, len(r.property)))


def _lower(old: Any, new: Any) -> bool | None:
    """new < old for numbers and dotted versions; None when they do not compare."""
    def key(v: Any) -> tuple[float, ...] | None:
        if isinstance(v, bool):
            return None
        if isinstance(v, int | float):
            return (float(v),)
        if isinstance(v, str) and re.fullmatch(r"\d+(\.\d+)*", v):
            return tuple(float(p) for p in v.split("."))
        return None
    a, b = key(old), key(new)
    return None if a is None or b is None else b < a


def active_cluster(kubeconfig: Any) -> dict[str, Any] | None:
    """The cluster entry a kubeconfig's current context points at (server, CA, ...); None when it cannot be read
    (masked, unknown, not a kubeconfig). Mirrors pulumi-kubernetes' getActiveClusterFromConfig without overrides."""
    if not isinstance(kubeconfig, str) or kubeconfig in (SECRET_MASK, UNKNOWN_MASK):
        return None
    try:
        config = yaml.safe_load(kubeconfig)
    except yaml.YAMLError:
        return None
    if not isinstance(config, dict):
        return None
    named = {c.get("name"): c.get("context") or {} for c in config.get("contexts") or [] if isinstance(c, dict)}
    context = named.get(config.get("current-context"))
    clusters = {c.get("name"): c.get("cluster") for c in config.get("clusters") or [] if isinstance(c, dict)}
    found = clusters.get(context.get("cluster")) if isinstance(context, dict) else None
    return found if isinstance(found, dict) else None


def _conditional(kind: str, old: Any, new: Any) -> Effect:
    if kind == "replace_if":
        lower = _lower(old, new)
        return Effect.UNKNOWN if lower is None else Effect.REPLACE if lower else Effect.IN_PLACE
    if kind == "replace_if_updated":
        return Effect.REPLACE if old is not None and new is not None and old != new else Effect.IN_PLACE
    # replace_if_cluster: an unknown new value replaces (the provider cannot tell, so it plays safe)
    if new == UNKNOWN_MASK:
        return Effect.REPLACE
    before, after = active_cluster(old), active_cluster(new)
    if before is None or after is None:
        return Effect.UNKNOWN
    return Effect.REPLACE if before != after else Effect.IN_PLACE


def classify(type_: str, path: str, old: Any = None, new: Any = None) -> PathEffect:
    rule = find_rule(type_, path)
    if rule is None:
        return PathEffect(path, Effect.UNKNOWN)
    if rule.effect in CONDITIONAL:
        return PathEffect(path, _conditional(rule.effect, old, new), rule.source, rule.note)
    return PathEffect(path, Effect(rule.effect), rule.source, rule.note)


def get_path(inputs: Any, path: str) -> Any:
    value = inputs
    for part in normalise(path).split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def classify_all(type_: str, paths: list[str], old: dict[str, Any] | None,
                 new: dict[str, Any] | None) -> list[PathEffect]:
    return [classify(type_, p, get_path(old or {}, p), get_path(new or {}, p)) for p in paths]
