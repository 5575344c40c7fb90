"""Read FOCUS 1.x exports (CSV, Parquet) into a DuckDB database: one ``charges`` row per export row, with the
columns finance's questions need, typed and checked. Every problem of every file is reported at once (file, row,
column, value, fix) and nothing is kept from a run that had one: files are staged first, then written in one
transaction.

The database keeps what it loaded (``files``, ``charges``) so later queries, or a warehouse holding the same
tables, can ask more; loading a file again replaces its rows. Row numbers count a CSV header as row 1, as a
spreadsheet shows them (blank lines between records are skipped, as the FOCUS examples have them); a Parquet
file's first record is row 1.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

import duckdb

from capacity.actuals import focus
from capacity.csvio import MAX_SHOWN, InputError, RowProblem
from components import catalog
from components.fleet import COST_TAG_KEYS

HOURS_PER = {"Hour": 1.0, "Minute": 1 / 60, "Second": 1 / 3600, "Day": 24.0}  # FOCUS time units of fixed length
NULL = "null"  # how the FOCUS examples spell a null in CSV
SCHEMA = """
CREATE TABLE IF NOT EXISTS files (file VARCHAR PRIMARY KEY, rows BIGINT, size_bytes BIGINT, mtime DOUBLE,
                                  loaded_at TIMESTAMPTZ DEFAULT now());
CREATE TABLE IF NOT EXISTS charges (
    file VARCHAR, row BIGINT, charge_start TIMESTAMPTZ, charge_end TIMESTAMPTZ, month VARCHAR, category VARCHAR,
    effective_cost DOUBLE, billed_cost DOUBLE, currency VARCHAR, cloud VARCHAR, pricing_category VARCHAR,
    resource_id VARCHAR, region VARCHAR, commitment_id VARCHAR, commitment_status VARCHAR, reservation_id VARCHAR,
    reservation_status VARCHAR, consumed_quantity DOUBLE, consumed_unit VARCHAR, team VARCHAR,
    machine_type VARCHAR, gpu VARCHAR, gpus_per_node INTEGER, gpu_hours DOUBLE, paid_gpu_hours DOUBLE,
    cluster VARCHAR);
"""
CLUSTER_TAG = COST_TAG_KEYS[2]  # every gpufleet cluster tags its resources with its name
Progress = Callable[[str, int], None]  # (file, rows) after each file


def norm(name: str) -> str:
    """A machine type as billing text spells it: lower case, Azure's Standard_ prefix dropped, _ and spaces as -."""
    return re.sub(r"[\s_]+", "-", re.sub(r"^standard_", "", name.lower()))


def connect(path: Path) -> duckdb.DuckDBPyConnection:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(path))
    con.execute("SET TimeZone = 'UTC'")
    con.execute(SCHEMA)
    for column, kind in (("paid_gpu_hours", "DOUBLE"), ("cluster", "VARCHAR")):  # databases of the first release
        con.execute(f"ALTER TABLE charges ADD COLUMN IF NOT EXISTS {column} {kind}")
    _machines(con)
    return con


def _machines(con: duckdb.DuckDBPyConnection) -> None:
    rows = [(norm(m.name), m.name, m.cloud.value, m.gpu, m.gpus) for m in catalog.machine_types() if m.gpus]
    con.execute("CREATE OR REPLACE TEMP TABLE machines (norm VARCHAR, name VARCHAR, cloud VARCHAR, gpu VARCHAR, "
                "gpus INTEGER)")
    con.executemany("INSERT INTO machines VALUES (?, ?, ?, ?, ?)", rows)


def _source(path: Path) -> tuple[str, int]:
    """The DuckDB table function reading the file, and the row number of its first record."""
    quoted = "'" + str(path).replace("'", "''") + "'"
    if path.suffix.lower() == ".parquet":
        return f"read_parquet({quoted})", 1
    return f"read_csv({quoted}, all_varchar = true, header = true, skip = 0)", 2


