"""The layout shows the architecture (DESIGN.md, Layout): nothing below the CLI imports it, the CLI's top level
stays a handful of modules with its rooms in subpackages, and every source module reads in one sitting."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BELOW_THE_CLI = ("policies", "components", "capacity", "stacks")
PACKAGES = (*BELOW_THE_CLI, "gpufleet")
MAX_LINES = 420


def _modules(package: str) -> list[Path]:
    return sorted(p for p in (ROOT / package).rglob("*.py") if ".venv" not in p.parts)


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


@pytest.mark.parametrize("package", BELOW_THE_CLI)
def test_nothing_below_the_cli_imports_it(package: str) -> None:
    offenders = {str(p.relative_to(ROOT)): sorted(m for m in _imports(p) if m.split(".")[0] == "gpufleet")
                 for p in _modules(package)}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_cli_top_level_is_a_handful_of_modules() -> None:
    top = sorted(p.name for p in (ROOT / "gpufleet").glob("*.py"))
    rooms = sorted(p.name for p in (ROOT / "gpufleet").iterdir() if (p / "__init__.py").exists())
    assert len(top) <= 12, top
    assert {"engine", "review", "checks", "jobs", "netsim", "deploy"} <= set(rooms)
    for room in rooms:  # each room opens with a line that says what it is
        assert ast.get_docstring(ast.parse((ROOT / "gpufleet" / room / "__init__.py").read_text())), room


def test_no_source_module_is_over_the_size_limit() -> None:
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for pkg in PACKAGES for p in _modules(pkg)}
    assert {k: n for k, n in sizes.items() if n > MAX_LINES} == {}
