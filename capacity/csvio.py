"""Read and write the planner's CSV files. Bad input becomes an InputError a user can act on, never a traceback.

Row numbers count the header as row 1, as a spreadsheet shows them.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from components.errors import did_you_mean

T = TypeVar("T", bound=BaseModel)
MAX_SHOWN = 40
MAX_BYTES = 200 * 1024 * 1024
csv.field_size_limit(1024 * 1024)


@dataclass(frozen=True)
class RowProblem:
    """One bad cell (or header, or file): where, the value, what is allowed, how to fix."""

    file: str
    row: int | None
    column: str | None
    value: str | None
    message: str
    fix: str = ""

    def render(self) -> str:
        where = self.file
        if self.row is not None:
            where += f": row {self.row}"
        if self.column is not None:
            where += f", column {self.column}"
        value = f" {self.value!r}" if self.value is not None else ""
        text = f"{where}:{value} {self.message}"
        return f"{text} {self.fix}".rstrip()


class InputError(Exception):
    """Every problem found in one input file (or a set of them)."""

    def __init__(self, problems: Sequence[RowProblem]):
        self.problems = list(problems)
        super().__init__(self.render())

    def render(self) -> str:
        shown = [p.render() for p in self.problems[:MAX_SHOWN]]
        more = len(self.problems) - len(shown)
        if more > 0:
            shown.append(f"... and {more} more problem(s)")
        head = f"{len(self.problems)} problem(s) in the input"
        return head + ":\n" + "\n".join(f"  - {line}" for line in shown)

    def __str__(self) -> str:
        return self.render()


_MESSAGES: dict[str, str] = {
    "missing": "is empty",
    "float_parsing": "is not a number",
    "float_type": "is not a number",
    "int_parsing": "is not a whole number",
    "int_from_float": "is not a whole number",
    "bool_parsing": "is not true or false",
    "finite_number": "is not a finite number",
    "string_pattern_mismatch": "is not in the expected form",
    "string_too_short": "is empty",
    "string_too_long": "is too long",
    "enum": "is not one of the allowed values",
    "greater_than_equal": "is too small",
    "greater_than": "is too small",
    "less_than_equal": "is too large",
}


def _describe(model: type[BaseModel], column: str) -> str:
    field = model.model_fields.get(column)
    if field is None:
        return ""
    if field.description:
        return field.description
    for meta in field.metadata:
        text = getattr(meta, "description", None)
        if text:
            return str(text)
    return ""


def _problem(file: str, row: int, model: type[BaseModel], error: Mapping[str, Any],
             raw: Mapping[str, Any]) -> RowProblem:
    column = str(error["loc"][0]) if error.get("loc") else None
    value = raw.get(column) if column else None
    kind = str(error.get("type", ""))
    message = _MESSAGES.get(kind, str(error.get("msg", "is not allowed")).rstrip("."))
    allowed = _describe(model, column) if column else ""
    if kind == "enum":
        expected = [str(e.value) for e in model.model_fields[column].annotation]  # type: ignore[union-attr]
        guess = did_you_mean(str(value), expected)
        hint = f" Did you mean {guess!r}?" if guess else ""
        return RowProblem(file, row, column, None if value is None else str(value),
                          f"is not one of {', '.join(expected)}.{hint}",
                          f"Write one of {', '.join(expected)} in column {column} of row {row}.")
    fix = f"Write {allowed} in column {column} of row {row}." if allowed else f"Correct row {row}."
    return RowProblem(file, row, column, None if value is None else str(value), message + ".", fix)


def _read_text(path: Path, label: str) -> str:
    try:
        if path.stat().st_size > MAX_BYTES:
            raise InputError([RowProblem(label, None, None, None, f"is larger than {MAX_BYTES // 2**20} MiB.",
                                         "Split it, or aggregate rows before planning.")])
        return path.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise InputError([RowProblem(label, None, None, None, "does not exist.",
                                     "Check the path, or create the file (see docs/capacity.md).")]) from None
    except IsADirectoryError:
        raise InputError([RowProblem(label, None, None, None, "is a directory, not a CSV file.",
                                     "Name the CSV file itself.")]) from None
    except UnicodeDecodeError as err:
        raise InputError([RowProblem(label, None, None, None, f"is not UTF-8 text (byte {err.start}).",
                                     "Save it as UTF-8 CSV.")]) from None
    except OSError as err:
        raise InputError([RowProblem(label, None, None, None, f"cannot be read: {err.strerror}.",
                                     "Check the file's permissions.")]) from None


def load_rows(path: Path, model: type[T], label: str | None = None,
              check: Callable[[T, int], Iterable[RowProblem]] | None = None) -> list[T]:
    """Every row of a CSV file as ``model``; raise InputError listing every bad header, row and cell."""
    label = label or str(path)
    return parse_rows(_read_text(path, label), model, label, check)


def parse_rows(text: str, model: type[T], label: str,
               check: Callable[[T, int], Iterable[RowProblem]] | None = None) -> list[T]:
    fields = list(model.model_fields)
    required = [f for f, info in model.model_fields.items() if info.is_required()]
    problems: list[RowProblem] = []
    rows: list[T] = []
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if header is None or not any(h.strip() for h in header):
            raise InputError([RowProblem(label, 1, None, None, "has no header row.",
                                         f"Start the file with the header: {','.join(fields)}")])
        header = [h.strip() for h in header]
        problems.extend(_header_problems(label, header, fields, required))
        if problems:
            raise InputError(problems)
        for record in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in record):
                continue
            if len(record) > len(header):
                problems.append(RowProblem(label, line, None, None,
                                           f"has {len(record)} cells but the header has {len(header)}.",
                                           "Remove the extra cells, or quote values that contain commas."))
                continue
            raw = {h: (record[i].strip() if i < len(record) else "") for i, h in enumerate(header)}
            values = {k: v for k, v in raw.items() if v != "" or k in required}
            try:
                item = model.model_validate(values)
            except ValidationError as err:
                problems.extend(_problem(label, line, model, e, raw) for e in err.errors())
                continue
            if check is not None:
                found = list(check(item, line))
                if found:
                    problems.extend(found)
                    continue
            rows.append(item)
    except csv.Error as err:
        problems.append(RowProblem(label, reader.line_num, None, None, f"is not valid CSV: {err}.",
                                   "Check the quoting on that row."))
    if problems:
        raise InputError(problems)
    return rows


def _header_problems(label: str, header: list[str], fields: list[str], required: list[str]) -> list[RowProblem]:
    out: list[RowProblem] = []
    seen: set[str] = set()
    for name in header:
        if name in seen:
            out.append(RowProblem(label, 1, name, None, "appears twice in the header.", "Keep one of them."))
        seen.add(name)
        if name not in fields:
            guess = did_you_mean(name, fields)
            hint = f" Did you mean {guess!r}?" if guess else ""
            out.append(RowProblem(label, 1, name or "(empty)", None, f"is not a known column.{hint}",
                                  f"Known columns: {', '.join(fields)}."))
    missing = [f for f in required if f not in header]
    if missing:
        out.append(RowProblem(label, 1, None, None, f"lacks the column(s) {', '.join(missing)}.",
                              f"The header must name: {', '.join(required)}."))
    return out


def duplicates(label: str, what: str) -> Callable[[Any, int], Iterable[RowProblem]]:
    """A row check that reports a row whose ``key`` repeats an earlier row's."""
    first: dict[Any, int] = {}

    def check(item: Any, line: int) -> Iterable[RowProblem]:
        key = item.key
        if key in first:
            return [RowProblem(label, line, None, None,
                               f"repeats row {first[key]} ({what} {', '.join(map(str, key))}).",
                               "Merge the two rows into one, or delete one.")]
        first[key] = line
        return []

    return check


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.6f}".rstrip("0").rstrip(".")
    return str(getattr(value, "value", value))


def write_rows(path: Path, columns: Sequence[str], rows: Iterable[BaseModel | Mapping[str, Any]]) -> None:
    """Write rows with a fixed column order (floats to 6 decimals, booleans as true/false)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            data = row.model_dump() if isinstance(row, BaseModel) else row
            writer.writerow([_cell(data[c]) for c in columns])


def write_models(path: Path, model: type[BaseModel], rows: Iterable[BaseModel]) -> None:
    write_rows(path, list(model.model_fields), rows)
