"""The database a store talks to: one small protocol, a SQLite and a PostgreSQL implementation.

Design (``DATABASE_URL``): with it unset every store keeps its own SQLite file, exactly as before; with
``DATABASE_URL=postgresql://…`` the stores share one PostgreSQL database, in the **same tables and columns**,
so operators' SQL runs on both. To keep that true, every statement in the code is one text for both
dialects:

- portable SQL only: ``INSERT … ON CONFLICT … DO NOTHING/DO UPDATE`` (SQLite ≥ 3.24) instead of ``INSERT OR
  IGNORE/REPLACE``, ``RETURNING id`` (SQLite ≥ 3.35) instead of ``lastrowid``, :meth:`Executor.columns`
  instead of ``PRAGMA table_info``;
- SQLite's date and number functions (``datetime('now', '-7 days')``, ``date()``, ``strftime()``,
  ``ROUND(double, n)``, ``SUM(a = b)``) exist in PostgreSQL as compatibility functions created by a
  PostgreSQL-only migration (``migrations/postgresql/common``), returning SQLite's text forms;
- the PostgreSQL implementation changes only the placeholders: ``?`` → ``%s`` outside string literals,
  quoted identifiers and comments (and a literal ``%`` → ``%%``, which psycopg would read as a placeholder).

The protocol is what a store needs: :meth:`Executor.execute` (its result's ``rowcount``),
:meth:`Executor.fetch_one`, :meth:`Executor.fetch_all` (positional rows), :meth:`Executor.query` (rows by
column name) and :meth:`Database.transaction` (an :class:`Executor` whose statements commit or roll back
together). Both implementations are thread-safe. SQLite: one connection behind a re-entrant lock
(:class:`~kodiai.storage.connection.LockedConnection`), transactions are ``BEGIN IMMEDIATE``.
PostgreSQL: a connection pool (:mod:`kodiai.storage.postgres`), and each transaction takes a
transaction-scoped advisory lock named after the store, so a store's transactions run one at a time across
every process — the guarantee ``BEGIN IMMEDIATE`` gives on SQLite, which the stores' read-then-write
transactions rely on.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable
from urllib.parse import urlsplit

from kodiai.storage.connection import LockedConnection, connect

Dialect = Literal["sqlite", "postgresql"]
Params = Sequence[object]


class Result(Protocol):
    """What :meth:`Executor.execute` returns: how many rows the statement changed."""

    @property
    def rowcount(self) -> int: ...


class RowLike(Protocol):
    """A row readable by position and by column name; ``dict(row)`` gives ``{column: value}``."""

    def keys(self) -> list[str]: ...

    def __getitem__(self, key: int | str, /) -> Any: ...


class Executor(Protocol):
    """Statements on one database (or inside one transaction)."""

    @property
    def dialect(self) -> Dialect: ...

    def execute(self, sql: str, params: Params = ()) -> Result: ...

    def fetch_one(self, sql: str, params: Params = ()) -> tuple[Any, ...] | None: ...

    def fetch_all(self, sql: str, params: Params = ()) -> list[tuple[Any, ...]]: ...

    def query(self, sql: str, params: Params = ()) -> list[RowLike]: ...

    def columns(self, table: str) -> list[tuple[str, str]]:
        """``(name, declared type)`` of each column of ``table``, in order; empty when there is no table."""
        ...


@runtime_checkable
class Database(Executor, Protocol):
    """A store's database: statements, transactions, and its lifecycle."""

    @property
    def closed(self) -> bool: ...

    @property
    def lock(self) -> threading.RLock:
        """A re-entrant lock serialising this process's uses (SQLite: the connection's own lock)."""
        ...

    def transaction(self) -> AbstractContextManager[Executor]: ...

    def checkpoint(self) -> tuple[int, int, int]:
        """SQLite: a PASSIVE WAL checkpoint, SQLite's (busy, log frames, checkpointed frames); PostgreSQL
        checkpoints on its own: ``(0, 0, 0)``."""
        ...

    def describe(self) -> str:
        """Where the data is, safe to log: a file path, or ``postgresql://host:port/db`` (never a password)."""
        ...

    def close(self) -> None: ...


class ClosedDatabaseError(sqlite3.ProgrammingError):
    """Use of a closed database. A :class:`sqlite3.ProgrammingError` on both dialects: the stores' callers
    (and the original's tests) expect that error after ``close()``."""


# --- SQLite ----------------------------------------------------------------------------------------------


class _SqliteExecutor:
    """Statements on a raw connection the caller holds (inside :meth:`SqliteDatabase.transaction`)."""

    dialect: Dialect = "sqlite"

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Params = ()) -> Result:
        return self._conn.execute(sql, tuple(params))

    def fetch_one(self, sql: str, params: Params = ()) -> tuple[Any, ...] | None:
        row = self._conn.execute(sql, tuple(params)).fetchone()
        return tuple(row) if row is not None else None

    def fetch_all(self, sql: str, params: Params = ()) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self._conn.execute(sql, tuple(params)).fetchall()]

    def query(self, sql: str, params: Params = ()) -> list[RowLike]:
        cur = self._conn.cursor()
        cur.row_factory = sqlite3.Row
        return list(cur.execute(sql, tuple(params)).fetchall())

    def columns(self, table: str) -> list[tuple[str, str]]:
        return sqlite_columns(self._conn, table)


