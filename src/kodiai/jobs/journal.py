"""The durable side of webhook intake: delivery dedup and the job journal, in one SQLite file.

A delivery is *accepted* by appending one row to ``delivery_journal`` (its id is the dedup key, kept
≥ 24 h) and, when it has work to do, its body to ``delivery_payloads``, in one transaction. This happens before the webhook is acknowledged, so a crash or a
deploy after the 200 loses nothing: unfinished rows are replayed once at start-up. Handlers that
already finished for a delivery are recorded individually and skipped on replay.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import zstandard
from pydantic import BaseModel, Field

from kodiai.jobs.journal_writer import Checkpointer, JournalWriter, WriteOp
from kodiai.storage.connection import MEMORY, LockedConnection, connect
from kodiai.storage.migrations import apply_migrations_to
from kodiai.webhook.body import parse_json

DEDUP_WINDOW = timedelta(hours=24)
FINISHED_RETENTION = timedelta(days=7)
EVICT_EVERY = 1000
PAYLOAD_ZSTD_LEVEL = 1  # 2.2 KB for a 24 KB pull_request body in 35 µs (level 3: 2.1 KB in 46 µs)

JournalStatus = Literal["pending", "done", "failed", "abandoned"]
FINAL_STATUSES = ("done", "failed", "abandoned")


@dataclass(frozen=True, slots=True)
class Intake:
    """What intake records for one delivery (a plain record: it is built on the acknowledgement path)."""

    delivery_id: str
    event_name: str
    action: str | None
    installation_id: int
    body: bytes


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

    def __init__(
        self,
        conn: LockedConnection,
        *,
        dedup_window: timedelta = DEDUP_WINDOW,
        path: str | Path | None = None,
    ) -> None:
        self._db = conn
        self._path = path
        self._checkpointer: Checkpointer | None = None
        self._window = dedup_window
        self._inserts = 0
        self._writer: JournalWriter | None = None
        self._pending_evict = False
        self._codec = PayloadCodec()

    @classmethod
    def open(cls, path: str | Path, *, dedup_window: timedelta = DEDUP_WINDOW) -> JobJournal:
        """Open (creating) the jobs database, apply ``migrations/jobs`` and move rows left in the tables of
        the first schema across."""
        raw = connect(path)
        try:
            apply_migrations_to(raw, "jobs")
            _adopt_first_schema_rows(raw)
        except BaseException:
            raw.close()
            raise
        return cls(LockedConnection(raw), dedup_window=dedup_window, path=path)

    def close(self) -> None:
        """Stop the writer (after it applies what is queued), then close the connection."""
        if self._writer is not None:
            self._writer.stop()
            self._writer = None
        if self._checkpointer is not None:
            self._checkpointer.stop()
            self._checkpointer = None
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

        ``raw_payload`` is the body as received (stored verbatim, no re-serialisation; else the entry's
        payload is serialised); ``started`` records the first attempt at once when the caller dispatches
        right away.
        """
        intake = Intake(
            entry.delivery_id,
            entry.event_name,
            entry.action,
            entry.installation_id,
            _payload_bytes(entry, raw_payload),
        )
        return self._accept_now(intake, now=now, journal=journal, started=started)

    def _accept_now(self, intake: Intake, *, now: datetime, journal: bool, started: bool) -> bool:
        """Intake in its own transaction (no writer), evicting every ``EVICT_EVERY`` acceptances."""
        with self._db.transaction() as conn:
            accepted = _accept_in(conn, intake, now=now, journal=journal, started=started, codec=self._codec)
        if accepted and self._bump():
            self.evict(now=now)
        return accepted

    # ------------------------------------------------------------------ group commit (server use)
    def start_writer(self) -> None:
        """Route the ``*_async``/``*_later`` methods through the group-commit writer thread, and move WAL
        checkpoints off this connection onto a thread of their own (see :mod:`kodiai.jobs.journal_writer`)."""
        if self._writer is None:
            self._writer = JournalWriter(self._apply_batch)
        if self._checkpointer is None and self._path is not None and str(self._path) != MEMORY:
            self._db.execute("PRAGMA wal_autocheckpoint=0")
            self._checkpointer = Checkpointer(self._path)

    async def accept_async(self, intake: Intake, *, now: datetime, journal: bool = True) -> bool:
        """Accept with the first attempt recorded, through the writer; resolves after the COMMIT."""
        if self._writer is None:
            return self._accept_now(intake, now=now, journal=journal, started=True)

        def apply(conn: sqlite3.Connection) -> bool:
            accepted = _accept_in(conn, intake, now=now, journal=journal, started=True, codec=self._codec)
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
        """Group commit: every op in one transaction; one failure stays local to its op.

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
                except Exception as exc:
                    conn.execute("ROLLBACK TO op")
                    op.error = exc
                conn.execute("RELEASE op")

    def seen(self, delivery_id: str) -> bool:
        rows = self._db.query("SELECT 1 FROM delivery_journal WHERE delivery_id = ?", (delivery_id,))
        return bool(rows)

    # ------------------------------------------------------------------ progress
    def start_attempt(self, delivery_id: str, *, now: datetime) -> None:
        self._db.execute(
            "UPDATE delivery_journal SET attempts = attempts + 1, started_at = ? WHERE delivery_id = ?",
            (_iso(now), delivery_id),
        )

    def mark_handler_done(self, delivery_id: str, handler: str) -> None:
        """Record that one handler finished for this delivery (skipped if the delivery is replayed)."""
        with self._db.lock:
            _mark_done_in(self._db.raw, delivery_id, handler)

    def finish(
        self, delivery_id: str, *, now: datetime, status: JournalStatus = "done", error: str | None = None
    ) -> None:
        """Final status; a finished delivery's stored body is dropped with it (only pending rows replay)."""
        with self._db.transaction() as conn:
            _finish_in(conn, delivery_id, now, status, error)

    # ------------------------------------------------------------------ recovery and upkeep
    def unfinished(self) -> list[JournalEntry]:
        """Rows still pending (in flight or queued when the last process stopped), oldest first."""
        rows = self._db.query(
            "SELECT j.delivery_id, j.event_name, j.action, j.installation_id, p.payload, j.status, j.attempts,"
            " j.handlers_done FROM delivery_journal j JOIN delivery_payloads p USING (seq)"
            " WHERE j.status = 'pending' ORDER BY j.seq"
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
        """The journal row of a delivery that had work (deliveries acknowledged without work: ``None``)."""
        rows = self._db.query(
            "SELECT * FROM delivery_journal WHERE delivery_id = ? AND status != 'ignored'", (delivery_id,)
        )
        return dict(rows[0]) if rows else None

    def evict(self, *, now: datetime) -> int:
        """Forget delivery ids older than the dedup window, finished rows past their retention, and any
        stored body of a row that is no longer pending. Returns how many delivery rows went."""
        cutoff = _iso(now - self._window)
        finished_cutoff = _iso(now - max(FINISHED_RETENTION, self._window))
        with self._db.transaction() as conn:
            removed = conn.execute(
                "DELETE FROM delivery_journal WHERE received_at < ? AND status = 'ignored'", (cutoff,)
            ).rowcount
            removed += conn.execute(
                "DELETE FROM delivery_journal WHERE received_at < ? AND status IN ('done', 'failed', 'abandoned')",
                (finished_cutoff,),
            ).rowcount
            conn.execute(
                "DELETE FROM delivery_payloads WHERE seq NOT IN"
                " (SELECT seq FROM delivery_journal WHERE status = 'pending')"
            )
        return int(removed)

    def counts(self) -> dict[str, int]:
        rows = self._db.query(
            "SELECT status, COUNT(*) AS n FROM delivery_journal WHERE status != 'ignored' GROUP BY status"
        )
        return {r["status"]: int(r["n"]) for r in rows}


def _accept_in(
    conn: sqlite3.Connection,
    intake: Intake,
    *,
    now: datetime,
    journal: bool,
    started: bool,
    codec: PayloadCodec,
) -> bool:
    """The intake statements, inside the caller's transaction; False when the id was already seen."""
    received = _iso(now)
    first = journal and started
    cur = conn.execute(
        "INSERT OR IGNORE INTO delivery_journal (delivery_id, event_name, action, installation_id, status,"
        " attempts, received_at, started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            intake.delivery_id,
            intake.event_name,
            intake.action,
            intake.installation_id,
            "pending" if journal else "ignored",
            1 if first else 0,
            received,
            received if first else None,
        ),
    )
    if cur.rowcount == 0:
        return False
    if journal:
        conn.execute(
            "INSERT INTO delivery_payloads (seq, payload) VALUES (?, ?)",
            (cur.lastrowid, codec.encode(intake.body)),
        )
    return True


