"""Bad FOCUS exports get an error naming the file, row and column, with the value and the fix; no traceback, and
nothing of the run is kept in the database."""

from __future__ import annotations

from pathlib import Path

import duckdb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capacity.actuals import load
from capacity.csvio import InputError
from tests.capacity.focus_files import COLUMNS, DIGEST, charge, run, to_parquet, write_csv

PURCHASE_2 = next(e for e in DIGEST["purchase_examples"] if e["path"].endswith("purchase_scenario_2.csv"))


def _fails(tmp_path: Path, *args: str) -> str:
    result = run(*args, "--db", str(tmp_path / "db.duckdb"))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    return " ".join(result.output.split())


def _kept(tmp_path: Path) -> int:
    with duckdb.connect(str(tmp_path / "db.duckdb")) as con:
        return con.execute("SELECT count(*) FROM charges").fetchone()[0]


def test_the_specs_own_purchase_scenario_2_has_an_hour_30(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "purchase_2.csv", PURCHASE_2["rows"])
    text = _fails(tmp_path, "--focus", str(path), "--currency", "USD")
    # the third record (row 4 counting the header) ends at 2023-02-01T30:00:00Z
    assert f"{path}: row 4, column ChargePeriodEnd: '2023-02-01T30:00:00Z' is not a date-time" in text


def test_missing_columns_are_named_and_a_case_slip_is_pointed_out(tmp_path: Path) -> None:
    rows = [charge("2026-01", 5.0)]
    path = write_csv(tmp_path / "x.csv", rows, [c if c != "EffectiveCost" else "effectivecost" for c in rows[0]])
    text = _fails(tmp_path, "--focus", str(path))
    assert f"{path}: row 1, column EffectiveCost: is missing" in text
    assert "The export has 'effectivecost': column names are case-sensitive" in text
    assert _kept(tmp_path) == 0


def test_billing_currency_missing_needs_the_currency_said(tmp_path: Path) -> None:
    rows = [charge("2026-01", 5.0)]
    path = write_csv(tmp_path / "x.csv", rows, [c for c in rows[0] if c != "BillingCurrency"])
    assert "say the currency with --currency USD" in _fails(tmp_path, "--focus", str(path))
    assert "not USD" in _fails(tmp_path, "--focus", str(path), "--currency", "EUR")


def test_a_focus_0_5_export_is_told_to_export_1_x(tmp_path: Path) -> None:
    header = sorted(DIGEST["columns"]["0.5"])  # every column FOCUS 0.5 defined, none of 1.x's replacements
    path = write_csv(tmp_path / "old.csv", [dict.fromkeys(header, "1")], header)
    text = _fails(tmp_path, "--focus", str(path))
    assert f"{path}: row 1, column AmortizedCost, ChargeType, Region: is a FOCUS 0.5 export" in text
    assert "Export the data again as FOCUS 1.0 or later" in text


def test_mixed_currencies_across_files_name_each_file_and_first_row(tmp_path: Path) -> None:
    usd = write_csv(tmp_path / "usd.csv", [charge("2026-01", 1.0)], COLUMNS)
    eur = write_csv(tmp_path / "eur.csv", [charge("2026-01", 1.0), charge("2026-01", 2.0, BillingCurrency="EUR")],
                    COLUMNS)
    text = _fails(tmp_path, "--focus", str(usd), "--focus", str(eur))
    assert f"{eur.resolve()}: row 3, column BillingCurrency: 'EUR' mixes currencies: these exports bill in EUR, USD" \
        in text
    assert f"{usd.resolve()}: row 2, column BillingCurrency: 'USD' mixes currencies" in text
    assert _kept(tmp_path) == 0  # usd.csv loaded cleanly, yet the run keeps nothing


def test_bad_cells_are_each_named(tmp_path: Path) -> None:
    rows = [charge("2026-01", 1.0), charge("2026-01", "1,5"), charge("2026-01", 1.0, ChargeCategory="Usages"),
            charge("2026-01", 1.0, CommitmentDiscountId="c", CommitmentDiscountStatus="used"),
            charge("2026-01", 1.0, Tags="team=research")]
    path = write_csv(tmp_path / "x.csv", rows, COLUMNS)
    text = _fails(tmp_path, "--focus", str(path))
    assert f"{path}: row 3, column EffectiveCost: '1,5' is not a decimal number" in text
    assert "row 4, column ChargeCategory: 'Usages' is not one of Usage, Purchase, Tax, Credit, Adjustment" in text
    assert "row 5, column CommitmentDiscountStatus: 'used' is not one of Used, Unused" in text
    assert "row 6, column Tags: 'team=research' is not a JSON object of tags" in text
    assert "row 2" not in text


def test_a_good_load_then_a_bad_one_keeps_the_good_rows(tmp_path: Path) -> None:
    good = write_csv(tmp_path / "good.csv", [charge("2026-01", 1.0)], COLUMNS)
    assert run("--focus", str(good), "--db", str(tmp_path / "db.duckdb")).exit_code == 0
    bad = write_csv(tmp_path / "good.csv", [charge("2026-01", "x")], COLUMNS)  # the same file, now broken
    _fails(tmp_path, "--focus", str(bad))
    assert _kept(tmp_path) == 1


def test_not_an_export(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    assert "is neither CSV (.csv, .csv.gz) nor Parquet" in _fails(tmp_path, "--focus", str(tmp_path / "notes.txt"))
    assert "does not exist" in _fails(tmp_path, "--focus", str(tmp_path / "nope.csv"))
    (tmp_path / "empty").mkdir()
    assert "holds no CSV or Parquet export" in _fails(tmp_path, "--focus", str(tmp_path / "empty"))
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 not really")
    assert f"{broken}: cannot be read" in _fails(tmp_path, "--focus", str(broken))


def test_a_parquet_export_names_rows_from_1(tmp_path: Path) -> None:
    path = to_parquet(write_csv(tmp_path / "x.csv", [charge("2026-01", 1.0),
                                                      charge("2026-01", 1.0, ChargeCategory="Refund")], COLUMNS))
    assert f"{path}: row 2, column ChargeCategory: 'Refund' is not one of" in _fails(tmp_path, "--focus", str(path))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.sampled_from(["1", "x", "", "null", "2026-01-01T00:00:00Z", "Usage", "USD", '{"a":1}',
                                          '"', ",", "\n", "é"]), min_size=1, max_size=6), min_size=1, max_size=5))
def test_any_csv_is_loaded_or_refused_cleanly(tmp_path: Path, cells: list[list[str]]) -> None:
    header = ",".join(["ChargePeriodStart", "ChargePeriodEnd", "ChargeCategory", "EffectiveCost", "BillingCurrency",
                       "Tags"][: max(len(r) for r in cells)])
    path = tmp_path / "fuzz.csv"
    path.write_text(header + "\n" + "\n".join(",".join(r) for r in cells) + "\n", encoding="utf-8")
    con = load.connect(tmp_path / "fuzz.duckdb")
    try:
        load.load(con, [path])
    except InputError as err:
        assert err.problems
    finally:
        con.close()
