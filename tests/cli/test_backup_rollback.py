"""Rolling back means older code on a newer schema (docs/operations.md, "Upgrades and rollback").

For every release point of each database (each prefix of its migrations) against the schema of all of
them: the older migration runner finds nothing to apply and does not fail on the ids it does not know,
and a row written the older way (naming only the columns that version had) is accepted, because later
migrations only add tables and nullable or defaulted columns. A backup taken before an upgrade restores
as it was and is then migrated forward again.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from kodiai.maintenance.backup import StorePaths, create_backup, restore_backup
from kodiai.storage.migrations import MIGRATIONS_DIR, apply_migrations, load_migrations

DUMMY = {"INTEGER": 1, "INT": 1, "REAL": 1.0, "BLOB": b"x"}


def older_migrations(tmp_path: Path, db: str, count: int) -> Path:
    """A migrations folder as an older release shipped it: the first ``count`` migrations of ``db``."""
    keep = {m.id for m in load_migrations(db)[:count]}
    root = tmp_path / f"release-{db}-{count}"
    (root / db).mkdir(parents=True)
    for path in (MIGRATIONS_DIR / db).iterdir():
        if path.is_file() and path.stem in keep:
            shutil.copy(path, root / db / path.name)
    return root


ENUM = re.compile(r"(\w+)\s+IN\s*\(\s*'([^']*)'", re.I)


def older_rows(path: Path, tag: str) -> dict[str, dict[str, object]]:
    """One row per table of an older database, naming only its columns, with values its CHECKs accept
    (the first value of each ``col IN ('a', …)``)."""
    conn = sqlite3.connect(path)
    try:
        tables = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "AND name NOT LIKE '%yoyo%'"
        ).fetchall()
        rows = {}
        for table, sql in tables:
            enums = {col: value for col, value in ENUM.findall(sql)}
            rows[table] = {
                c[1]: enums.get(c[1], DUMMY.get(str(c[2]).upper(), f"{table}-{tag}"))
                for c in conn.execute(f'PRAGMA table_info("{table}")')
            }
        return rows
    finally:
        conn.close()


def insert(path: Path, table: str, row: dict[str, object]) -> None:
    conn = sqlite3.connect(path)
    try:
        names = ", ".join(f'"{n}"' for n in row)
        conn.execute(
            f'INSERT OR REPLACE INTO "{table}" ({names}) VALUES ({", ".join("?" for _ in row)})',
            list(row.values()),
        )
        conn.commit()
    finally:
        conn.close()


@pytest.mark.parametrize("db", ["telemetry", "knowledge", "jobs"])
def test_an_older_version_runs_on_the_newest_schema(tmp_path: Path, db: str) -> None:
    head = tmp_path / "head.db"
    applied = apply_migrations(head, db)
    assert len(applied) >= 2
    for count in sorted({1, len(applied) - 1}):  # the first release and the one before the newest
        release = older_migrations(tmp_path, db, count)
        assert apply_migrations(head, db, release) == []  # nothing to do, no error on newer ids
        old = tmp_path / f"old-{count}.db"
        apply_migrations(old, db, release)
        for table, row in older_rows(old, str(count)).items():
            insert(old, table, row)  # a row that release could write...
            insert(head, table, row)  # ...is accepted by the newest schema


def test_a_backup_from_before_an_upgrade_restores_then_migrates_forward(tmp_path: Path) -> None:
    data = tmp_path / "data"
    paths = StorePaths(data / "telemetry.db", data / "knowledge.db", data / "jobs.db", str(data / "memory"))
    release = older_migrations(tmp_path, "telemetry", 1)
    apply_migrations(paths.telemetry, "telemetry", release)  # the older release's database
    create_backup(paths, tmp_path / "before-upgrade", kodiai_version="old")
    applied = apply_migrations(paths.telemetry, "telemetry")  # the upgrade
    report = restore_backup(
        tmp_path / "before-upgrade",
        paths,
        force=True,
        known_migrations=lambda name: [m.id for m in load_migrations(name)],
    )
    assert any(f"{len(applied)} migration(s) newer than the backup" in note for note in report.notes)
    assert apply_migrations(paths.telemetry, "telemetry") == applied  # the next start migrates it again