def _finish_in(
    conn: sqlite3.Connection, delivery_id: str, now: datetime, status: str, error: str | None
) -> None:
    conn.execute(
        "UPDATE delivery_journal SET status = ?, finished_at = ?, error = ? WHERE delivery_id = ?",
        (status, _iso(now), error, delivery_id),
    )
    if status in FINAL_STATUSES:
        conn.execute(
            "DELETE FROM delivery_payloads WHERE seq = (SELECT seq FROM delivery_journal WHERE delivery_id = ?)",
            (delivery_id,),
        )


def _mark_done_in(conn: sqlite3.Connection, delivery_id: str, handler: str) -> None:
    conn.execute(
        "UPDATE delivery_journal SET handlers_done = json_insert(handlers_done, '$[#]', ?)"
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


_FIRST_SCHEMA_COLUMNS = (
    "delivery_id, event_name, action, installation_id, status, attempts, handlers_done, received_at,"
    " started_at, finished_at, error"
)


def _adopt_first_schema_rows(conn: sqlite3.Connection) -> None:
    """Move rows written by the first schema (``webhook_deliveries``, ``job_journal``, ``job_payloads``)
    into ``delivery_journal``/``delivery_payloads`` in one transaction, so an upgrade neither re-runs a
    delivery nor loses a pending one. The old tables stay (migrations are additive), empty."""
    if not conn.execute(
        "SELECT 1 FROM webhook_deliveries UNION ALL SELECT 1 FROM job_journal LIMIT 1"
    ).fetchone():
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            f"INSERT OR IGNORE INTO delivery_journal ({_FIRST_SCHEMA_COLUMNS})"
            " SELECT w.delivery_id, w.event_name, j.action, COALESCE(j.installation_id, 0),"
            " COALESCE(j.status, 'ignored'), COALESCE(j.attempts, 0), COALESCE(j.handlers_done, '[]'),"
            " w.received_at, j.started_at, j.finished_at, j.error"
            " FROM webhook_deliveries w LEFT JOIN job_journal j USING (delivery_id) ORDER BY w.received_at"
        )
        conn.execute(
            f"INSERT OR IGNORE INTO delivery_journal ({_FIRST_SCHEMA_COLUMNS})"
            f" SELECT {_FIRST_SCHEMA_COLUMNS} FROM job_journal ORDER BY received_at"
        )
        conn.execute(
            "INSERT OR IGNORE INTO delivery_payloads (seq, payload) SELECT d.seq, p.payload"
            " FROM delivery_journal d JOIN job_payloads p USING (delivery_id) WHERE d.status = 'pending'"
        )
        for table in ("job_payloads", "job_journal", "webhook_deliveries"):
            conn.execute(f"DELETE FROM {table}")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
