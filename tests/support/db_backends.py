"""Run a storage test on both databases: SQLite files (the default) and PostgreSQL (``DATABASE_URL``).

The ``db_backend`` fixture (below; imported by the conftest or module that uses it) is parametrised over
``sqlite`` and ``postgres``; a
test opens its store at ``db_backend.target(name)`` (a file in the test's tmp dir, or the URL of the
session's PostgreSQL database, emptied before each test) and checks what landed through a second
connection (:meth:`DbBackend.rows`), never through the store under test.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest

from kodiai.storage.database import Database, SqliteDatabase
from kodiai.storage.opening import open_postgres

BackendName = Literal["sqlite", "postgres"]
BACKENDS: tuple[BackendName, ...] = ("sqlite", "postgres")


def open_target(target: str | Path, name: str) -> Database:
    """A second connection to a store's database: a SQLite file, or a ``postgresql://`` URL."""
    text = str(target)
    return open_postgres(text, name) if text.startswith("postgresql://") else SqliteDatabase.open(text)


@dataclass
class DbBackend:
    name: BackendName
    tmp_path: Path
    url: str | None = None
    _open: list[Database] = field(default_factory=list)

    def target(self, store: str) -> str:
        """Where store ``store`` lives: ``<tmp>/<store>.db`` or the PostgreSQL URL."""
        return self.url if self.url is not None else str(self.tmp_path / f"{store}.db")

    @contextmanager
    def connect(self, store: str) -> Iterator[Database]:
        """A second connection to the store's database (not the store's own)."""
        db: Database = (
            open_postgres(self.url, store)
            if self.url is not None
            else SqliteDatabase.open(self.target(store))
        )
        try:
            yield db
        finally:
            db.close()

    def rows(self, store: str, sql: str, params: tuple[object, ...] = ()) -> list[dict[str, Any]]:
        with self.connect(store) as db:
            return [dict(r) for r in db.query(sql, params)]

    def scalar(self, store: str, sql: str, params: tuple[object, ...] = ()) -> Any:
        with self.connect(store) as db:
            row = db.fetch_one(sql, params)
        return None if row is None else row[0]

    def write(self, store: str, sql: str, params: tuple[object, ...] = ()) -> int:
        with self.connect(store) as db:
            return db.execute(sql, params).rowcount


@pytest.fixture(params=BACKENDS)
def db_backend(request: pytest.FixtureRequest, tmp_path: Path) -> DbBackend:
    """The test runs twice: on SQLite files and on PostgreSQL (the session's server, emptied per test)."""
    if request.param == "postgres":
        return DbBackend("postgres", tmp_path, request.getfixturevalue("postgres_url"))
    return DbBackend("sqlite", tmp_path)
