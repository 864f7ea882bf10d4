"""The durable side of webhook intake: delivery dedup and the job journal, in one SQLite file.

A delivery is *accepted* in one transaction that remembers its id (dedup, ≥ 24 h) and, when it has
work to do, journals the event. This happens before the webhook is acknowledged, so a crash or a
deploy after the 200 loses nothing: unfinished rows are replayed once at start-up. Handlers that
already finished for a delivery are recorded individually and skipped on replay.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import zstandard
from pydantic import BaseModel, Field

from kodiai.jobs.journal_writer import JournalWriter, WriteOp
from kodiai.storage.connection import LockedConnection, connect
from kodiai.storage.migrations import apply_migrations_to
from kodiai.webhook.body import parse_json

DEDUP_WINDOW = timedelta(hours=24)
FINISHED_RETENTION = timedelta(days=7)
EVICT_EVERY = 1000
PAYLOAD_ZSTD_LEVEL = 3

JournalStatus = Literal["pending", "done", "failed", "abandoned"]


class JournalEntry(BaseModel):
    """One journaled delivery."""

    delivery_id: str
    event_name: str
    action: str | None = None
    installation_id: int = 0
    payload: dict[str, Any]
    status: JournalStatus = "pending"
    attempts: int = 0
    handlers_done: list[str] = Field(default_factory=list)


def _iso(now: datetime) -> str:
    return now.isoformat()


class PayloadCodec:
    """How a body is stored in ``job_payloads.payload``: the exact bytes as received, zstd-compressed.

    A ≈24 KB ``pull_request`` body becomes ≈2 KB: it fits one SQLite page instead of a 6-page overflow
    chain, which was most of the intake write, the WAL checkpoint and the eviction cost (measured with
    benchmarks/webhook.py). Rows written as TEXT by earlier versions are still read. zstd contexts are
    not thread-safe, so each thread gets its own.
    """

    def __init__(self, level: int = PAYLOAD_ZSTD_LEVEL) -> None:
        self._level = level
        self._local = threading.local()

    def encode(self, body: bytes) -> bytes:
        compressor = getattr(self._local, "compressor", None)
        if compressor is None:
            compressor = self._local.compressor = zstandard.ZstdCompressor(level=self._level)
        data: bytes = compressor.compress(body)
        return data

    def decode(self, stored: bytes | str) -> Any:
        """The parsed payload of a stored row (compressed bytes, or legacy JSON text)."""
        if isinstance(stored, str):
            return parse_json(stored)
        decompressor = getattr(self._local, "decompressor", None)
        if decompressor is None:
            decompressor = self._local.decompressor = zstandard.ZstdDecompressor()
        return parse_json(decompressor.decompress(stored))


class JobJournal:
    """Dedup + journal over one locked SQLite connection (see :mod:`kodiai.storage.connection`)."""

    def __init__(self, conn: LockedConnection, *, dedup_window: timedelta = DEDUP_WINDOW) -> None:
        self._db = conn
        self._window = dedup_window
        self._inserts = 0
        self._writer: JournalWriter | None = None
        self._pending_evict = False
        self._codec = PayloadCodec()

    @classmethod
    def open(cls, path: str | Path, *, dedup_window: timedelta = DEDUP_WINDOW) -> JobJournal:
        """Open (creating) the jobs database and apply ``migrations/jobs``."""
        raw = connect(path)
        try:
            apply_migrations_to(raw, "jobs")
        except BaseException:
            raw.close()
            raise
        return cls(LockedConnection(raw), dedup_window=dedup_window)

    def close(self) -> None:
        """Stop the writer (after it applies what is queued), then close the connection."""
        if self._writer is not None:
            self._writer.stop()
            self._writer = None
        self._db.close()

    # ------------------------------------------------------------------ intake
    def accept(
        self,
        entry: JournalEntry,
        *,
        now: datetime,
        journal: bool = True,
        raw_payload: bytes | str | None = None,
        started: bool = False,
    ) -> bool:
        """Remember the delivery id and (if ``journal``) journal the event; False if already seen.

        ``raw_payload`` is the body as received (stored verbatim, no re-serialisation); ``started``
        records the first attempt at once when the caller dispatches right away.
        """
        try:
            accepted = self._accept(entry, now=now, journal=journal, raw=raw_payload, started=started)
        except _AlreadyJournaledError:  # journaled earlier and its dedup row since evicted
            return False
        self._count_insert(accepted, now)
        return accepted

    def _count_insert(self, accepted: bool, now: datetime) -> None:
        if accepted:
            self._inserts += 1
            if self._inserts % EVICT_EVERY == 0:
                self.evict(now=now)

    # ------------------------------------------------------------------ group commit (server use)
    def start_writer(self) -> None:
        """Route the ``*_async``/``*_later`` methods through one group-commit writer thread."""
        if self._writer is None:
            self._writer = JournalWriter(self._apply_batch)

    async def accept_async(
        self,
        entry: JournalEntry,
        *,
        now: datetime,
        journal: bool = True,
        raw_payload: bytes | str | None = None,
    ) -> bool:
        """:meth:`accept` (with ``started=True``) through the writer; resolves after the COMMIT."""
        if self._writer is None:
            return self.accept(entry, now=now, journal=journal, raw_payload=raw_payload, started=True)

        def apply(conn: sqlite3.Connection) -> bool:
            accepted = _accept_in(
                conn, entry, now=now, journal=journal, raw=raw_payload, started=True, codec=self._codec
            )
            self._pending_evict = self._pending_evict or (accepted and self._bump())
            return accepted

        future = self._writer.submit(apply, wait=True)
        assert future is not None
        result: bool = await future
        return result

    def finish_later(
        self, delivery_id: str, *, now: datetime, status: JournalStatus = "done", error: str | None = None
    ) -> None:
        """Queue :meth:`finish` behind the intake writes (no waiting; ordering is kept)."""
        if self._writer is None:
            self.finish(delivery_id, now=now, status=status, error=error)
            return
        self._writer.submit(lambda conn: _finish_in(conn, delivery_id, now, status, error), wait=False)

    def mark_handler_done_later(self, delivery_id: str, handler: str) -> None:
        if self._writer is None:
            self.mark_handler_done(delivery_id, handler)
            return
        self._writer.submit(lambda conn: _mark_done_in(conn, delivery_id, handler), wait=False)

    def _bump(self) -> bool:
        self._inserts += 1
        return self._inserts % EVICT_EVERY == 0

    def _apply_batch(self, ops: list[WriteOp]) -> None:
        """Writer thread: every op in one transaction; one failure stays local to its op.

        The batch is first applied without savepoints (two statements less per op, measured with
        benchmarks/webhook.py). If any op raises, that transaction is rolled back whole and the batch is
        applied again with one savepoint per op. Ops only run SQL (their rolled-back first attempt
        leaves nothing behind), so a redo is safe.
        """
        try:
            with self._db.transaction() as conn:
                for op in ops:
                    op.result = op.apply(conn)
        except Exception:
            for op in ops:
                op.result, op.error = None, None
            self._apply_isolated(ops)
        if self._pending_evict:
            self._pending_evict = False
            self.evict(now=datetime.now(UTC))

    def _apply_isolated(self, ops: list[WriteOp]) -> None:
        """Every op in one transaction, each in a savepoint so one failure stays local."""
        with self._db.transaction() as conn:
            for op in ops:
                conn.execute("SAVEPOINT op")
                try:
                    op.result = op.apply(conn)
                except _AlreadyJournaledError:
                    conn.execute("ROLLBACK TO op")
                    op.result = False
                except Exception as exc:
                    conn.execute("ROLLBACK TO op")
                    op.error = exc
                conn.execute("RELEASE op")

    def _accept(
        self, entry: JournalEntry, *, now: datetime, journal: bool, raw: bytes | str | None, started: bool
    ) -> bool:
        with self._db.transaction() as conn:
            return _accept_in(
                conn, entry, now=now, journal=journal, raw=raw, started=started, codec=self._codec
            )

    def seen(self, delivery_id: str) -> bool:
        rows = self._db.query("SELECT 1 FROM webhook_deliveries WHERE delivery_id = ?", (delivery_id,))
        return bool(rows)

    # ------------------------------------------------------------------ progress
    def start_attempt(self, delivery_id: str, *, now: datetime) -> None:
        self._db.execute(
            "UPDATE job_journal SET attempts = attempts + 1, started_at = ? WHERE delivery_id = ?",
            (_iso(now), delivery_id),
        )

    def mark_handler_done(self, delivery_id: str, handler: str) -> None:
        """Record that one handler finished for this delivery (skipped if the delivery is replayed)."""
        with self._db.lock:
            _mark_done_in(self._db.raw, delivery_id, handler)

    def finish(
        self, delivery_id: str, *, now: datetime, status: JournalStatus = "done", error: str | None = None
    ) -> None:
        """Final status (one small-row write; payloads of finished rows are dropped in batches by
        :meth:`evict`, which intake runs every 1,000 deliveries)."""
        with self._db.lock:
            _finish_in(self._db.raw, delivery_id, now, status, error)

    # ------------------------------------------------------------------ recovery and upkeep
    def unfinished(self) -> list[JournalEntry]:
        """Rows still pending (in flight or queued when the last process stopped), oldest first."""
        rows = self._db.query(
            "SELECT j.delivery_id, j.event_name, j.action, j.installation_id, p.payload, j.status, j.attempts,"
            " j.handlers_done FROM job_journal j JOIN job_payloads p USING (delivery_id)"
            " WHERE j.status = 'pending' ORDER BY j.received_at, j.rowid"
        )
        return [
            JournalEntry(
                delivery_id=r["delivery_id"],
                event_name=r["event_name"],
                action=r["action"],
                installation_id=r["installation_id"],
                payload=self._codec.decode(r["payload"]),
                status=r["status"],
                attempts=r["attempts"],
                handlers_done=json.loads(r["handlers_done"]),
            )
            for r in rows
        ]

    def get(self, delivery_id: str) -> dict[str, Any] | None:
        rows = self._db.query("SELECT * FROM job_journal WHERE delivery_id = ?", (delivery_id,))
        return dict(rows[0]) if rows else None

    def evict(self, *, now: datetime) -> int:
        """Forget delivery ids older than the dedup window, finished journal rows past retention, and the
        stored payloads of every finished row (only pending rows can be replayed)."""
        cutoff = _iso(now - self._window)
        finished_cutoff = _iso(now - max(FINISHED_RETENTION, self._window))
        with self._db.transaction() as conn:
            removed = conn.execute(
                "DELETE FROM webhook_deliveries WHERE received_at < ?"
                " AND delivery_id NOT IN (SELECT delivery_id FROM job_journal WHERE status = 'pending')",
                (cutoff,),
            ).rowcount
            conn.execute(
                "DELETE FROM job_journal WHERE status != 'pending' AND received_at < ?", (finished_cutoff,)
            )
            conn.execute(
                "DELETE FROM job_payloads WHERE delivery_id NOT IN"
                " (SELECT delivery_id FROM job_journal WHERE status = 'pending')"
            )
        return int(removed)

    def counts(self) -> dict[str, int]:
        rows = self._db.query("SELECT status, COUNT(*) AS n FROM job_journal GROUP BY status")
        return {r["status"]: int(r["n"]) for r in rows}


def _accept_in(
    conn: sqlite3.Connection,
    entry: JournalEntry,
    *,
    now: datetime,
    journal: bool,
    raw: bytes | str | None,
    started: bool,
    codec: PayloadCodec,
) -> bool:
    """The intake statements, inside the caller's transaction. Raises _AlreadyJournaledError to undo."""
    cur = conn.execute(
        "INSERT OR IGNORE INTO webhook_deliveries (delivery_id, event_name, received_at) VALUES (?, ?, ?)",
        (entry.delivery_id, entry.event_name, _iso(now)),
    )
    if cur.rowcount == 0:
        return False
    if journal:
        cur = conn.execute(
            "INSERT OR IGNORE INTO job_journal (delivery_id, event_name, action, installation_id,"
            " status, attempts, received_at, started_at) VALUES (?, ?, ?, ?, 'pending', ?, ?, ?)",
            (
                entry.delivery_id,
                entry.event_name,
                entry.action,
                entry.installation_id,
                1 if started else 0,
                _iso(now),
                _iso(now) if started else None,
            ),
        )
        if cur.rowcount == 0:
            raise _AlreadyJournaledError(entry.delivery_id)
        conn.execute(
            "INSERT OR REPLACE INTO job_payloads (delivery_id, payload) VALUES (?, ?)",
            (entry.delivery_id, codec.encode(_payload_bytes(entry, raw))),
        )
    return True


