"""Shape errors of a fleet description (wrong type, out of range, unknown key) in our own words.

pydantic's messages ("Input should be a valid dictionary or instance of Nodes", "Value error, ...") name Python
classes and parser internals a stack author never sees. Each error type becomes: what is wrong, the value given,
what is allowed, and how to write it, at the config path (``clusters[0].node_pools[1].nodes``).
"""

from __future__ import annotations

import re
import types
import typing
from typing import Any

from pydantic import BaseModel

from components.errors import SpecProblem, did_you_mean, format_path
from components.spec import FleetSpec

NAME_PATTERN = "^[a-z]([a-z0-9-]{0,30}[a-z0-9])?$"
PATTERNS = {
    NAME_PATTERN: "must be 1-32 lowercase letters, digits or dashes, starting with a letter and not ending with a "
                  "dash",
    r"^1\.\d{2}$": "must be a Kubernetes minor version, like 1.31",
}
NUMBER_FIX = "Write digits only, without quotes or units,"


def model_at(loc: tuple[str | int, ...]) -> type[BaseModel] | None:
    """The model whose fields sit at ``loc``, walking FleetSpec's annotations."""
    current: Any = FleetSpec
    for part in loc:
        if isinstance(part, int):
            continue
        model = _first_model(current)
        if model is None or part not in model.model_fields:
            return None
        current = model.model_fields[part].annotation
    return _first_model(current)


def _first_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation) if not isinstance(annotation, types.NoneType) else ():
        found = _first_model(arg)
        if found:
            return found
    return None


def describe(value: Any) -> str:
    """A value as the stack author wrote it in YAML."""
    if value is None:
        return "nothing (an empty value)"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"the text {value!r}"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, list):
        return f"a list of {len(value)} item(s)"
    if isinstance(value, dict):
        keys = [str(k) for k in value]
        return "a mapping with key(s) " + ", ".join(keys[:6]) + (", ..." if len(keys) > 6 else "")
    return f"{value!r}"


def _fields(loc: tuple[str | int, ...]) -> list[str]:
    model = model_at(loc)
    return sorted(model.model_fields) if model else []


def from_pydantic(error: Any) -> SpecProblem:
    loc = tuple(error["loc"])
    path = format_path(loc)
    value = error.get("input")
    kind = error["type"]
    ctx = error.get("ctx") or {}
    got = f"; got {describe(value)}."
    if kind == "extra_forbidden":
        known = _fields(loc[:-1])
        guess = did_you_mean(str(loc[-1]), known)
        hint = f" Did you mean '{guess}'?" if guess else ""
        return SpecProblem(path, f"unknown key.{hint} Allowed here: {', '.join(known)}.")
    if kind == "missing":
        return SpecProblem(path, "is required.", "Add it to the stack's gpufleet:fleet config.")
    if kind in ("model_type", "dict_type"):
        model = model_at(loc)
        keys = sorted(model.model_fields) if model else []
        open_ended = model is not None and model.model_config.get("extra") == "allow"
        what = (f"with keys like {', '.join(keys)}" if open_ended else f"with the keys {', '.join(keys)}") if keys \
            else "of names to values"
        where = f"'{loc[-1]}:' and under it" if loc and isinstance(loc[-1], str) else "this item as"
        return SpecProblem(path, f"must be a mapping {what}{got}",
                           f"Write {where} one indented 'key: value' line per setting.")
    if kind == "list_type":
        return SpecProblem(path, f"must be a list{got}", "Write each item on its own line, starting with '- '.")
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return SpecProblem(path, f"must be a whole number{got}", f"{NUMBER_FIX} and no decimal point, like 8.")
    if kind in ("float_parsing", "float_type"):
        return SpecProblem(path, f"must be a number{got}", f"{NUMBER_FIX} like 1200000 or 0.5.")
    if kind in ("bool_parsing", "bool_type"):
        return SpecProblem(path, f"must be true or false{got}", "Write true or false, without quotes.")
    if kind == "string_type":
        return SpecProblem(path, f"must be text{got}", "Write it in quotes.")
    if kind in ("enum", "literal_error"):
        allowed = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
        guess = did_you_mean(str(value), allowed) if isinstance(value, str) else None
        hint = f" Did you mean '{guess}'?" if guess else ""
        return SpecProblem(path, f"{value!r} is not allowed.{hint} Allowed: {', '.join(allowed)}.")
    bounds = {"greater_than_equal": ("at least", "ge"), "greater_than": ("more than", "gt"),
              "less_than_equal": ("at most", "le"), "less_than": ("less than", "lt")}
    if kind in bounds:
        words, key = bounds[kind]
        bound = ctx.get(key)
        shown = int(bound) if isinstance(bound, float) and bound.is_integer() else bound
        return SpecProblem(path, f"must be {words} {shown}{got}")
    if kind == "string_too_short":
        size = ctx.get("min_length", 1)
        return SpecProblem(path, "must not be empty." if size == 1 else f"must have at least {size} characters{got}")
    if kind == "string_too_long":
        return SpecProblem(path, f"must have at most {ctx.get('max_length')} characters{got}")
    if kind == "string_pattern_mismatch":
        pattern = str(ctx.get("pattern", ""))
        return SpecProblem(path, PATTERNS.get(pattern, f"is not in the expected form ({pattern})") + got)
    if kind in ("value_error", "assertion_error"):
        reason = re.sub(r"^(Value error|Assertion failed), ", "", str(error["msg"]))
        return SpecProblem(path, reason.rstrip(".") + ".")
    return SpecProblem(path, _plain(str(error["msg"])) + got)


def _plain(message: str) -> str:
    """Whatever pydantic error type has no wording of ours yet, without its class names."""
    message = re.sub(r" or instance of \w+", "", message).replace("Input should be", "must be")
    return message[0].lower() + message[1:] if message else "is not valid"
