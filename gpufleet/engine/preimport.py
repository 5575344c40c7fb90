"""Load, before forking, the provider-SDK modules the named stacks' programs will use, so forked children share them
copy-on-write instead of each importing pulumi_aws / pulumi_kubernetes again: those imports are most of a preview's
CPU, and four stacks on two cores pay for every repeat.

The SDKs load their submodules lazily (``aws.ec2`` is a LazyLoader module until an attribute is read), so importing the
package is not enough: every ``sdk.sub.Name`` chain the component source names is resolved here, the same loads the
program would do. Loading only changes when a module is imported, never what a preview registers.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
from collections import Counter
from collections.abc import Iterable
from functools import reduce
from pathlib import Path
from types import ModuleType

from components.errors import SpecError
from components.translators import _MODULES
from stacks.config import load_stack, stack_file

K8S = "components.k8s"


def component_packages(names: Iterable[str], stacks_dir: Path, shared_by: int = 1) -> list[str]:
    """The component packages at least ``shared_by`` of the stacks' programs import: each stack's cloud translator,
    and the Kubernetes add-ons when it has clusters. A stack that does not load is skipped: its preview says why."""
    wanted: Counter[str] = Counter()
    for name in names:
        try:
            _, fleet = load_stack(stack_file(name, stacks_dir))
        except (SpecError, OSError):
            continue
        wanted[_MODULES[fleet.cloud]] += 1
        if fleet.clusters:
            wanted[K8S] += 1
    return sorted(p for p, n in wanted.items() if n >= shared_by)


def sdk_chains(source: str) -> set[tuple[str, ...]]:
    """(sdk module, attribute, ...) for every longest ``alias.a.b`` where ``import pulumi_x as alias`` in ``source``."""
    tree = ast.parse(source)
    aliases = {a.asname or a.name: a.name for node in ast.walk(tree) if isinstance(node, ast.Import)
               for a in node.names if a.name.startswith("pulumi_") and "." not in a.name}
    chains = set()
    for node in ast.walk(tree):
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if parts and isinstance(node, ast.Name) and node.id in aliases:
            chains.add((aliases[node.id], *reversed(parts)))
    return {c for c in chains if not any(len(o) > len(c) and o[:len(c)] == c for o in chains)}  # the longest only


def _resolve(chain: tuple[str, ...]) -> None:
    # a name the installed SDK lacks is left to the program, which reports it where it is used
    with contextlib.suppress(AttributeError):
        reduce(getattr, chain[1:], importlib.import_module(chain[0]))


def preimport(names: Iterable[str], stacks_dir: Path, shared_by: int = 2) -> list[str]:
    """Import the component packages ``shared_by`` stacks need and resolve the SDK names their source uses; the
    packages loaded. The parent imports on one core while the other waits, so by default only what two or more
    stacks share is worth it: a cloud only one stack uses is imported in its child, in parallel with the others."""
    packages = component_packages(names, stacks_dir, shared_by)
    for package in packages:
        module: ModuleType = importlib.import_module(package)
        for path in sorted(Path(module.__file__ or "").parent.rglob("*.py")):
            for chain in sorted(sdk_chains(path.read_text())):
                _resolve(chain)
    return packages
