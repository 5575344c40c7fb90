"""The only reader of stack configuration: ``gpufleet:fleet`` in stacks/Pulumi.<stack>.yaml."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import yaml

from components import checkpoint_peers, multikueue
from components.errors import SpecError, SpecProblem, did_you_mean
from components.fleet import Fleet
from components.spec import PENDING_ID
from components.validate import resolve

STACKS_DIR = Path(__file__).parent
# where the program finds the stacks its MultiKueue clusters name: the project's stacks/ (Pulumi.yaml
# stackConfigDir), or the folder the offline preview was pointed at
PEERS_DIR: ContextVar[Path] = ContextVar("PEERS_DIR", default=STACKS_DIR)
# which share of the stack's clusters this run of the program builds, (index, of): the offline preview may run it once
# per share, in parallel (gpufleet/engine/shares.py); `pulumi up` builds them all in one run
SHARE: ContextVar[tuple[int, int]] = ContextVar("SHARE", default=(0, 1))
CONFIG_KEY = "gpufleet:fleet"
# What the accepted capacity plan costs for the work it places in this stack, one month (`capacity apply` writes
# it; `gpufleet pr` shows it beside the cost of every pool at max). Not part of the fleet: the program ignores it.
PLAN_KEY = "gpufleet:capacity_plan"


def stack_file(stack: str, directory: Path = STACKS_DIR) -> Path:
    return directory / f"Pulumi.{stack}.yaml"


def stack_names(directory: Path = STACKS_DIR) -> list[str]:
    return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in directory.glob("Pulumi.*.yaml"))


class _UniqueKeyLoader(yaml.SafeLoader):
    """safe_load that refuses a key given twice in one mapping (plain YAML keeps the last one silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} on line {line} (first on line {seen[key]}): keep one; YAML "
                    "would silently use the last", key_node.start_mark)
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def stack_paths(given: Sequence[Path] | None = None) -> list[Path]:
    """The stack files named, a directory standing for its Pulumi.*.yaml (default: this directory)."""
    files: list[Path] = []
    for path in given or [STACKS_DIR]:
        files.extend(sorted(path.glob("Pulumi.*.yaml")) if path.is_dir() else [path])
    return files


def read_stack_config(path: Path) -> dict[str, Any]:
    """The stack file's ``config`` map, or a SpecError naming the file when it cannot be read."""
    try:
        with path.open(encoding="utf-8") as stream:  # a named stream: YAML marks cite the file, not "<unicode string>"
            document = yaml.load(stream, Loader=_UniqueKeyLoader) or {}  # a SafeLoader subclass
    except OSError as err:
        raise SpecError([SpecProblem("", f"cannot read the stack file: {err.strerror}.")], str(path)) from None
    except UnicodeDecodeError as err:
        raise SpecError([SpecProblem("", f"is not UTF-8 text: byte {err.object[err.start:err.start + 1]!r} at "
                                     f"offset {err.start} cannot be decoded.",
                                     "Save the stack file as UTF-8 (e.g. `iconv -f latin1 -t utf-8`).")],
                        str(path)) from None
    except yaml.YAMLError as err:
        # keep its lines: the mark's excerpt and caret only read right on their own lines
        raise SpecError([SpecProblem("", f"is not valid YAML:\n{err}")], str(path)) from None
    config = document.get("config") if isinstance(document, dict) else None
    if not isinstance(config, dict):
        raise SpecError([SpecProblem("config", "is missing or not a mapping.",
                                     f"Add a config: section with {CONFIG_KEY}.")], str(path))
    return config


def missing_fleet(keys: Iterable[str]) -> SpecProblem:
    """``gpufleet:fleet`` is not set: name the key that looks like it (a typo such as gpufleet:fleets), if any."""
    keys = sorted(keys)
    guess = did_you_mean(CONFIG_KEY, keys)
    if guess:
        return SpecProblem("config", f"has no {CONFIG_KEY}, but has {guess!r}.", f"Did you mean {CONFIG_KEY}? "
                           f"Rename {guess} to {CONFIG_KEY}.")
    return SpecProblem("config", f"has no {CONFIG_KEY} (keys: {', '.join(keys) or 'none'}).",
                       f"Add {CONFIG_KEY}: an object with cloud, clusters, tags and monthly_budget_usd.")


def load_stack(path: Path) -> tuple[dict[str, Any], Fleet]:
    """The stack file's config and the fleet it describes (for the CLI, the planner and tests)."""
    config = read_stack_config(path)
    if CONFIG_KEY not in config:
        raise SpecError([missing_fleet(map(str, config))], display(path))
    return config, resolve(config[CONFIG_KEY], display(path))


