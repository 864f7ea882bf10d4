"""The PostgreSQL forms of the migrations (``DATABASE_URL``): one id per change on both dialects, the same
tables and columns, applied once, and SQLite's functions answering as SQLite does."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from kodiai.storage.additive import check_additive_statement
from kodiai.storage.migrations import (
    DATABASE_NAMES,
    MIGRATIONS_DIR,
    MigrationError,
    apply_migrations,
    apply_postgres_migrations,
    load_migrations,
    load_postgres_migrations,
    postgres_migration_status,
)
from kodiai.storage.opening import open_postgres

PG = MIGRATIONS_DIR / "postgresql"


@pytest.mark.parametrize("name", DATABASE_NAMES)
def test_every_migration_has_a_postgres_form_with_the_same_id(name: str) -> None:
    sqlite_ids = [m.id for m in load_migrations(name)]
    pg_ids = [m.id for m in load_migrations(f"postgresql/{name}")]
    assert pg_ids == sqlite_ids


def test_table_and_index_names_do_not_clash_in_one_postgres_database() -> None:
    """The three SQLite files become one PostgreSQL database: every table and index name must be unique."""
    import re

    names: list[str] = []
    for path in sorted(PG.glob("*/*.sql")):
        names += re.findall(r"(?:TABLE|INDEX) IF NOT EXISTS (\w+)", path.read_text(), re.I)
    assert len(names) == len(set(names)) > 30


def test_postgres_checker_allows_new_functions_but_not_replacing_or_dropping_them() -> None:
    body = "CREATE FUNCTION f(a text) RETURNS text LANGUAGE sql AS $$ SELECT replace(a, 'x', 'y') $$"
    assert check_additive_statement(body, postgres=True) == []
    assert check_additive_statement(body)  # not in a SQLite migration
    assert check_additive_statement(body.replace("CREATE", "CREATE OR REPLACE"), postgres=True)
    assert check_additive_statement("DROP FUNCTION f(text)", postgres=True)
    assert (
        check_additive_statement("CREATE AGGREGATE sum(boolean) (SFUNC = g, STYPE = bigint)", postgres=True)
        == []
    )


def _columns_sqlite(path: Path) -> dict[str, list[str]]:
    conn = sqlite3.connect(path)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {
            t: [r[1] for r in conn.execute(f'PRAGMA table_info("{t}")')]
            for t in tables
            if not t.startswith(("_yoyo", "yoyo", "sqlite_"))
        }
    finally:
        conn.close()


def test_empty_database_migrates_to_the_same_tables_and_columns_as_sqlite(
    tmp_path: Path, empty_postgres_url: str
) -> None:
    """Operators' SQL names tables and columns: PostgreSQL has exactly SQLite's, in the same order."""
    applied = [i for name in DATABASE_NAMES for i in apply_postgres_migrations(empty_postgres_url, name)]
    assert applied[0] == "0000_sqlite_compat_functions"
    assert len(applied) == len(set(applied)) == 1 + sum(len(load_migrations(n)) for n in DATABASE_NAMES)
    expected: dict[str, list[str]] = {}
    for name in DATABASE_NAMES:
        apply_migrations(tmp_path / f"{name}.db", name)
        expected |= _columns_sqlite(tmp_path / f"{name}.db")
    db = open_postgres(empty_postgres_url, "telemetry")
    try:
        got = {t: [c for c, _ in db.columns(t)] for t in expected}
    finally:
        db.close()
    assert got == expected
    for name in DATABASE_NAMES:
        assert apply_postgres_migrations(empty_postgres_url, name) == []
        status = postgres_migration_status(empty_postgres_url, name)
        assert [s.id for s in status] == [m.id for m in load_postgres_migrations(name)]
        assert all(s.applied and s.applied_at for s in status)


def test_a_failed_postgres_migration_is_reported_without_the_password(
    tmp_path: Path, empty_postgres_url: str
) -> None:
    root = tmp_path / "migrations"
    (root / "postgresql" / "common").mkdir(parents=True)
    (root / "postgresql" / "jobs").mkdir(parents=True)
    (root / "postgresql" / "jobs" / "0001_bad.sql").write_text("ALTER TABLE missing_table ADD COLUMN x TEXT;")
    with pytest.raises(MigrationError, match="missing_table"):
        apply_postgres_migrations(empty_postgres_url, "jobs", migrations_dir=root)
    assert [
        s.applied for s in postgres_migration_status(empty_postgres_url, "jobs", migrations_dir=root)
    ] == [False]
    secret = empty_postgres_url.replace("kodiai_test@", "kodiai_test:hunter2@").replace("/t_", "/missing_")
    with pytest.raises(MigrationError) as caught:
        apply_postgres_migrations(secret, "jobs", migrations_dir=root)
    assert "hunter2" not in str(caught.value) and "127.0.0.1" in str(caught.value)
