"""Facts derived from C/C++ sources and Dockerfiles (pure functions; ``scripts/refresh_upstream.py`` feeds them the
files). What DCGM's command-line client prints and accepts is defined in its C++ source, not in a schema, so the
layer keeps exactly the facts its health watcher relies on:

- ``#define NAME "text"`` / ``#define NAME 123`` values and ``NAME = 10,`` enum members, by name;
- the string a function returns per constant it compares with (``if (x == CONST) return "Text";``);
- the TCLAP flags (short, long) a function declares (``TCLAP::SwitchArg v("c", "check", ...)``) and the characters
  it switches on (``case 'a':``, a flag's letters);
- the JSON keys an output class writes (``json["value"] = ...``);
- a Dockerfile's base image, the apt packages it installs, ENTRYPOINT, CMD and EXPOSEd ports.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any


def _missing(kind: str, wanted: Iterable[str], found: dict[str, Any]) -> None:
    missing = [n for n in wanted if n not in found]
    if missing:
        raise KeyError(f"no {kind} {', '.join(missing)} in the file")


def c_defines(text: str, names: Iterable[str]) -> dict[str, str]:
    """The value of each named ``#define`` (a string's text without its quotes, or the number as written)."""
    found = {m.group(1): m.group(2) if m.group(2) is not None else m.group(3)
             for m in re.finditer(r'^#define\s+(\w+)\s+(?:"([^"]*)"|(-?\d+))\s*(?:/[/*].*)?$', text, re.MULTILINE)}
    wanted = list(names)
    _missing("#define", wanted, found)
    return {n: found[n] for n in wanted}


def c_enum_values(text: str, names: Iterable[str]) -> dict[str, int]:
    """The value of each named enum member written ``NAME = <integer>,``."""
    found = {m.group(1): int(m.group(2)) for m in re.finditer(r"^\s*(\w+)\s*=\s*(-?\d+)\s*,", text, re.MULTILINE)}
    wanted = list(names)
    _missing("enum member", wanted, found)
    return {n: found[n] for n in wanted}


def cpp_body(text: str, function: str) -> str:
    """The body (between its outer braces) of the function defined as ``<type> Class::function(...)`` or
    ``<type> function(...)``; KeyError when the file defines no such function."""
    m = re.search(rf"^[\w:<>&* ]*\b{re.escape(function)}\s*\([^;{{]*\)\s*(?:const\s*)?\{{", text, re.MULTILINE)
    if not m:
        raise KeyError(f"no function {function} defined in the file")
    depth, start = 1, m.end()
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start:i]
    raise ValueError(f"function {function}: unbalanced braces")


def cpp_returns(text: str, function: str) -> dict[str, str]:
    """Constant -> the string literal ``function`` returns when its argument equals that constant."""
    body = cpp_body(text, function)
    return dict(re.findall(r'==\s*(\w+)\s*\)\s*return\s+"([^"]*)"\s*;', body))


def cpp_char_cases(text: str, function: str) -> list[str]:
    """The characters ``function`` switches on (``case 'a':``), in order: a flag's accepted letters."""
    return re.findall(r"^\s*case '(.)':", cpp_body(text, function), re.MULTILINE)


def tclap_args(text: str, function: str) -> list[dict[str, str]]:
    """The flags ``function`` declares with TCLAP (``TCLAP::ValueArg<T> name("s", "long", ...)``), short and long
    names without dashes ("" when a flag has no short name), in declaration order."""
    body = cpp_body(text, function)
    return [{"short": s, "long": long_} for s, long_ in
            re.findall(r'TCLAP::\w+(?:<[^>]*>)?\s+\w+\(\s*"([^"]*)",\s*"([^"]*)"', body)]


def json_subscripts(text: str) -> list[str]:
    """The keys a jsoncpp writer subscripts (``json["body"]``, ``jsonChild["value"]``)."""
    return sorted(set(re.findall(r'\bjson\w*\["(\w+)"\]', text)))


def _exec_form(value: str) -> list[str]:
    value = value.strip()
    return list(json.loads(value)) if value.startswith("[") else ["/bin/sh", "-c", value]


def dockerfile_facts(text: str) -> dict[str, Any]:
    """Base image, apt packages (without ``=version``), ENTRYPOINT and CMD (exec form), EXPOSEd ports, and the
    default of each ARG that has one (its first definition: the versions a build installs)."""
    joined = re.sub(r"\\\n", " ", text)
    instructions = [(m.group(1).upper(), m.group(2)) for m in
                    re.finditer(r"^\s*([A-Za-z]+)\s+(.*)$", joined, re.MULTILINE) if not m.group(0).lstrip()
                    .startswith("#")]
    packages: list[str] = []
    for kind, arg in instructions:
        if kind == "RUN":
            for install in re.findall(r"apt-get install ([^&|;]*)", arg):
                packages += [w.split("=")[0] for w in install.split() if not w.startswith("-")]
    last = {kind: arg for kind, arg in instructions}
    args: dict[str, str] = {}
    for kind, arg in instructions:
        if kind == "ARG" and "=" in arg:
            name, value = arg.split("=", 1)
            args.setdefault(name.strip(), value.strip().strip('"'))
    return {"from": [arg.split()[0] for kind, arg in instructions if kind == "FROM"],
            "apt": packages,
            "entrypoint": _exec_form(last["ENTRYPOINT"]) if "ENTRYPOINT" in last else [],
            "cmd": _exec_form(last["CMD"]) if "CMD" in last else [],
            "expose": sorted({int(p.split("/")[0]) for kind, arg in instructions if kind == "EXPOSE"
                              for p in arg.split()}),
            "args": args}
