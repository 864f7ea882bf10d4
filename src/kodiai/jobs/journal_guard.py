"""Is the job journal the file it should be, and is it readable? Checks at start-up and while running.

The journal holds acknowledged work and the delivery-id history, so a damaged, missing or swapped file must
stop the server loudly rather than let it 500 every delivery or silently accept old deliveries again:

- at open, ``PRAGMA quick_check``: damage raises :class:`JournalDamagedError` with a one-line message
  (``kodiai serve`` prints it as its ``FATAL:`` line and exits 1);
- the journal's identity: ``journal_meta.instance_id`` inside the file, and a copy of it beside the file
  (``.<jobs db name>.instance``, a dotfile, so ``rm kodiai-jobs.db*`` leaves it). A restart that finds a new empty file, or another journal, where the recorded
  one was raises :class:`JournalReplacedError` instead of starting over with no history;
- while running, :class:`FileIdentity` compares the path's device and inode with the file that was opened,
  so a journal deleted or replaced under the server is noticed (the server then refuses new deliveries,
  saves what its open handle still sees with :func:`rescue_copy`, and takes its own ``-wal``/``-shm`` away
  from the path: SQLite would otherwise apply the old WAL to whatever file is at the path at the next
  start, silently mixing two journals).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from kodiai.storage.connection import MEMORY

#: SQLite primary result codes that mean the file itself is damaged (SQLITE_CORRUPT, SQLITE_NOTADB).
CORRUPTION_CODES = frozenset({11, 26})
DOC_HINT = "see docs/operations.md, 'Job journal damage'"


class JournalError(RuntimeError):
    """Base of the journal's own failures."""


class JournalDamagedError(JournalError):
    """The journal file is corrupt, missing or not the one in use: the server must not run on it."""


class JournalReplacedError(JournalDamagedError):
    """The file at the journal's path is not the journal this server last used (new, empty, or another)."""


class JournalUnavailableError(JournalError):
    """The journal refuses new deliveries (it is damaged, or was deleted or replaced while running)."""


def is_corruption(exc: BaseException) -> bool:
    """True for SQLite errors that mean a damaged file (not a full disk, a lock or a bad statement)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return (code & 0xFF) in CORRUPTION_CODES
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text


def integrity_problem(conn: sqlite3.Connection, *, limit: int = 3) -> str | None:
    """The first ``limit`` messages of ``PRAGMA quick_check`` joined on one line, or ``None`` when it is ok.

    quick_check reads every page (O(N), well under a second for a journal of 200,000 rows) and finds the
    damage that matters here, such as a zeroed index page that would fail every intake; it skips only the
    index-against-table content comparison of ``integrity_check``.
    """
    rows = conn.execute(f"PRAGMA quick_check({int(limit)})").fetchall()
    messages = [str(r[0]) for r in rows]
    if messages == ["ok"]:
        return None
    return "; ".join(" ".join(m.split()) for m in messages)


def damaged_message(path: str | Path, problem: str) -> str:
    return (
        f"job journal {path} is damaged ({problem}). Stop here: move it aside and start with a restored "
        f"copy, or salvage it with `sqlite3 {path} .recover | sqlite3 <new file>`; {DOC_HINT}"
    )


def sidecar_path(path: str | Path) -> Path:
    target = Path(path)
    return target.with_name(f".{target.name}.instance")


def rescued_copies(path: str | Path) -> list[Path]:
    """Copies :func:`rescue_copy` saved for this journal, oldest first."""
    target = Path(path)
    return sorted(target.parent.glob(f"{target.name}.rescued-*"))


def ensure_identity(conn: sqlite3.Connection, path: str | Path, *, created: bool) -> str:
    """The journal's instance id (created on first use), checked against the copy beside the file.

    ``created``: the file did not exist (or was empty) before this open. Raises
    :class:`JournalReplacedError` when the recorded journal is not this one.
    """
    row = conn.execute("SELECT instance_id FROM journal_meta WHERE id = 1").fetchone()
    if row is None:
        instance = uuid.uuid4().hex
        conn.execute(
            "INSERT INTO journal_meta (id, instance_id, created_at) VALUES (1, ?, ?)",
            (instance, datetime.now(UTC).isoformat()),
        )
    else:
        instance = str(row[0])
    if str(path) == MEMORY:
        return instance
    side = sidecar_path(path)
    try:
        recorded = side.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        recorded = ""
    if recorded and recorded != instance:
        found = "a new, empty file" if created else f"journal {instance}"
        rescued = ", ".join(str(p) for p in rescued_copies(path)) or "none"  # the newest last
        raise JournalReplacedError(
            f"job journal {path} is not the journal this server last used (expected journal {recorded}, "
            f"found {found}): its pending jobs and delivery-id history are missing, so old deliveries "
            f"would be accepted and run again. Restore the old file (rescued copies: {rescued}) to {path}, "
            f"or delete {side} to start with this one; {DOC_HINT}"
        )
    if not recorded:
        write_sidecar(path, instance)
    return instance


def write_sidecar(path: str | Path, instance: str) -> None:
    """Write ``<path>.instance`` atomically (temporary file, fsync, rename)."""
    side = sidecar_path(path)
    side.parent.mkdir(parents=True, exist_ok=True)
    tmp = side.with_name(side.name + ".tmp")
    with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8") as fh:
        fh.write(instance + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, side)


@dataclass(frozen=True, slots=True)
class FileIdentity:
    """Device and inode of a file as opened."""

    path: str
    device: int
    inode: int

    @classmethod
    def of(cls, path: str | Path) -> FileIdentity | None:
        if str(path) == MEMORY:
            return None
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        return cls(str(path), st.st_dev, st.st_ino)

    def still_here(self) -> bool:
        try:
            st = os.stat(self.path)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == (self.device, self.inode)

    def problem(self) -> str | None:
        """Why the path no longer names the open file (deleted, replaced), or ``None``."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return f"job journal {self.path} was deleted while the server had it open"
        except OSError as exc:
            return f"job journal {self.path} cannot be checked: {exc}"
        if (st.st_dev, st.st_ino) != (self.device, self.inode):
            return f"job journal {self.path} was replaced by another file while the server had it open"
        return None


def detach(companions: list[FileIdentity]) -> list[str]:
    """Unlink the journal's ``-wal``/``-shm`` from the path when they are still the ones this process opened
    (its connections keep using them); returns the paths removed."""
    removed = []
    for companion in companions:
        if companion.still_here():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(companion.path)
                removed.append(companion.path)
    return removed


def rescue_copy(conn: sqlite3.Connection, path: str | Path) -> Path:
    """Save what the open connection still sees (the deleted or replaced journal, its WAL included) to
    ``<path>.rescued-<UTC time>`` with ``VACUUM INTO``; returns the copy's path."""
    target = Path(path)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    copy = target.with_name(f"{target.name}.rescued-{stamp}")
    copy.parent.mkdir(parents=True, exist_ok=True)
    os.close(os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))  # pending payloads: owner only
    conn.execute("VACUUM INTO ?", (str(copy),))
    return copy