def sqlite_columns(conn: sqlite3.Connection, table: str) -> list[tuple[str, str]]:
    """``(name, declared type)`` of each column (``PRAGMA table_info``)."""
    return [(str(r[1]), str(r[2])) for r in conn.execute(f'PRAGMA table_info("{table}")')]


class SqliteDatabase:
    """The SQLite implementation over one :class:`LockedConnection` (today's behaviour, unchanged)."""

    dialect: Dialect = "sqlite"

    def __init__(self, conn: LockedConnection | sqlite3.Connection, path: str | Path = ":memory:") -> None:
        self._locked = conn if isinstance(conn, LockedConnection) else LockedConnection(conn)
        self.path = str(path)

    @classmethod
    def open(cls, path: str | Path, *, foreign_keys: bool = False, read_only: bool = False) -> SqliteDatabase:
        """Open ``path`` with the house pragmas (:func:`kodiai.storage.connection.connect`)."""
        return cls(connect(path, foreign_keys=foreign_keys, read_only=read_only), path)

    @property
    def locked(self) -> LockedConnection:
        """The underlying connection and its lock (SQLite-only work: pragmas, backups)."""
        return self._locked

    @property
    def raw(self) -> sqlite3.Connection:
        return self._locked.raw

    @property
    def lock(self) -> threading.RLock:
        return self._locked.lock

    @property
    def closed(self) -> bool:
        return self._locked.closed

    def execute(self, sql: str, params: Params = ()) -> Result:
        return self._locked.execute(sql, tuple(params))

    def fetch_one(self, sql: str, params: Params = ()) -> tuple[Any, ...] | None:
        return self._locked.fetch_one(sql, tuple(params))

    def fetch_all(self, sql: str, params: Params = ()) -> list[tuple[Any, ...]]:
        with self._locked.lock:
            return _SqliteExecutor(self._locked.raw).fetch_all(sql, params)

    def query(self, sql: str, params: Params = ()) -> list[RowLike]:
        return list(self._locked.query(sql, tuple(params)))

    def columns(self, table: str) -> list[tuple[str, str]]:
        with self._locked.lock:
            return sqlite_columns(self._locked.raw, table)

    @contextmanager
    def transaction(self) -> Iterator[Executor]:
        with self._locked.transaction() as conn:
            yield _SqliteExecutor(conn)

    def checkpoint(self) -> tuple[int, int, int]:
        return self._locked.checkpoint()

    def describe(self) -> str:
        return self.path

    def close(self) -> None:
        self._locked.close()


# --- placeholders ----------------------------------------------------------------------------------------


def to_pyformat(sql: str) -> str:
    """``?`` → ``%s`` and ``%`` → ``%%`` for psycopg; a ``?`` inside a string literal (``'…'``, with ``''``
    escapes), a quoted identifier (``"…"``), a dollar-quoted body or a comment (``--``, ``/* */``) stays."""
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in ("'", '"'):
            end = i + 1
            while end < n:
                if sql[end] == ch:
                    if end + 1 < n and sql[end + 1] == ch:  # doubled quote: an escaped one
                        end += 2
                        continue
                    break
                end += 1
            out.append(sql[i : end + 1].replace("%", "%%"))
            i = end + 1
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            end = n if end < 0 else end
            out.append(sql[i:end].replace("%", "%%"))
            i = end
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(sql[i:end].replace("%", "%%"))
            i = end
        elif ch == "$" and (tag_end := _dollar_tag_end(sql, i)) is not None:
            tag = sql[i:tag_end]
            end = sql.find(tag, tag_end)
            end = n if end < 0 else end + len(tag)
            out.append(sql[i:end].replace("%", "%%"))
            i = end
        elif ch == "?":
            out.append("%s")
            i += 1
        elif ch == "%":
            out.append("%%")
            i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _dollar_tag_end(sql: str, start: int) -> int | None:
    """End of a ``$tag$`` opening at ``start`` (``$$`` included); None when ``$`` starts no tag (``$1``)."""
    end = start + 1
    while end < len(sql) and (sql[end].isalnum() or sql[end] == "_"):
        end += 1
    if end < len(sql) and sql[end] == "$" and not sql[start + 1 : end][:1].isdigit():
        return end + 1
    return None


# --- opening ---------------------------------------------------------------------------------------------


def safe_url(url: str) -> str:
    """``postgresql://host:port/db``: the URL without user, password or query (for logs and errors)."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def is_postgres_url(url: str | None) -> bool:
    return bool(url) and str(url).split("://", 1)[0] in ("postgresql", "postgres")


def as_executor(conn: sqlite3.Connection | Executor) -> Executor:
    """A raw SQLite connection (the CLI's read-only one, a test's) as an :class:`Executor`; others as they are."""
    return _SqliteExecutor(conn) if isinstance(conn, sqlite3.Connection) else conn


MIN_SQLITE = (3, 35, 0)
"""The stores' SQL needs ``RETURNING`` (3.35), ``ON CONFLICT … DO`` (3.24) and ``NULLS FIRST`` (3.30)."""


def check_sqlite_version(version: tuple[int, int, int] = sqlite3.sqlite_version_info) -> None:
    """Refuse a SQLite library older than :data:`MIN_SQLITE` with the versions named (the stores' SQL would
    fail later with a bare syntax error)."""
    if version < MIN_SQLITE:
        have = ".".join(map(str, version))
        need = ".".join(map(str, MIN_SQLITE))
        raise RuntimeError(
            f"SQLite {have} is too old: Kodiai needs {need} or newer (the sqlite3 library Python is linked to)"
        )
