"""SQLite's functions in PostgreSQL (migration ``0000_sqlite_compat_functions``) answer as SQLite does, and
the PostgreSQL implementation changes nothing in a statement but its placeholders."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta

import pytest

from kodiai.storage.database import Database, to_pyformat
from kodiai.storage.opening import open_postgres

# Each expression runs on SQLite (in memory) and on PostgreSQL; the answers must be equal.
SAME_ANSWER = [
    "datetime('2024-05-06 10:11:12')",
    "datetime('2024-05-06')",
    "datetime('2024-05-06T10:11')",
    "datetime('2024-05-06 10:11:12.345')",
    "datetime('2024-05-06T10:11:12Z')",
    "datetime('2024-05-06T10:11:12+02:00')",
    "datetime('2024-05-06 10:11:12', '-7 days')",
    "datetime('2024-05-06 10:11:12', '+1 day')",
    "datetime('2024-05-06 10:11:12', '-36 hours')",
    "datetime('2024-05-06 10:11:12', '-90 minutes')",
    "datetime('2024-05-06 10:11:12', '+30 seconds')",
    "datetime('2024-05-06 10:11:12', '-1.5 days')",
    "datetime('2024-05-06 10:11:12', 'start of day')",
    "datetime('2024-05-06 10:11:12', 'start of month', '+1 month', '-1 day')",
    "datetime('2024-05-06 10:11:12', 'start of year')",
    "datetime('2024-05-06 10:11:12', '+2 years')",
    "datetime('2024-05-06 10:11:12', 'weekday 0')",
    "datetime('2024-05-05 10:11:12', 'weekday 0')",
    "datetime('1700000000', 'unixepoch')",
    "datetime('not a date')",
    "datetime('2024-05-06', 'fortnight')",
    "datetime(NULL)",
    "date('2024-05-06 23:59:59')",
    "date('2024-05-06 23:59:59', '+1 second')",
    "date('2024-12-31', 'weekday 3')",
    "strftime('%Y-W%W', '2024-01-01 10:00:00')",
    "strftime('%Y-W%W', '2023-01-01 10:00:00')",
    "strftime('%Y-W%W', '2021-12-31 10:00:00')",
    "strftime('%Y-%m-%dT%H:%M:%fZ', '2024-05-06 10:11:12.345')",
    "strftime('%j %w %s %d/%m %H%M%S %%', '2024-03-10 04:05:06')",
    "strftime('%Y', '2024-05-06', '-1 year')",
    "julianday('2000-01-01 12:00:00')",
    "julianday('2024-05-06') - julianday('2024-05-01')",
    "unixepoch('2024-05-06 00:00:00')",
    "ROUND(2.345, 2)",
    "ROUND(-2.5, 0)",
    "ROUND(1.0 / 3, 4)",
    "IFNULL(NULL, 3)",
    "instr('kodiai', 'dia')",
    "'2031-05-06 03:00:00' >= date('2031-05-06')",
    "'2031-05-05 23:59:59' >= date('2031-05-06')",
]

AGGREGATES = [
    "SELECT SUM(x > 1) FROM t",
    "SELECT SUM(x IS NULL) FROM t",
    "SELECT SUM(x > 100) FROM t",
    "SELECT SUM(NULL = 1) FROM t",
    "SELECT group_concat(x) FROM (SELECT x FROM t WHERE x IS NOT NULL ORDER BY x) s",
    "SELECT group_concat(x, '|') FROM (SELECT x FROM t WHERE x IS NOT NULL ORDER BY x) s",
]


@pytest.fixture(scope="module")
def pg(_postgres_migrated: str) -> Iterator[Database]:
    """One pool for the module: these tests only read (their temp table is dropped at commit)."""
    db = open_postgres(_postgres_migrated, "telemetry")
    yield db
    db.close()


def _sqlite(sql: str) -> object:
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE TABLE t (x INTEGER)")
        conn.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (None,), (3,)])
        return conn.execute(sql).fetchone()[0]
    finally:
        conn.close()


def _same(pg_value: object, sqlite_value: object) -> bool:
    """SQLite has no booleans (1/0) and types integer arithmetic loosely; compare as SQLite would. A bare
    ``date('…')`` literal is a cast to PostgreSQL's date type: its text is SQLite's answer."""
    if isinstance(pg_value, date):
        pg_value = pg_value.isoformat()
    if isinstance(pg_value, bool):
        pg_value = int(pg_value)
    if isinstance(pg_value, float) and isinstance(sqlite_value, float):
        return abs(pg_value - sqlite_value) < 1e-6
    if isinstance(pg_value, int | float) and isinstance(sqlite_value, int | float):
        return float(pg_value) == float(sqlite_value)
    return pg_value == sqlite_value


@pytest.mark.parametrize("expr", SAME_ANSWER)
def test_function_answers_as_sqlite(pg: Database, expr: str) -> None:
    expected = _sqlite(f"SELECT {expr}")
    row = pg.fetch_one(f"SELECT {expr}")
    assert row is not None
    assert _same(row[0], expected), f"{expr}: PostgreSQL {row[0]!r}, SQLite {expected!r}"


@pytest.mark.parametrize("sql", AGGREGATES)
def test_aggregate_answers_as_sqlite(pg: Database, sql: str) -> None:
    with pg.transaction() as tx:
        tx.execute("CREATE TEMP TABLE t (x BIGINT) ON COMMIT DROP")
        tx.execute("INSERT INTO t VALUES (1), (2), (NULL), (3)")
        row = tx.fetch_one(sql)
    assert row is not None
    assert _same(row[0], _sqlite(sql)), sql


def test_now_is_utc_in_sqlites_text_form(pg: Database) -> None:
    row = pg.fetch_one(
        "SELECT datetime('now'), datetime('now', '-7 days'), date('now'), datetime('now', ?)", ("-1 hour",)
    )
    assert row is not None
    now = datetime.now(UTC)
    parsed = datetime.strptime(row[0], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    assert abs(parsed - now) < timedelta(minutes=1)
    assert row[1] == (parsed - timedelta(days=7)).strftime("%Y-%m-%d %H:%M:%S")
    assert str(row[2]) == parsed.strftime("%Y-%m-%d")
    assert row[3] == (parsed - timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S")


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT * FROM t WHERE a = ? AND b = ?", "SELECT * FROM t WHERE a = %s AND b = %s"),
        ("SELECT '?' , \"col?\" FROM t WHERE a = ?", "SELECT '?' , \"col?\" FROM t WHERE a = %s"),
        (
            "SELECT 'it''s ?' WHERE x LIKE 'pull_request.%' AND y = ?",
            "SELECT 'it''s ?' WHERE x LIKE 'pull_request.%%' AND y = %s",
        ),
        (
            "SELECT strftime('%Y-W%W', created_at) -- why? 100%\nFROM t WHERE a = ?",
            "SELECT strftime('%%Y-W%%W', created_at) -- why? 100%%\nFROM t WHERE a = %s",
        ),
        (
            "SELECT /* a ? b */ ? , $$ ? $$, $tag$ ?'$tag$, $1",
            "SELECT /* a ? b */ %s , $$ ? $$, $tag$ ?'$tag$, $1",
        ),
        ("SELECT 5 % 3", "SELECT 5 %% 3"),
    ],
)
def test_placeholders_are_the_only_change(sql: str, expected: str) -> None:
    assert to_pyformat(sql) == expected


def test_a_literal_question_mark_and_percent_reach_postgres_unchanged(pg: Database) -> None:
    assert pg.fetch_one("SELECT '?', 'a%b', ? || '%'", ("x",)) == ("?", "a%b", "x%")


def test_a_sqlite_library_too_old_for_the_portable_sql_is_refused_by_name() -> None:
    from kodiai.storage.database import MIN_SQLITE, check_sqlite_version

    check_sqlite_version(MIN_SQLITE)
    check_sqlite_version(sqlite3.sqlite_version_info)  # this host's library is new enough
    with pytest.raises(RuntimeError, match=r"SQLite 3\.34\.1 is too old: Kodiai needs 3\.35\.0"):
        check_sqlite_version((3, 34, 1))
