"""The durable side of webhook intake: delivery dedup and the job journal, in one SQLite file.

A delivery is *accepted* in one transaction that remembers its id (dedup, ≥ 24 h) and, when it has
work to do, journals the event. This happens before the webhook is acknowledged, so a crash or a
deploy after the 200 loses nothing: unfinished rows are replayed once at start-up. Handlers that
already finished for a delivery are recorded individually and skipped on replay.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from kodiai.storage.connection import LockedConnection, connect
from kodiai.storage.migrations import apply_migrations_to

DEDUP_WINDOW = timedelta(hours=24)
FINISHED_RETENTION = timedelta(days=7)
EVICT_EVERY = 1000

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


class JobJournal:
    """Dedup + journal over one locked SQLite connection (see :mod:`kodiai.storage.connection`)."""

    def __init__(self, conn: LockedConnection, *, dedup_window: timedelta = DEDUP_WINDOW) -> None:
        self._db = conn
        self._window = dedup_window
        self._inserts = 0

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
        self._db.close()

    # ------------------------------------------------------------------ intake
    def accept(self, entry: JournalEntry, *, now: datetime, journal: bool = True) -> bool:
        """Remember the delivery id and (if ``journal``) journal the event; False if already seen."""
        try:
            accepted = self._accept(entry, now=now, journal=journal)
        except _AlreadyJournaledError:  # journaled earlier and its dedup row since evicted
            return False
        if accepted:
            self._inserts += 1
            if self._inserts % EVICT_EVERY == 0:
                self.evict(now=now)
        return accepted

    def _accept(self, entry: JournalEntry, *, now: datetime, journal: bool) -> bool:
        with self._db.transaction() as conn:
            cur = conn.execute(
                "INSERT OR IGNORE INTO webhook_deliveries (delivery_id, event_name, received_at) VALUES (?, ?, ?)",
                (entry.delivery_id, entry.event_name, _iso(now)),
            )
            if cur.rowcount == 0:
                return False
            if journal:
                cur = conn.execute(
                    "INSERT OR IGNORE INTO job_journal (delivery_id, event_name, action, installation_id,"
                    " payload, status, received_at) VALUES (?, ?, ?, ?, ?, 'pending', ?)",
                    (
                        entry.delivery_id,
                        entry.event_name,
                        entry.action,
                        entry.installation_id,
                        json.dumps(entry.payload, separators=(",", ":")),
                        _iso(now),
                    ),
                )
                if cur.rowcount == 0:
                    raise _AlreadyJournaledError(entry.delivery_id)
        return True

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
        with self._db.transaction() as conn:
            row = conn.execute(
                "SELECT handlers_done FROM job_journal WHERE delivery_id = ?", (delivery_id,)
            ).fetchone()
            if row is None:
                return
            done = list(json.loads(row[0]))
            if handler not in done:
                done.append(handler)
                conn.execute(
                    "UPDATE job_journal SET handlers_done = ? WHERE delivery_id = ?",
                    (json.dumps(done), delivery_id),
                )

    def finish(
        self, delivery_id: str, *, now: datetime, status: JournalStatus = "done", error: str | None = None
    ) -> None:
        self._db.execute(
            "UPDATE job_journal SET status = ?, finished_at = ?, error = ? WHERE delivery_id = ?",
            (status, _iso(now), error, delivery_id),
        )

    # ------------------------------------------------------------------ recovery and upkeep
    def unfinished(self) -> list[JournalEntry]:
        """Rows still pending (in flight or queued when the last process stopped), oldest first."""
        rows = self._db.query(
            "SELECT delivery_id, event_name, action, installation_id, payload, status, attempts, handlers_done"
            " FROM job_journal WHERE status = 'pending' ORDER BY received_at, rowid"
        )
        return [
            JournalEntry(
                delivery_id=r["delivery_id"],
                event_name=r["event_name"],
                action=r["action"],
                installation_id=r["installation_id"],
                payload=json.loads(r["payload"]),
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
        """Forget delivery ids older than the dedup window and finished journal rows past retention."""
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
        return int(removed)

    def counts(self) -> dict[str, int]:
        rows = self._db.query("SELECT status, COUNT(*) AS n FROM job_journal GROUP BY status")
        return {r["status"]: int(r["n"]) for r in rows}


class _AlreadyJournaledError(sqlite3.IntegrityError):
    """Raised inside :meth:`JobJournal.accept` to roll back; never escapes."""