def _kind_problem(path: Path, label: str) -> RowProblem | None:
    if not path.exists():
        return RowProblem(label, None, None, None, "does not exist.", "Check the path of the FOCUS export.")
    if path.is_dir():
        return RowProblem(label, None, None, None, "is a directory.", "Name the export files themselves.")
    if not re.search(r"\.(csv|csv\.gz|parquet)$", path.name.lower()):
        return RowProblem(label, None, None, None, "is neither CSV (.csv, .csv.gz) nor Parquet (.parquet).",
                          "Export FOCUS data as CSV or Parquet, as the clouds write it.")
    return None


def _raw(con: duckdb.DuckDBPyConnection, path: Path, label: str, currency: str | None) -> tuple[dict[str, str], list]:
    """Stage the columns gpufleet reads into TEMP TABLE raw (with _row); their source types, and header problems."""
    reader, first = _source(path)
    try:
        described = con.execute(f"DESCRIBE SELECT * FROM {reader}").fetchall()
    except duckdb.Error as err:
        return {}, [RowProblem(label, None, None, None, f"cannot be read: {str(err).splitlines()[0]}",
                               "Check that it is a complete CSV or Parquet file.")]
    header = {name: kind for name, kind, *_ in described}
    problems = focus.check_header(label, list(header), currency is not None)
    if problems:
        return header, problems
    cols = [c for c in focus.TYPES if c in header]
    select = ", ".join(f'"{c}"' for c in cols)
    con.execute(f"CREATE OR REPLACE TEMP TABLE raw AS SELECT {select}, row_number() OVER () + {first - 1} AS _row "
                f"FROM {reader}")
    return header, []


def _text(column: str, kind: str) -> str:
    """The column as text with FOCUS CSV's 'null' and empty cells as NULL (a MAP of tags as its JSON)."""
    if kind.startswith("MAP"):
        return f'to_json("{column}")::VARCHAR'
    return f"NULLIF(NULLIF(TRIM(\"{column}\"::VARCHAR), ''), '{NULL}')"


def _typed(column: str, header: dict[str, str]) -> str:
    if column not in header:
        return f"NULL::{focus.TYPES[column]}"
    kind = header[column]
    if focus.TYPES[column] == "VARCHAR":
        return _text(column, kind)
    if kind == focus.TYPES[column] or (kind.startswith("TIMESTAMP") and focus.TYPES[column] == "TIMESTAMPTZ"):
        return f'"{column}"::{focus.TYPES[column]}'
    return f"TRY_CAST({_text(column, kind)} AS {focus.TYPES[column]})"


def _cell_problems(con: duckdb.DuckDBPyConnection, label: str, header: dict[str, str]) -> list[RowProblem]:
    checks: list[tuple[str, str, str, str]] = []  # (column, bad-when SQL, message, fix)
    for column, kind in focus.TYPES.items():
        if column not in header or kind == "VARCHAR":
            continue
        what = {"DOUBLE": "a decimal number", "TIMESTAMPTZ": "a date-time in UTC such as 2025-01-01T00:00:00Z"}[kind]
        checks.append((column, f"{_text(column, header[column])} IS NOT NULL AND {_typed(column, header)} IS NULL",
                       f"is not {what}.", f"Write {what} (FOCUS: {column})."))
    for column in ("ChargePeriodStart", "ChargePeriodEnd", "EffectiveCost"):
        checks.append((column, f"{_text(column, header[column])} IS NULL", "is empty; FOCUS does not allow nulls here.",
                       f"Write the {column} of the charge."))
    for column in focus.CHECKED:
        values = focus.allowed(column)
        if column in header and values:
            listed = ", ".join("'" + v + "'" for v in values)
            checks.append((column, f"{_text(column, header[column])} NOT IN ({listed})",
                           f"is not one of {', '.join(values)} (FOCUS 1.2).", f"Write one of {', '.join(values)}."))
    if "Tags" in header and not header["Tags"].startswith("MAP"):
        checks.append(("Tags", f"{_text('Tags', header['Tags'])} IS NOT NULL AND NOT "
                               f"coalesce(json_valid({_text('Tags', header['Tags'])}), false)",
                       "is not a JSON object of tags.", 'Write the tags as JSON, e.g. {"team": "research"}.'))
    counts = con.execute("SELECT " + ", ".join(f"count(*) FILTER (WHERE {bad})" for _, bad, _, _ in checks)
                         + " FROM raw").fetchone()  # one scan; the rows only of the checks that failed
    problems = []
    for (column, bad, message, fix), count in zip(checks, counts, strict=True):
        if count:
            found = con.execute(f"SELECT _row, {_text(column, header[column])} FROM raw WHERE {bad} ORDER BY _row "
                                f"LIMIT {MAX_SHOWN}").fetchall()
            problems += [RowProblem(label, row, column, value, message, fix) for row, value in found]
    return problems


