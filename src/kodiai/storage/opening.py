"""Opening a store's database: the factory above the two implementations and the migrations.

The protocol and the SQLite implementation (:mod:`kodiai.storage.database`), the PostgreSQL one
(:mod:`kodiai.storage.postgres`) and the migrations (:mod:`kodiai.storage.migrations`) all sit below this
module, so none of them imports another back. psycopg and yoyo are imported only when a store is opened.
"""

from __future__ import annotations

from pathlib import Path

from kodiai.storage.database import Database, SqliteDatabase, check_sqlite_version, is_postgres_url


def open_postgres(url: str, name: str) -> Database:
    """A pool on ``url`` for store ``name`` (its transactions' advisory-lock key)."""
    from kodiai.storage.postgres import PostgresDatabase

    return PostgresDatabase(url, name=name)


def open_migrated(target: str | Path, name: str, *, lock: str | None = None) -> Database:
    """The database of store ``name`` with its migrations applied: a SQLite file (or ``:memory:``) at
    ``target``, or the PostgreSQL database when ``target`` is a ``postgresql://`` URL (``DATABASE_URL``).
    ``lock`` names the PostgreSQL transactions' advisory lock when two stores share one migrations name."""
    from kodiai.storage.migrations import (
        FOREIGN_KEY_DATABASES,
        apply_migrations_to,
        apply_postgres_migrations,
    )

    if is_postgres_url(str(target)):
        apply_postgres_migrations(str(target), name)
        return open_postgres(str(target), lock or name)
    check_sqlite_version()
    db = SqliteDatabase.open(target, foreign_keys=name in FOREIGN_KEY_DATABASES)
    try:
        apply_migrations_to(db.raw, name)
    except BaseException:
        db.close()
        raise
    return db
