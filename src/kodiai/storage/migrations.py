"""Versioned, additive-only migrations run by yoyo-migrations.

Layout: top-level ``migrations/<name>/`` holds one folder per database (``telemetry``, ``knowledge``,
``jobs``…). Files are applied in id order (the file name without extension, so ``0001_…`` <
``0002_…`` < ``0100_…``); each is applied once per database and recorded in yoyo's
``_yoyo_migration`` table. ``.sql`` files are the source of truth; ``.py`` files only hold idempotent
:class:`~kodiai.storage.additive.AddColumn` steps.

yoyo normally opens its own connection from a URI; here it is handed the store's own connection
(:class:`_ConnectionBackend`), so ``:memory:`` databases and paths that are awkward in a URI work, and
the pragmas of :func:`kodiai.storage.connection.connect` apply.

PostgreSQL (``DATABASE_URL``): the three databases are one PostgreSQL database (their table names do not
clash). ``migrations/postgresql/<name>/`` holds the PostgreSQL form of each migration under **the same id**,
and ``migrations/postgresql/common/`` what every name needs first (SQLite's functions:
``0000_sqlite_compat_functions``). yoyo opens its own connection there and its lock table serialises
replicas that start together; one ``_yoyo_migration`` table records the ids of all three names.
"""

from __future__ import annotations

import functools
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from yoyo import read_migrations
from yoyo.backends.core.sqlite3 import SQLiteBackend
from yoyo.connections import DatabaseURI
from yoyo.migrations import MigrationList, default_migration_table

from kodiai.storage.connection import MEMORY, connect


def _default_migrations_dir() -> Path:
    """The source tree's top-level ``migrations/`` (editable installs, CI, a checkout in a container);
    for a plain wheel install, ``./migrations`` of the working directory."""
    source_tree = Path(__file__).resolve().parents[3] / "migrations"
    return source_tree if source_tree.is_dir() else Path.cwd() / "migrations"


MIGRATIONS_DIR = _default_migrations_dir()
"""Top-level ``migrations/`` of the source tree (see :func:`_default_migrations_dir`)."""

FOREIGN_KEY_DATABASES = frozenset({"knowledge"})
DATABASE_NAMES = ("telemetry", "knowledge", "jobs")
POSTGRES_FOLDER = "postgresql"
POSTGRES_COMMON = "common"


class MigrationError(RuntimeError):
    """A migration folder is missing or a migration failed; the database is left as it was."""


@dataclass(frozen=True)
class MigrationState:
    """One migration and whether this database has it."""

    id: str
    applied: bool
    applied_at: str | None

    def __iter__(self) -> Any:  # lets callers unpack ``(id, applied, applied_at)``
        return iter((self.id, self.applied, self.applied_at))