def _insert(con: duckdb.DuckDBPyConnection, label: str, header: dict[str, str], currency: str | None,
            team_tag: str) -> None:
    t = {c: _typed(c, header) for c in focus.TYPES}
    described = [_text(c, header[c]) for c in focus.DESCRIBING if c in header]
    text = f"concat_ws(' ', {', '.join(described)})" if described else "''"
    names = con.execute("SELECT string_agg(regexp_escape(norm), '|' ORDER BY length(norm) DESC) FROM machines"
                        ).fetchone()[0]
    units = " ".join(f"WHEN '{u}' THEN {h} WHEN '{u}s' THEN {h}" for u, h in HOURS_PER.items())
    provider = f"lower(coalesce({t['ProviderName']}, ''))"
    ids = f"coalesce({t['CapacityReservationId']}, {t['CommitmentDiscountId']}, {t['ResourceId']}, '')"
    tags = t["Tags"] if "Tags" not in header or not header["Tags"].startswith("MAP") else _text("Tags", header["Tags"])
    tag_path = '$."' + team_tag.replace('"', '\\"') + '"'
    con.execute(f"""
        INSERT INTO staged
        WITH typed AS (
            SELECT _row, {t['ChargePeriodStart']} AS s, {t['ChargePeriodEnd']} AS e, {t['ChargeCategory']} AS cat,
                   {t['EffectiveCost']} AS ec, {t['BilledCost']} AS bc,
                   {f"'{currency}'" if currency else t['BillingCurrency']} AS cur,
                   CASE WHEN {provider} LIKE '%amazon%' OR {provider} LIKE '%aws%' THEN 'aws'
                        WHEN {provider} LIKE '%google%' THEN 'gcp'
                        WHEN {provider} LIKE '%microsoft%' OR {provider} LIKE '%azure%' THEN 'azure'
                        WHEN {ids} LIKE 'arn:aws%' THEN 'aws'
                        WHEN {ids} LIKE '/subscriptions/%' THEN 'azure'
                        WHEN {ids} LIKE '%projects/%' THEN 'gcp' END AS provider_cloud,
                   {t['PricingCategory']} AS pc, {t['ResourceId']} AS rid, {t['RegionId']} AS region,
                   {t['CommitmentDiscountId']} AS cid, {t['CommitmentDiscountStatus']} AS cst,
                   {t['CapacityReservationId']} AS crid, {t['CapacityReservationStatus']} AS crst,
                   {t['ConsumedQuantity']} AS q, {t['ConsumedUnit']} AS unit,
                   {tags} AS tags, {text} AS said
            FROM raw),
        -- a bill repeats a few descriptions many times: match each distinct one once
        said AS (SELECT said, nullif(regexp_extract(lower(regexp_replace(said, '[\\s_]+', '-', 'g')),
                                                    '(^|[^a-z0-9.])({names})([^a-z0-9]|$)', 2), '') AS mnorm
                 FROM (SELECT DISTINCT said FROM typed)),
        tagged AS (SELECT tags, json_extract_string(tags, '{tag_path}') AS team,
                          json_extract_string(tags, '$."{CLUSTER_TAG}"') AS cluster
                   FROM (SELECT DISTINCT tags FROM typed))
        SELECT '{label.replace("'", "''")}', _row, s, e, strftime(s, '%Y-%m'), cat, ec, bc, cur,
               coalesce(provider_cloud, m.cloud), pc, rid, region, cid, cst, crid, crst, q, unit, team,
               m.name, m.gpu, m.gpus,
               CASE WHEN cat = 'Usage' AND m.gpus IS NOT NULL AND coalesce(cst, '') <> 'Unused'
                         AND coalesce(crst, '') <> 'Unused' THEN q * m.gpus * CASE unit {units} END END,
               CASE WHEN cat = 'Usage' AND m.gpus IS NOT NULL THEN q * m.gpus * CASE unit {units} END END, cluster
        FROM typed LEFT JOIN said USING (said) LEFT JOIN tagged USING (tags)
             LEFT JOIN machines m ON m.norm = said.mnorm
    """)