def _finish_in(
    conn: sqlite3.Connection, delivery_id: str, now: datetime, status: str, error: str | None
) -> None:
    conn.execute(
        "UPDATE job_journal SET status = ?, finished_at = ?, error = ? WHERE delivery_id = ?",
        (status, _iso(now), error, delivery_id),
    )


def _mark_done_in(conn: sqlite3.Connection, delivery_id: str, handler: str) -> None:
    conn.execute(
        "UPDATE job_journal SET handlers_done = json_insert(handlers_done, '$[#]', ?)"
        " WHERE delivery_id = ? AND NOT EXISTS (SELECT 1 FROM json_each(handlers_done) WHERE value = ?)",
        (handler, delivery_id, handler),
    )


def _payload_bytes(entry: JournalEntry, raw: bytes | str | None) -> bytes:
    """The body exactly as received (any encoding ``json.loads`` accepts), else the parsed payload
    serialised compactly."""
    if isinstance(raw, bytes):
        return raw
    if isinstance(raw, str):
        return raw.encode("utf-8", "surrogatepass")
    return json.dumps(entry.payload, separators=(",", ":")).encode("utf-8", "surrogatepass")


class _AlreadyJournaledError(sqlite3.IntegrityError):
    """Raised inside :meth:`JobJournal.accept` to roll back; never escapes."""
