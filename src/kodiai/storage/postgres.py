"""The PostgreSQL implementation of :class:`kodiai.storage.database.Database` (``DATABASE_URL``).

psycopg 3 with a :class:`psycopg_pool.ConnectionPool`: each statement borrows a connection in autocommit
mode, so any number of threads (and processes, each with its own pool) share the database. A
:meth:`PostgresDatabase.transaction` keeps one connection for its block and first takes
``pg_advisory_xact_lock`` on the store's name: the store's transactions run one at a time, like SQLite's
``BEGIN IMMEDIATE``, so a read-then-write (claim a run, add to a pattern's count) stays atomic across
replicas. Reads never wait for it.

Values come back as SQLite would hand them: ``numeric`` (``SUM`` of a ``BIGINT``, ``AVG``, ``ROUND``) as an
``int`` when it has no fraction and a ``float`` otherwise, never a ``Decimal``. The URL may carry a password:
:meth:`PostgresDatabase.describe` and every error raised here name only host, port and database.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.adapt import Loader
from psycopg.rows import RowMaker
from psycopg_pool import ConnectionPool

from kodiai.storage.database import (
    ClosedDatabaseError,
    Dialect,
    Executor,
    Params,
    Result,
    RowLike,
    safe_url,
    to_pyformat,
)

POOL_MIN = 1
POOL_MAX = 8
POOL_TIMEOUT = 30.0


class _NumericLoader(Loader):
    """``numeric`` → ``int`` without a fraction (``SUM`` of integers), else ``float`` (SQLite's types)."""

    def load(self, data: Any) -> int | float:
        text = bytes(data).decode()
        if any(c in text for c in ".eEN"):  # a fraction, an exponent, NaN or Infinity
            return float(text)
        return int(text)


class Row(Sequence[Any]):
    """A row by position and by column name (``dict(row)`` works), like :class:`sqlite3.Row`."""

    __slots__ = ("_names", "_values")

    def __init__(self, names: tuple[str, ...], values: Sequence[Any]) -> None:
        self._names = names
        self._values = tuple(values)

    def keys(self) -> list[str]:
        return list(self._names)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            try:
                return self._values[self._names.index(key)]
            except ValueError:
                raise IndexError(f"No item with that key: {key}") from None
        return self._values[key]

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Row({dict(zip(self._names, self._values, strict=True))!r})"


def _row_factory(cursor: Any) -> RowMaker[Row]:
    names = tuple(d.name for d in cursor.description or ())
    return lambda values: Row(names, values)


def _configure(conn: psycopg.Connection[Any]) -> None:
    conn.adapters.register_loader("numeric", _NumericLoader)


def text_safe(params: Params) -> tuple[Any, ...]:
    """``params`` with NUL in text replaced by U+FFFD: PostgreSQL's ``text`` refuses NUL, which SQLite stores,
    so a finding title or model output quoting one would fail the whole write on PostgreSQL only."""
    return tuple(p.replace("\x00", "\ufffd") if isinstance(p, str) and "\x00" in p else p for p in params)


class _PgExecutor:
    """Statements on one borrowed connection (a transaction's, or a single statement's)."""

    dialect: Dialect = "postgresql"

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Params = ()) -> Result:
        return self._conn.execute(to_pyformat(sql), text_safe(params))

    def fetch_one(self, sql: str, params: Params = ()) -> tuple[Any, ...] | None:
        row = self._conn.execute(to_pyformat(sql), text_safe(params)).fetchone()
        return tuple(row) if row is not None else None

    def fetch_all(self, sql: str, params: Params = ()) -> list[tuple[Any, ...]]:
        cur = self._conn.execute(to_pyformat(sql), text_safe(params))
        return [tuple(r) for r in cur.fetchall()] if cur.description else []

    def query(self, sql: str, params: Params = ()) -> list[RowLike]:
        with self._conn.cursor(row_factory=_row_factory) as cur:
            cur.execute(to_pyformat(sql), text_safe(params))
            return list(cur.fetchall())

    def columns(self, table: str) -> list[tuple[str, str]]:
        rows = self._conn.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = %s ORDER BY ordinal_position",
            (table,),
        ).fetchall()
        return [(str(name), str(kind).upper()) for name, kind in rows]


class _Rowcount:
    def __init__(self, rowcount: int) -> None:
        self.rowcount = rowcount


class PostgresDatabase:
    """One pool on ``DATABASE_URL`` for store ``name`` (``telemetry``, ``knowledge``, ``jobs``)."""

    dialect: Dialect = "postgresql"

    def __init__(self, url: str, *, name: str, min_size: int = POOL_MIN, max_size: int = POOL_MAX) -> None:
        self.name = name
        self._safe = safe_url(url)
        self._lock = threading.RLock()
        self._closed = False
        self._pool = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            timeout=POOL_TIMEOUT,
            kwargs={"autocommit": True},
            configure=_configure,
            name=f"kodiai-{name}",
            open=False,
        )
        try:
            self._pool.open(wait=True, timeout=POOL_TIMEOUT)
        except Exception as exc:  # psycopg_pool.PoolTimeout names the URL's password-free parts only
            self._pool.close()
            raise ConnectionError(f"cannot connect to {self._safe}: {type(exc).__name__}") from None

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedDatabaseError("Cannot operate on a closed database.")

    @contextmanager
    def _borrow(self) -> Iterator[_PgExecutor]:
        self._check_open()
        with self._pool.connection() as conn:
            yield _PgExecutor(conn)

    def execute(self, sql: str, params: Params = ()) -> Result:
        with self._borrow() as ex:
            return _Rowcount(ex.execute(sql, params).rowcount)

    def fetch_one(self, sql: str, params: Params = ()) -> tuple[Any, ...] | None:
        with self._borrow() as ex:
            return ex.fetch_one(sql, params)

    def fetch_all(self, sql: str, params: Params = ()) -> list[tuple[Any, ...]]:
        with self._borrow() as ex:
            return ex.fetch_all(sql, params)

    def query(self, sql: str, params: Params = ()) -> list[RowLike]:
        with self._borrow() as ex:
            return ex.query(sql, params)

    def columns(self, table: str) -> list[tuple[str, str]]:
        with self._borrow() as ex:
            return ex.columns(table)

    @contextmanager
    def transaction(self) -> Iterator[Executor]:
        """One connection, ``BEGIN`` … ``COMMIT`` (any exception rolls back), holding the store's lock."""
        self._check_open()
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"kodiai:{self.name}",))
            yield _PgExecutor(conn)

    def checkpoint(self) -> tuple[int, int, int]:
        self._check_open()
        return (0, 0, 0)

    def describe(self) -> str:
        return self._safe

    def close(self) -> None:
        """Close the pool; never raises, twice is harmless."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        with contextlib.suppress(Exception):  # close never raises (as the SQLite store's close)
            self._pool.close()
