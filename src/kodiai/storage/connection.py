"""The one SQLite connection helper every store uses.

Every connection gets the original's pragmas: ``journal_mode=WAL``, ``synchronous=NORMAL`` and
``busy_timeout=5000``; ``foreign_keys=ON`` only where the original had it (the knowledge store).

Thread safety: the server writes from worker threads, so a store owns exactly ONE connection opened
with ``check_same_thread=False`` and serialises every use of it behind its own ``threading.RLock``
(see :class:`LockedConnection`). SQLite itself handles the other process (CLI, a second server) through
WAL and the 5 s busy timeout. Connections run in autocommit mode (``isolation_level=None``); writes that
must be atomic use :meth:`LockedConnection.transaction` (``BEGIN IMMEDIATE`` … ``COMMIT``).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

MEMORY = ":memory:"
BUSY_TIMEOUT_MS = 5000


def connect(path: str | Path, *, foreign_keys: bool = False, read_only: bool = False) -> sqlite3.Connection:
    """Open ``path`` (or ``:memory:``) with the house pragmas; parent directories are created, and a new
    database file is created with mode 0600 (:func:`create_private_file`).

    ``read_only`` opens an existing file without creating it or its directories (operator reports);
    a missing file then raises :class:`FileNotFoundError`.
    """
    target = str(path)
    if read_only:
        if target == MEMORY:
            raise ValueError("a read-only connection needs a database file, not :memory:")
        file = Path(target)
        if not file.is_file():
            raise FileNotFoundError(f"Database not found at {file}")
        uri = file.resolve().as_uri() + "?mode=ro"
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        return conn
    if target != MEMORY:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        create_private_file(target)
    conn = sqlite3.connect(target, check_same_thread=False, isolation_level=None)
    try:
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        if foreign_keys:
            conn.execute("PRAGMA foreign_keys=ON")
    except BaseException:
        conn.close()
        raise
    return conn


def create_private_file(path: str | Path) -> bool:
    """Create ``path`` empty with mode 0600 unless it exists; True when it was created.

    SQLite would create a new database with 0644 (0666 less the umask): readable by every local user,
    and the jobs database holds pending webhook payloads. An empty file is a valid empty database, and
    SQLite gives the ``-wal``/``-shm`` (and ``-journal``) files the mode of the database file, so they
    are 0600 too — without touching the process-wide umask, which other threads share. An existing
    file keeps its mode (see docs/deployment.md to tighten an older one).
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def checkpoint_passive(conn: sqlite3.Connection) -> tuple[int, int, int]:
    """Run ``PRAGMA wal_checkpoint(PASSIVE)``; returns SQLite's (busy, log frames, checkpointed frames)."""
    row = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    return (int(row[0]), int(row[1]), int(row[2]))


class LockedConnection:
    """One connection shared by threads, every use serialised by a re-entrant lock.

    After :meth:`close`, any use raises :class:`sqlite3.ProgrammingError` (the original's stores throw
    on use after close); closing twice is harmless.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._lock = threading.RLock()
        self._closed = False

    @property
    def raw(self) -> sqlite3.Connection:
        """The underlying connection; hold :attr:`lock` while using it from several threads."""
        self._check_open()
        return self._conn

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise sqlite3.ProgrammingError("Cannot operate on a closed database.")

    def execute(self, sql: str, params: tuple[object, ...] | dict[str, object] = ()) -> sqlite3.Cursor:
        with self._lock:
            self._check_open()
            return self._conn.execute(sql, params)

    def fetch_one(
        self, sql: str, params: tuple[object, ...] | dict[str, object] = ()
    ) -> tuple[Any, ...] | None:
        """Run a statement and fetch its first row, all under the lock."""
        with self._lock:
            self._check_open()
            row = self._conn.execute(sql, params).fetchone()
            return tuple(row) if row is not None else None

    def query(self, sql: str, params: tuple[object, ...] | dict[str, object] = ()) -> list[sqlite3.Row]:
        """Run a SELECT and return every row as :class:`sqlite3.Row` (access by column name)."""
        with self._lock:
            self._check_open()
            cur = self._conn.cursor()
            cur.row_factory = sqlite3.Row
            return list(cur.execute(sql, params).fetchall())

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``; any exception, a failing ``COMMIT`` included, rolls the whole
        block back and propagates.

        A ``COMMIT`` that fails (a deferred constraint, ``SQLITE_FULL``, ``SQLITE_BUSY``) can leave the
        transaction open; without the rollback every later ``BEGIN`` on this shared connection would fail
        with "cannot start a transaction within a transaction"."""
        with self._lock:
            self._check_open()
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise

    def _rollback(self) -> None:
        """Roll back what is still open; SQLite may already have rolled back (an I/O error, a full disk),
        and a failing ROLLBACK must not hide the error that caused it."""
        if self._conn.in_transaction:
            with suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")

    def checkpoint(self) -> tuple[int, int, int]:
        with self._lock:
            self._check_open()
            return checkpoint_passive(self._conn)

    def close(self) -> None:
        """Close; never raises (the original's close is non-throwing)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            with suppress(sqlite3.Error):
                self._conn.close()