class _ConnectionBackend(SQLiteBackend):
    """A yoyo SQLite backend that uses a connection it is given instead of opening one."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._given = conn
        super().__init__(
            DatabaseURI("sqlite", None, None, None, None, "kodiai-given-connection", {}),
            default_migration_table,
        )

    def connect(self, dburi: Any) -> sqlite3.Connection:
        return self._given

    def copy(self) -> _ConnectionBackend:
        return self  # one connection: yoyo's per-migration copy must not open another

    def __enter__(self) -> _ConnectionBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        """The caller owns the connection: never close it here."""


def migrations_folder(name: str, migrations_dir: Path | None = None) -> Path:
    folder = (migrations_dir or MIGRATIONS_DIR) / name
    if not folder.is_dir():
        raise MigrationError(f"no migrations folder for database {name!r} at {folder}")
    return folder


def load_migrations(name: str, migrations_dir: Path | None = None) -> MigrationList:
    """Every migration of database ``name``, in id order."""
    folder = migrations_folder(name, migrations_dir)
    return MigrationList(_read_sorted(str(folder), _folder_contents(folder)))


def _folder_contents(folder: Path) -> tuple[tuple[str, bytes], ...]:
    return tuple(sorted((entry.name, entry.read_bytes()) for entry in folder.iterdir() if entry.is_file()))


@functools.lru_cache(maxsize=32)
def _read_sorted(folder: str, contents: tuple[tuple[str, bytes], ...]) -> tuple[Any, ...]:
    """yoyo's migrations of ``folder``, read once per process for the same file contents: yoyo splits each
    ``.sql`` file with sqlparse when a migration is first used (~30 ms of CPU per database, paid by every
    store opened). A migration keeps what it loaded, so the next store reuses it; its steps hold no state."""
    del contents  # the cache key: an edited file is read again
    return tuple(sorted(read_migrations(folder), key=lambda m: m.id))


def apply_migrations_to(conn: sqlite3.Connection, name: str, migrations_dir: Path | None = None) -> list[str]:
    """Apply the pending migrations of ``name`` on an open connection; returns the ids applied."""
    migrations = load_migrations(name, migrations_dir)
    backend = _ConnectionBackend(conn)
    backend.init_database()
    with backend.lock():
        pending = backend.to_apply(migrations)
        ids = [m.id for m in pending]
        if pending:
            try:
                backend.apply_migrations(pending)
            except Exception as exc:
                raise MigrationError(f"migration of {name} database failed: {exc}") from exc
    return ids


def apply_migrations(db_path: str | Path, name: str, migrations_dir: Path | None = None) -> list[str]:
    """Open ``db_path`` (created if missing), apply what is pending for database ``name``; ids applied."""
    conn = connect(db_path, foreign_keys=name in FOREIGN_KEY_DATABASES)
    try:
        return apply_migrations_to(conn, name, migrations_dir)
    finally:
        conn.close()


def _applied_at(conn: sqlite3.Connection) -> dict[str, str]:
    has_table = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (default_migration_table,)
    ).fetchone()
    if not has_table:
        return {}
    rows = conn.execute(f'SELECT migration_id, applied_at_utc FROM "{default_migration_table}"').fetchall()
    return {str(mid): str(at) for mid, at in rows}


def migration_status_of(
    conn: sqlite3.Connection | None, name: str, migrations_dir: Path | None = None
) -> list[MigrationState]:
    """Status of every known migration of ``name`` on ``conn`` (``None``: a database that does not exist)."""
    applied = _applied_at(conn) if conn is not None else {}
    return [
        MigrationState(m.id, m.id in applied, applied.get(m.id))
        for m in load_migrations(name, migrations_dir)
    ]


def migration_status(
    db_path: str | Path, name: str, migrations_dir: Path | None = None
) -> list[MigrationState]:
    """``[(id, applied, applied_at)]`` for database ``name`` at ``db_path``; never creates the file."""
    if str(db_path) == MEMORY or not Path(db_path).exists():
        return migration_status_of(None, name, migrations_dir)
    uri = Path(db_path).resolve().as_uri() + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True)
    try:
        return migration_status_of(conn, name, migrations_dir)
    finally:
        conn.close()


# --- PostgreSQL -------------------------------------------------------------------------------------------


def postgres_migrations_folder(name: str, migrations_dir: Path | None = None) -> Path:
    """``migrations/postgresql/<name>/`` (``name`` may be ``common``)."""
    return migrations_folder(f"{POSTGRES_FOLDER}/{name}", migrations_dir)


def load_postgres_migrations(name: str, migrations_dir: Path | None = None) -> MigrationList:
    """The common migrations, then database ``name``'s PostgreSQL forms, each group in id order."""
    common = load_migrations(f"{POSTGRES_FOLDER}/{POSTGRES_COMMON}", migrations_dir)
    own = load_migrations(f"{POSTGRES_FOLDER}/{name}", migrations_dir)
    return MigrationList([*common, *own])


def _yoyo_uri(url: str) -> str:
    """yoyo's scheme for psycopg 3."""
    return "postgresql+psycopg://" + url.split("://", 1)[1]


def apply_postgres_migrations(url: str, name: str, migrations_dir: Path | None = None) -> list[str]:
    """Apply what is pending for database ``name`` on the PostgreSQL database at ``url``; the ids applied.

    Errors name the database by host and name only: ``url`` may carry a password."""
    from yoyo import get_backend

    from kodiai.storage.database import safe_url

    migrations = load_postgres_migrations(name, migrations_dir)
    try:
        backend = get_backend(_yoyo_uri(url))
    except Exception as exc:
        raise MigrationError(f"cannot connect to {safe_url(url)}: {type(exc).__name__}") from None
    try:
        with backend.lock():
            pending = backend.to_apply(migrations)
            ids = [m.id for m in pending]
            if pending:
                try:
                    backend.apply_migrations(pending)
                except Exception as exc:
                    raise MigrationError(f"migration of {name} on {safe_url(url)} failed: {exc}") from exc
    finally:
        backend.connection.close()
    return ids


def apply_all_postgres_migrations(url: str, migrations_dir: Path | None = None) -> list[str]:
    """Every database's migrations on one PostgreSQL database (``kodiai db upgrade`` with DATABASE_URL)."""
    return [i for name in DATABASE_NAMES for i in apply_postgres_migrations(url, name, migrations_dir)]


def postgres_migration_status(
    url: str, name: str, migrations_dir: Path | None = None
) -> list[MigrationState]:
    """``[(id, applied, applied_at)]`` of database ``name``'s PostgreSQL migrations (common ones included).

    Errors name the database by host and name only (libpq's may quote the URL's password)."""
    import psycopg

    from kodiai.storage.database import safe_url

    try:
        with psycopg.connect(url, autocommit=True) as conn:
            exists = conn.execute("SELECT to_regclass(%s)", (default_migration_table,)).fetchone()
            rows = (
                conn.execute(
                    f'SELECT migration_id, applied_at_utc FROM "{default_migration_table}"'
                ).fetchall()
                if exists and exists[0] is not None
                else []
            )
    except psycopg.Error as exc:
        raise MigrationError(f"cannot read {safe_url(url)}: {type(exc).__name__}") from None
    applied = {str(mid): str(at) for mid, at in rows}
    return [
        MigrationState(m.id, m.id in applied, applied.get(m.id))
        for m in load_postgres_migrations(name, migrations_dir)
    ]