def capacity_plan(config: dict[str, Any], source: str) -> dict[str, Any] | None:
    """The stack's ``gpufleet:capacity_plan`` ({month: YYYY-MM, usd_per_month: >= 0}), None when it has none."""
    plan = config.get(PLAN_KEY)
    if plan is None:
        return None
    month, usd = (plan.get("month"), plan.get("usd_per_month")) if isinstance(plan, dict) else (None, None)
    if not (isinstance(month, str) and len(month) == 7 and month[4] == "-" and month.replace("-", "").isdigit()
            and isinstance(usd, int | float) and not isinstance(usd, bool) and usd >= 0):
        raise SpecError([SpecProblem(PLAN_KEY, f"is {plan!r}: it must be {{month: YYYY-MM, usd_per_month: a number "
                                     ">= 0}}.", "Run `gpufleet capacity apply --write` again, or delete the key.")],
                        source)
    return {"month": month, "usd_per_month": float(usd)}


def load_stack_file(path: Path) -> Fleet:
    return load_stack(path)[1]


def load() -> Fleet:
    """Inside a running Pulumi program: the fleet of the current stack, or a RunError (no traceback)."""
    import pulumi
    from pulumi.runtime.config import CONFIG  # every key of the stack's config, to name a misspelt one

    config = pulumi.Config("gpufleet")
    try:
        raw = config.get_object("fleet")
    except json.JSONDecodeError:  # a plain string where an object belongs
        raw = config.get("fleet")
    source = f"stacks/Pulumi.{pulumi.get_stack()}.yaml"
    try:
        if raw is None:
            raise SpecError([missing_fleet(CONFIG.get())], source)
        fleet = resolve(raw, source)
        # the other stacks of the fleet queue name this one by its file: a program run without it (an inline
        # program of the offline engine's tests) is no stack they can name, and is not checked against them
        if stack_file(pulumi.get_stack(), PEERS_DIR.get()).exists():
            check_peers(pulumi.get_stack(), fleet, source)
    except SpecError as err:
        raise pulumi.RunError(str(err)) from None
    pending = pending_capacity(fleet)
    if pending and not pulumi.runtime.is_dry_run():
        raise pulumi.RunError("capacity still to buy: " + "; ".join(pending) + ". Buy it, put its id in place "
                              f"of '{PENDING_ID}' in the stack file, then run `pulumi up` again.")
    index, of = SHARE.get()
    for where in pending if index == 0 else ():  # the first share warns of the whole file, as one run does
        pulumi.log.warn(f"{where}: capacity id is '{PENDING_ID}'; `pulumi up` refuses it until the id is set.")
    return fleet.share(index, of)


def peers(fleet: Fleet, directory: Path | None = None) -> dict[str, Fleet]:
    """The fleets of the stacks this fleet's MultiKueue clusters name (a stack whose file is missing or does not
    validate is left out: the cross-stack check says it cannot be read, and its own preview says why)."""
    out: dict[str, Fleet] = {}
    for stack in sorted(multikueue.peer_stacks(fleet)):
        _read(stack, out, directory)
    for stack in sorted(checkpoint_peers.sibling_stacks(out) - set(out)):  # a worker's peers: its manager's workers
        _read(stack, out, directory)
    return out


def _read(stack: str, out: dict[str, Fleet], directory: Path | None) -> None:
    with contextlib.suppress(SpecError):
        out[stack] = load_stack_file(stack_file(stack, directory or PEERS_DIR.get()))


def check_peers(stack: str, fleet: Fleet, source: str, directory: Path | None = None) -> None:
    """Refuse, with config paths, a MultiKueue manager or worker that cannot work with the stacks it names."""
    found = peers(fleet, directory)
    problems = multikueue.check(stack, fleet, found) + checkpoint_peers.check(stack, fleet, found)
    if problems:
        raise SpecError(problems, source)


def pending_capacity(fleet: Fleet) -> list[str]:
    """Pools whose reservation / capacity block is still to buy (written by `gpufleet capacity apply`)."""
    return [f"clusters[{ci}].node_pools[{pi}].capacity.id ({cluster.name}/{pool.name})"
            for ci, cluster in enumerate(fleet.clusters) for pi, pool in enumerate(cluster.pools)
            if pool.spec.capacity.id == PENDING_ID]


def display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)
