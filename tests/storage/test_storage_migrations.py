"""Migrations: yoyo runner over top-level migrations/<db>/, additive-only rule enforced on every file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from kodiai.storage.additive import check_additive_statement, check_migration_file
from kodiai.storage.migrations import (
    MIGRATIONS_DIR,
    MigrationError,
    apply_migrations,
    migration_status,
)

ALL_MIGRATION_FILES = sorted(
    p for p in MIGRATIONS_DIR.glob("**/*") if p.is_file() and p.name != "README.md" and "__pycache__" not in p.parts
)


def test_migrations_dir_is_the_top_level_folder() -> None:
    assert MIGRATIONS_DIR.name == "migrations"
    assert (MIGRATIONS_DIR / "telemetry").is_dir() and (MIGRATIONS_DIR / "knowledge").is_dir()


@pytest.mark.parametrize("path", ALL_MIGRATION_FILES, ids=lambda p: str(p.relative_to(MIGRATIONS_DIR)))
def test_every_migration_file_is_additive_only(path: Path) -> None:
    """The build fails if any migration drops, renames or rewrites anything (every db folder, every file)."""
    assert check_migration_file(path) == []


@pytest.mark.parametrize(
    "sql",
    [
        "DROP TABLE executions",
        "DROP INDEX IF EXISTS idx_executions_repo",
        "ALTER TABLE executions RENAME TO executions_old",
        "ALTER TABLE executions RENAME COLUMN model TO model_name",
        "ALTER TABLE executions DROP COLUMN model",
        "UPDATE executions SET model = 'x'",
        "DELETE FROM executions WHERE id < 5",
        "INSERT INTO executions_new SELECT * FROM executions",
        "CREATE TABLE IF NOT EXISTS executions_new AS SELECT * FROM executions",
        "ALTER TABLE executions ADD COLUMN region TEXT NOT NULL",
        "ALTER TABLE executions ADD COLUMN uid INTEGER UNIQUE",
        "REPLACE INTO executions (id) VALUES (1)",
        "PRAGMA writable_schema = ON",
        "CREATE TABLE t (id INTEGER)",
        "CREATE INDEX idx_x ON executions(model)",
        "CREATE TRIGGER trg AFTER INSERT ON executions BEGIN DELETE FROM executions; END",
        "-- harmless comment\nDROP TABLE findings",
    ],
)
def test_checker_rejects_destructive_statements(sql: str) -> None:
    """A check that cannot fail is a defect: each destructive pattern is reported."""
    assert check_additive_statement(sql), sql


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE TABLE IF NOT EXISTS x (id INTEGER PRIMARY KEY, name TEXT NOT NULL, "
        "parent INTEGER REFERENCES y(id) ON DELETE CASCADE)",
        "CREATE UNIQUE INDEX IF NOT EXISTS idx_x ON x(name) WHERE name IS NOT NULL",
        "ALTER TABLE retrieval_quality ADD COLUMN confident_count INTEGER",
        "ALTER TABLE retrieval_quality ADD COLUMN mode TEXT NOT NULL DEFAULT 'drop'",
        "CREATE TABLE IF NOT EXISTS audit (updated_at TEXT, deleted INTEGER DEFAULT 0)",
    ],
)
def test_checker_accepts_additive_statements(sql: str) -> None:
    assert check_additive_statement(sql) == []


def test_python_migration_with_arbitrary_code_is_rejected(tmp_path: Path) -> None:
    bad = tmp_path / "0003_bad.py"
    bad.write_text("from yoyo import step\nsteps = [step('DROP TABLE executions')]\n")
    assert check_migration_file(bad)
    sneaky = tmp_path / "0004_sneaky.py"
    sneaky.write_text(
        "from kodiai.storage.additive import AddColumn, add_column_steps\n"
        "steps = add_column_steps(AddColumn('t', 'c', 'TEXT NOT NULL'))\n"
    )
    assert check_migration_file(sneaky)
    rollback = tmp_path / "0005_x.rollback.sql"
    rollback.write_text("DROP TABLE x;")
    assert check_migration_file(rollback)


def _table_columns(path: Path, table: str) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
    finally:
        conn.close()


@pytest.mark.parametrize("name", ["telemetry", "knowledge"])
def test_empty_file_migrates_and_second_run_is_noop(tmp_path: Path, name: str) -> None:
    path = tmp_path / "sub" / f"{name}.db"
    applied = apply_migrations(path, name)
    assert applied == [m.id for m in migration_status(path, name)]
    assert applied == sorted(applied) and len(applied) >= 2
    assert apply_migrations(path, name) == []
    status = migration_status(path, name)
    assert all(s.applied and s.applied_at for s in status)
    ident, ok, when = status[0]
    assert ident == applied[0] and ok and when


def test_status_of_missing_file_is_all_pending_and_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "nope.db"
    status = migration_status(path, "telemetry")
    assert status and not any(s.applied for s in status)
    assert not path.exists()


def test_threshold_method_is_added_on_empty_db(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    apply_migrations(path, "telemetry")
    columns = _table_columns(path, "retrieval_quality")
    assert columns.index("threshold_method") == columns.index("language_match_ratio") + 1


def test_order_is_by_id_so_0100_runs_after_0002_and_other_dbs_can_use_the_runner(tmp_path: Path) -> None:
    """Another database (e.g. jobs) with its own folder uses the same runner; ids sort 0001 < 0002 < 0010 < 0100."""
    root = tmp_path / "migrations"
    folder = root / "jobs"
    folder.mkdir(parents=True)
    (folder / "0100_later.sql").write_text("ALTER TABLE log ADD COLUMN step3 TEXT;")
    (folder / "0001_base.sql").write_text(
        "CREATE TABLE IF NOT EXISTS log (id INTEGER PRIMARY KEY, step1 TEXT);"
    )
    (folder / "0010_mid.sql").write_text("ALTER TABLE log ADD COLUMN step2b TEXT;")
    (folder / "0002_next.sql").write_text("ALTER TABLE log ADD COLUMN step2 TEXT;")
    db = tmp_path / "jobs.db"
    assert apply_migrations(db, "jobs", migrations_dir=root) == [
        "0001_base",
        "0002_next",
        "0010_mid",
        "0100_later",
    ]
    assert _table_columns(db, "log") == ["id", "step1", "step2", "step2b", "step3"]
    (folder / "0101_more.sql").write_text("CREATE INDEX IF NOT EXISTS idx_log_step1 ON log(step1);")
    assert apply_migrations(db, "jobs", migrations_dir=root) == ["0101_more"]


def test_failed_migration_is_reported_and_not_marked(tmp_path: Path) -> None:
    root = tmp_path / "migrations"
    (root / "jobs").mkdir(parents=True)
    (root / "jobs" / "0001_base.sql").write_text("CREATE TABLE IF NOT EXISTS log (id INTEGER PRIMARY KEY);")
    (root / "jobs" / "0002_bad.sql").write_text("ALTER TABLE missing_table ADD COLUMN x TEXT;")
    db = tmp_path / "jobs.db"
    with pytest.raises(MigrationError, match="missing_table"):
        apply_migrations(db, "jobs", migrations_dir=root)
    assert [s.applied for s in migration_status(db, "jobs", migrations_dir=root)] == [True, False]


def test_unknown_database_name_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(MigrationError, match="no migrations folder"):
        apply_migrations(tmp_path / "x.db", "does-not-exist")
