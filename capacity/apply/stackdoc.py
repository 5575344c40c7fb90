"""A stack file read for editing: comments, key order, quoting and flow style survive a write.

ruamel.yaml's round-trip mode keeps what a reviewer sees; the indentation matches the example stacks
(mappings by 2, sequences by 4 with the dash at 2), so an unchanged file is written back byte for byte.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap

from components.errors import SpecError, SpecProblem
from components.fleet import Fleet
from components.validate import resolve
from stacks.config import CONFIG_KEY


def _yaml() -> YAML:
    y = YAML()
    y.preserve_quotes = True
    y.width = 4096
    y.indent(mapping=2, sequence=4, offset=2)
    return y


@dataclass
class StackDoc:
    """One stack file: its text as read, the editable document, and the fleet it resolves to."""

    path: Path
    text: str
    doc: Any
    fleet: Fleet
    draft: bool = False  # a new file (text is empty): its header replaces the source stack's
    header: str = ""

    @classmethod
    def read(cls, path: Path) -> StackDoc:
        text = path.read_text(encoding="utf-8")
        doc = _yaml().load(text)
        fleet = resolve(plain(fleet_of(doc)), str(path))
        return cls(path, text, doc, fleet)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def stack(self) -> str:
        return self.path.name[len("Pulumi."):-len(".yaml")]

    def fleet_map(self) -> CommentedMap:
        return fleet_of(self.doc)

    def dump(self) -> str:
        out = io.StringIO()
        _yaml().dump(self.doc, out)
        text = out.getvalue()
        if self.header:
            lines = text.splitlines(keepends=True)
            while lines and lines[0].startswith("#"):
                lines.pop(0)
            text = self.header + "".join(lines)
        return text

    def revalidate(self) -> list[str]:
        """The edited document's validation problems (empty when it resolves)."""
        try:
            resolve(plain(self.fleet_map()), str(self.path))
        except SpecError as err:
            return [p.render(str(self.path)) for p in err.problems]
        return []


def fleet_of(doc: Any) -> CommentedMap:
    config = doc.get("config") if isinstance(doc, dict) else None
    fleet = config.get(CONFIG_KEY) if isinstance(config, dict) else None
    if not isinstance(fleet, dict):
        raise SpecError([SpecProblem(f"config.{CONFIG_KEY}", "is missing or not a mapping.")])
    return fleet


def plain(node: Any) -> Any:
    """ruamel's commented containers as plain dicts and lists (what the validator reads)."""
    return json.loads(json.dumps(node))


def flow_map(values: dict[str, Any]) -> CommentedMap:
    """A mapping written on one line, like `nodes: {min: 0, max: 4}` in the example stacks."""
    out = CommentedMap(values)
    out.fa.set_flow_style()
    return out
