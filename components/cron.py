"""Kubernetes CronJob schedules, checked before anything is built.

The CronJob controller parses ``spec.schedule`` with robfig/cron v3's standard parser (``cron.ParseStandard``:
https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#schedule-syntax). What it accepts, read from
github.com/robfig/cron v3.0.1 (commit ccba498c397b, 2020-01-03) parser.go and spec.go: five fields (minute 0-59,
hour 0-23, day of month 1-31, month 1-12 or jan-dec, day of week 0-6 or sun-sat, names case-insensitive); each a
comma list of ``*`` / ``?``, a number or name, or a range ``a-b``, each optionally ``/step`` (step >= 1; ``a/step``
runs from a to the field's maximum); or a descriptor (@yearly, @annually, @monthly, @weekly, @daily, @midnight,
@hourly, ``@every <duration>``). A ``TZ=`` / ``CRON_TZ=`` prefix is refused here: Kubernetes rejects it in
``schedule`` and has ``timeZone`` for that."""

from __future__ import annotations

import re

_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
_DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
# (name, low, high, names -> value)
FIELDS: list[tuple[str, int, int, dict[str, int]]] = [
    ("minute", 0, 59, {}), ("hour", 0, 23, {}), ("day of month", 1, 31, {}),
    ("month", 1, 12, {m: i + 1 for i, m in enumerate(_MONTHS)}),
    ("day of week", 0, 6, {d: i for i, d in enumerate(_DAYS)}),
]
DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$")  # Go time.ParseDuration units


def _value(text: str, field: tuple[str, int, int, dict[str, int]]) -> int:
    name, low, high, names = field
    value = names.get(text.lower()) if not text.isdigit() else int(text)
    if value is None:
        raise ValueError(f"{text!r} is not a {name}")
    if not low <= value <= high:
        raise ValueError(f"{name} {value} is outside {low}-{high}")
    return value


def _check_field(text: str, field: tuple[str, int, int, dict[str, int]]) -> None:
    for item in text.split(","):
        base, _, step = item.partition("/")
        if "/" in item and (not step.isdigit() or int(step) < 1):
            raise ValueError(f"step {step!r} in {item!r} is not a whole number >= 1")
        if base in ("*", "?"):
            continue
        low, dash, high = base.partition("-")
        start = _value(low, field)
        if dash and _value(high, field) < start:
            raise ValueError(f"range {base!r} runs backwards")


def problem(schedule: str) -> str | None:
    """Why Kubernetes would refuse this schedule, or None when it is valid."""
    text = schedule.strip()
    if text.startswith(("TZ=", "CRON_TZ=")):
        return "a time zone prefix is not allowed in a CronJob schedule (the CronJob has a timeZone field)"
    if text.startswith("@"):
        if text in DESCRIPTORS or (text.startswith("@every ") and _DURATION.match(text[7:].strip())):
            return None
        return f"unknown descriptor {text.split()[0]!r} (known: {', '.join(DESCRIPTORS)}, @every <duration>)"
    parts = text.split()
    if len(parts) != len(FIELDS):
        return f"it has {len(parts)} field(s); a schedule has {len(FIELDS)}: minute hour day-of-month month day-of-week"
    try:
        for part, field in zip(parts, FIELDS, strict=True):
            _check_field(part, field)
    except ValueError as err:
        return str(err)
    return None
