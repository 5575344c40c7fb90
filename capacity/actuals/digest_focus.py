"""Digest the FOCUS specification into capacity/data/recorded/focus_spec.json: the column ids each released version
defines (FOCUS 1.x; 0.5 only to recognise an export of it), each 1.2 column's feature level, and the spec's own
worked commitment-discount examples (their CSV rows and the utilisation the spec text states for each).

    python -m capacity.actuals.digest_focus PATH/TO/FOCUS_Spec.git > capacity/data/recorded/focus_spec.json

PATH is a git clone (bare is enough) of https://github.com/FinOps-Open-Cost-and-Usage-Spec/FOCUS_Spec; the files
are read at the pinned tags with ``git show``, never from a working tree.
"""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from datetime import date

REPOSITORY = "FinOps-Open-Cost-and-Usage-Spec/FOCUS_Spec"
PIN = "v1.2"
VERSIONS = {"0.5": "v0.5", "1.0": "v1.0", "1.1": "v1.1", "1.2": "v1.2"}
# (CSV example, the markdown that states its utilisation, how to find the statement in it)
EXAMPLES_DIR = "specification/data/"
SCENARIOS_MD = "specification/appendix/commitment_discounts/commitment_discounts.md"
FLEXIBILITY_MD = "specification/appendix/examples/commitment_discount_flexibility_examples/"


def show(repo: str, tag: str, path: str = "") -> str:
    return subprocess.run(["git", "--git-dir", repo, "show", f"{tag}:{path}"], capture_output=True, text=True,
                          check=True).stdout


def files(repo: str, tag: str, under: str) -> list[str]:
    out = subprocess.run(["git", "--git-dir", repo, "ls-tree", "-r", "--name-only", tag, under],
                         capture_output=True, text=True, check=True).stdout
    return sorted(out.split())


def section(markdown: str, title: str) -> str:
    """The first non-empty line after the heading ``## title``."""
    found = re.search(rf"^##+ {re.escape(title)}\s*\n+(.+)$", markdown, re.MULTILINE)
    return found.group(1).strip() if found else ""


def constraint(markdown: str, name: str) -> str:
    found = re.search(rf"^\|\s*{re.escape(name)}\s*\|\s*([^|]+?)\s*\|", markdown, re.MULTILINE)
    return found.group(1) if found else ""


def columns(repo: str, tag: str) -> dict[str, dict[str, str]]:
    """Column id -> its feature level and the version it was introduced in, from every column page of the tag
    (0.5 keeps them under dimensions/ and metrics/, 1.x under columns/)."""
    out: dict[str, dict[str, str]] = {}
    for path in files(repo, tag, "specification"):
        if not re.match(r"specification/(columns|dimensions|metrics)/[a-z]+\.md$", path):
            continue
        text = show(repo, tag, path)
        column = section(text, "Column ID")
        if column:
            out[column] = {"feature_level": constraint(text, "Feature level"),
                           "introduced": section(text, "Introduced (version)"), "path": path,
                           "allowed": allowed_values(text)}
    return dict(sorted(out.items()))


def allowed_values(markdown: str) -> list[str]:
    """The Value column of the table after "Allowed values:" (empty when the column takes any value)."""
    found = re.search(r"^Allowed values:\s*\n+((?:\|.*\n?)+)", markdown, re.MULTILINE)
    if not found:
        return []
    lines = found.group(1).splitlines()
    if lines[0].split("|")[1].strip() != "Value":  # e.g. ServiceSubcategory's (category, subcategory) table
        return []
    return [cell for line in lines[2:] if line.count("|") > 2 and (cell := line.split("|")[1].strip())]


def rows(text: str) -> list[dict[str, str]]:
    """The example's records as the file spells them (blank lines between records skipped, 'null' kept)."""
    return [r for r in csv.DictReader(io.StringIO(text)) if any(v.strip() for v in r.values())]


def stated_utilisations(repo: str) -> dict[str, tuple[float, str, str]]:
    """CSV path -> (the utilisation the spec states, the markdown that states it, the sentence)."""
    stated: dict[str, tuple[float, str, str]] = {}
    text = show(repo, PIN, SCENARIOS_MD)
    for heading in re.finditer(r"^#### Scenario #(\d+): (.*\((\d+)% utilization[^)]*\))\s*$", text, re.MULTILINE):
        link = re.search(r"\[CSV Example\]\(/(specification/data/[^)]+)\)", text[heading.end():])
        if link:
            stated[link.group(1)] = (int(heading.group(3)) / 100, SCENARIOS_MD, heading.group(2))
    for path in files(repo, PIN, FLEXIBILITY_MD):
        md = show(repo, PIN, path)
        title = re.search(r"^# ((\d+)% utilization.*)$", md, re.MULTILINE)
        link = re.search(r"\[CSV Example\]\(/(specification/data/[^)]+)\)", md)
        if title and link:
            stated[link.group(1)] = (int(title.group(2)) / 100, path, title.group(1))
    return stated


def time_units(repo: str) -> list[str]:
    """The time-based unit names of the Unit Format attribute (the table under "Time")."""
    text = show(repo, PIN, "specification/attributes/unit_format.md")
    table = re.search(r"^\| Time\s*\|\s*\n\|[:-]+\|\s*\n((?:\|.*\|\s*\n)+)", text, re.MULTILINE)
    return [unit for line in table.group(1).splitlines() if (unit := line.strip("| \t"))] if table else []


def main(repo: str) -> None:
    commits = {tag: subprocess.run(["git", "--git-dir", repo, "rev-parse", f"{tag}^{{commit}}"], capture_output=True,
                                   text=True, check=True).stdout.strip() for tag in VERSIONS.values()}
    examples = [{"path": path, "utilization": value, "stated_in": md, "statement": sentence,
                 "rows": rows(show(repo, PIN, path))}
                for path, (value, md, sentence) in sorted(stated_utilisations(repo).items())]
    purchases = [{"path": path, "rows": rows(show(repo, PIN, path))}
                 for path in files(repo, PIN, EXAMPLES_DIR + "commitment_discount_scenarios")
                 if "purchase_scenario" in path]
    digest = {
        "source": {"repository": REPOSITORY, "tag": PIN, "commit": commits[PIN], "generated": date.today().isoformat(),
                   "tags": {version: {"tag": tag, "commit": commits[tag]} for version, tag in VERSIONS.items()}},
        "columns": {version: columns(repo, tag) for version, tag in VERSIONS.items()},
        "time_units": time_units(repo),
        "examples": examples,
        "purchase_examples": purchases,  # no utilisation stated; scenario 2 spells an hour 30 (tests: a bad file)
    }
    json.dump(digest, sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