def _currencies(con: duckdb.DuckDBPyConnection) -> list[RowProblem]:
    """One currency across every file of a run, and that currency USD (the report's figures are USD)."""
    found = con.execute("SELECT currency, file, min(row) FROM staged GROUP BY ALL ORDER BY 2, 3").fetchall()
    currencies = sorted({c for c, _, _ in found if c is not None})
    problems = []
    if len(currencies) > 1:
        problems += [RowProblem(file, row, "BillingCurrency", cur, f"mixes currencies: these exports bill in "
                                f"{', '.join(currencies)}.", "Load exports of one billing currency at a time (the "
                                "figures are not converted).") for cur, file, row in found]
    elif currencies and currencies != ["USD"]:
        problems += [RowProblem(file, row, "BillingCurrency", cur, "is not USD; gpufleet reports US dollars and does "
                                "not convert.", "Export the billing account's data in USD.")
                     for cur, file, row in found]
    problems += [RowProblem(file, row, "BillingCurrency", None, "is empty.", "Write the billing currency (USD).")
                 for cur, file, row in found if cur is None]
    return problems


def _stage(con: duckdb.DuckDBPyConnection, path: Path, key: str, currency: str | None, team_tag: str) -> list:
    """Read one export into TEMP TABLE staged (its problems instead, if any); outside any transaction, so a file
    DuckDB cannot parse leaves the database as it was."""
    label = str(path)
    kind = _kind_problem(path, label)
    if kind:
        return [kind]
    try:
        header, problems = _raw(con, path, label, currency)
        problems = problems or _cell_problems(con, label, header)
        if not problems:
            _insert(con, key, header, currency, team_tag)
    except duckdb.Error as err:
        problems = [RowProblem(label, None, None, None, f"cannot be read: {str(err).splitlines()[0]}",
                               "Check that it is a complete FOCUS CSV or Parquet export.")]
    return problems


def load(con: duckdb.DuckDBPyConnection, paths: Sequence[Path], currency: str | None = None, team_tag: str = "team",
         progress: Progress | None = None) -> list[str]:
    """Load every export; the files' keys in the database (their absolute paths). On any problem an InputError
    with every problem (each file named as given), and the database is left as it was."""
    keys = [str(p.resolve()) for p in paths]
    con.execute("CREATE OR REPLACE TEMP TABLE staged AS SELECT * FROM charges LIMIT 0")
    problems: list[RowProblem] = []
    rows: dict[str, tuple[int, int, float]] = {}
    try:
        for path, key in zip(paths, keys, strict=True):
            found = _stage(con, path, key, currency, team_tag)
            problems += found
            if not found:
                stat = path.stat()
                rows[key] = (con.execute("SELECT count(*) FROM raw").fetchone()[0], stat.st_size, stat.st_mtime)
            if progress:
                progress(str(path), rows.get(key, (0,))[0])
        problems += [] if problems else _currencies(con)
        if problems:
            raise InputError(problems)
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute("DELETE FROM charges WHERE file IN (SELECT unnest(?))", [keys])
            con.execute("INSERT INTO charges SELECT * FROM staged")
            con.executemany("INSERT OR REPLACE INTO files (file, rows, size_bytes, mtime) VALUES (?, ?, ?, ?)",
                            [[k, *v] for k, v in rows.items()])
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    finally:
        con.execute("DROP TABLE IF EXISTS raw")
        con.execute("DROP TABLE IF EXISTS staged")
    return keys
