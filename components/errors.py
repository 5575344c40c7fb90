"""Errors a user can act on: what is wrong, the value, what is allowed, how to fix it, and where."""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass


def did_you_mean(value: str, known: Iterable[str]) -> str | None:
    """The closest known name to a misspelt one, or None when nothing is close."""
    by_lower = {k.lower(): k for k in known}
    match = difflib.get_close_matches(str(value).lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[match[0]] if match else None


def format_path(path: Sequence[str | int]) -> str:
    """('clusters', 1, 'node_pools', 0, 'gpu') -> 'clusters[1].node_pools[0].gpu'."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _known_list(known: Sequence[str], limit: int = 12) -> str:
    shown = ", ".join(known[:limit])
    return shown + (f", ... ({len(known) - limit} more)" if len(known) > limit else "")


@dataclass(frozen=True)
class SpecProblem:
    """One problem in a fleet description."""

    path: str
    message: str
    fix: str = ""

    def render(self, source: str | None = None) -> str:
        where = f"{source}: " if source else ""
        text = f"{where}{self.path}: {self.message}" if self.path else f"{where}{self.message}"
        return f"{text} {self.fix}".rstrip() if self.fix else text


def unknown_name(path: str, kind: str, value: str, known: Sequence[str]) -> SpecProblem:
    """'x' is not a known <kind>. Did you mean 'y'? Known: a, b, c."""
    guess = did_you_mean(value, known)
    hint = f" Did you mean '{guess}'?" if guess else ""
    return SpecProblem(path, f"{value!r} is not a known {kind}.{hint} Known: {_known_list(list(known))}.")


@dataclass
class SpecError(Exception):
    """Every problem found in one fleet description; raised before any resource is registered."""

    problems: list[SpecProblem]
    source: str | None = None

    def __post_init__(self) -> None:
        super().__init__(self.render())

    def render(self) -> str:
        lines = [p.render(self.source) for p in self.problems]
        head = f"{len(lines)} problem(s) in the fleet description" + (f" {self.source}" if self.source else "")
        return head + ":\n" + "\n".join(f"  - {line}" for line in lines)

    def __str__(self) -> str:
        return self.render()


def duplicates(path: str, kind: str, names: Iterable[str]) -> Iterator[SpecProblem]:
    """A problem per name given more than once (``kind`` names what they are: "node pool", "receiver")."""
    for name, count in Counter(names).items():
        if count > 1:
            yield SpecProblem(path, f"{kind} name {name!r} is used {count} times.", "Give each a unique name.")
