"""Mention write-mode state in the jobs database: in-flight write keys, write rate limits, turn counts.

The original kept these in in-process maps: a restart forgot them and a second process never saw them.
Here they are rows of the jobs database (``migrations/jobs/0003_mention_state.sql``): the jobs SQLite file,
or the PostgreSQL database of ``DATABASE_URL`` (same tables, same SQL; see :mod:`kodiai.storage.database`),
so every process on it shares them:

- **in-flight write keys** — a mention's write-output key is held while its edits are published; a second
  request for the same key is told the write is already in progress. A process that dies while holding
  a key cannot block it forever: the key expires after a TTL (30 minutes by default) and may then be
  taken over. Release needs the owner token the key was acquired with, so a process whose key expired
  and was taken over cannot release the new holder's key.
- **write rate limit** (``write.minIntervalSeconds``) — the time of the last bot-PR creation per
  ``<installationId>:<owner>/<repo>``; entries older than 24 h are pruned, at most 10 000 are kept.
- **conversation turns** (``mention.conversation.maxTurnsPerPr``) — successful inline-thread replies per
  ``<owner>/<repo>#<n>``; an entry untouched for 24 h counts as gone; at most 10 000 are kept.

Time is always passed in (``now``, a timezone-aware ``datetime``); nothing here reads a clock. Each
write is one transaction that runs alone (SQLite: ``BEGIN IMMEDIATE``, a second process waits through the
busy timeout; PostgreSQL: the store's advisory lock), so check-and-set steps are atomic across processes. Times are stored as integer Unix epoch
microseconds (exact round trip).

The keys are built by :mod:`kodiai.mention.intent` (``write_rate_limit_key``,
``conversation_key``, ``build_write_output_key``); this store treats them as opaque strings.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType

from kodiai.storage.database import Database
from kodiai.storage.opening import open_migrated

__all__ = [
    "MAX_ENTRIES",
    "STATE_WINDOW",
    "WRITE_LOCK_TTL",
    "MentionState",
    "rate_limit_retry_seconds",
]

WRITE_LOCK_TTL = timedelta(minutes=30)
STATE_WINDOW = timedelta(hours=24)
MAX_ENTRIES = 10_000

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def _us(moment: datetime) -> int:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError("mention state times must be timezone-aware")
    return (moment - _EPOCH) // _MICROSECOND


def _at(us: int) -> datetime:
    return _EPOCH + timedelta(microseconds=us)


def _span_us(span: timedelta) -> int:
    return span // _MICROSECOND


def rate_limit_retry_seconds(
    last_write_at: datetime | None, now: datetime, min_interval_seconds: float
) -> int | None:
    """Seconds to tell the user to wait (``ceil`` of what remains of the interval), or ``None`` when the
    write may go ahead: no limit configured, no earlier write, or the last one is at least the interval old.

    A last write stamped in the future (another process's clock running ahead) waits at most one interval.
    """
    if min_interval_seconds <= 0 or last_write_at is None:
        return None
    elapsed = (now - last_write_at).total_seconds()
    if elapsed >= min_interval_seconds:
        return None
    remaining = min(min_interval_seconds - elapsed, min_interval_seconds)
    return math.ceil(remaining)


class MentionState:
    """The three kinds of mention state on one jobs database connection (see the module docstring)."""

    def __init__(
        self, conn: Database, *, max_entries: int = MAX_ENTRIES, window: timedelta = STATE_WINDOW
    ) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._conn = conn
        self._max_entries = max_entries
        self._window_us = _span_us(window)

    @classmethod
    def open(
        cls, path: str | Path, *, max_entries: int = MAX_ENTRIES, window: timedelta = STATE_WINDOW
    ) -> MentionState:
        """Open (creating) the jobs database at ``path`` (or the PostgreSQL database of a ``postgresql://``
        URL) and apply ``migrations/jobs``."""
        db = open_migrated(path, "jobs", lock="mention_state")
        return cls(db, max_entries=max_entries, window=window)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> MentionState:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # ---- in-flight write keys ------------------------------------------------------------------

    def try_acquire_write(
        self, key: str, owner_token: str, now: datetime, ttl: timedelta = WRITE_LOCK_TTL
    ) -> bool:
        """Hold ``key`` for ``owner_token`` until ``now + ttl``; ``False`` when someone (this owner
        included) already holds it and it has not expired. Expired keys are cleared on the way."""
        if ttl <= timedelta(0):
            raise ValueError("ttl must be positive")
        at = _us(now)
        with self._conn.transaction() as conn:
            conn.execute("DELETE FROM mention_write_locks WHERE expires_at <= ?", (at,))
            cur = conn.execute(
                "INSERT INTO mention_write_locks (write_key, owner_token, acquired_at, expires_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (key, owner_token, at, at + _span_us(ttl)),
            )
            return cur.rowcount == 1

    def acquire_or_resume_write(
        self, key: str, owner_token: str, now: datetime, ttl: timedelta = WRITE_LOCK_TTL
    ) -> bool:
        """:meth:`try_acquire_write`, except that a key already held by ``owner_token`` is taken back
        (its expiry renewed). With the delivery id as the token, the replay of a delivery whose process
        died while holding the key continues at once instead of waiting for the TTL."""
        if ttl <= timedelta(0):
            raise ValueError("ttl must be positive")
        at = _us(now)
        with self._conn.transaction() as conn:
            conn.execute("DELETE FROM mention_write_locks WHERE expires_at <= ?", (at,))
            cur = conn.execute(
                "INSERT INTO mention_write_locks (write_key, owner_token, acquired_at, expires_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT(write_key) DO UPDATE SET expires_at = excluded.expires_at "
                "WHERE mention_write_locks.owner_token = excluded.owner_token",
                (key, owner_token, at, at + _span_us(ttl)),
            )
            return cur.rowcount == 1

    def release_write(self, key: str, owner_token: str) -> bool:
        """Release ``key`` if ``owner_token`` holds it; ``False`` when it does not (expired and taken over,
        or never held)."""
        with self._conn.transaction() as conn:
            cur = conn.execute(
                "DELETE FROM mention_write_locks WHERE write_key = ? AND owner_token = ?", (key, owner_token)
            )
            return cur.rowcount == 1

    def write_holder(self, key: str, now: datetime) -> str | None:
        """The owner token holding ``key`` at ``now`` (``None`` when free or expired)."""
        row = self._conn.fetch_one(
            "SELECT owner_token FROM mention_write_locks WHERE write_key = ? AND expires_at > ?",
            (key, _us(now)),
        )
        return str(row[0]) if row else None

    # ---- write rate limit ----------------------------------------------------------------------

    def last_write_at(self, scope_key: str, now: datetime | None = None) -> datetime | None:
        """When the last write under ``scope_key`` was recorded; with ``now``, an entry older than the
        24 h window counts as gone (as if already pruned)."""
        row = self._conn.fetch_one(
            "SELECT last_write_at FROM mention_write_rate WHERE scope_key = ?", (scope_key,)
        )
        if row is None:
            return None
        at = int(row[0])
        if now is not None and _us(now) - at > self._window_us:
            return None
        return _at(at)

    def record_write(self, scope_key: str, now: datetime) -> None:
        """Record a write under ``scope_key`` at ``now`` (a later time already recorded is kept), then
        prune entries older than the window and keep only the newest ``max_entries``."""
        at = _us(now)
        with self._conn.transaction() as conn:
            conn.execute(
                "INSERT INTO mention_write_rate (scope_key, last_write_at) VALUES (?, ?) "
                "ON CONFLICT (scope_key) DO UPDATE SET last_write_at = CASE "
                "WHEN excluded.last_write_at > mention_write_rate.last_write_at THEN excluded.last_write_at "
                "ELSE mention_write_rate.last_write_at END",
                (scope_key, at),
            )
            conn.execute("DELETE FROM mention_write_rate WHERE last_write_at < ?", (at - self._window_us,))
            conn.execute(
                "DELETE FROM mention_write_rate WHERE scope_key NOT IN (SELECT scope_key FROM mention_write_rate "
                "ORDER BY last_write_at DESC, scope_key DESC LIMIT ?)",
                (self._max_entries,),
            )

    # ---- conversation turns --------------------------------------------------------------------

    def turn_count(self, pr_key: str, now: datetime) -> int:
        """Turns recorded for ``pr_key``; 0 when none, or when the entry was untouched for over 24 h."""
        row = self._conn.fetch_one(
            "SELECT turns, updated_at FROM mention_conversation_turns WHERE pr_key = ?", (pr_key,)
        )
        if row is None or _us(now) - int(row[1]) > self._window_us:
            return 0
        return int(row[0])

    def increment_turn(self, pr_key: str, now: datetime) -> int:
        """Count one more turn for ``pr_key`` (starting again from 1 after an expired entry); returns the
        new count. Prunes entries untouched for over 24 h and keeps only the newest ``max_entries``."""
        at = _us(now)
        cutoff = at - self._window_us
        with self._conn.transaction() as conn:
            row = conn.fetch_one(
                "SELECT turns, updated_at FROM mention_conversation_turns WHERE pr_key = ?", (pr_key,)
            )
            turns = 1 if row is None or int(row[1]) < cutoff else int(row[0]) + 1
            conn.execute(
                "INSERT INTO mention_conversation_turns (pr_key, turns, updated_at) VALUES (?, ?, ?) "
                "ON CONFLICT (pr_key) DO UPDATE SET turns = excluded.turns, updated_at = CASE "
                "WHEN excluded.updated_at > mention_conversation_turns.updated_at THEN excluded.updated_at "
                "ELSE mention_conversation_turns.updated_at END",
                (pr_key, turns, at),
            )
            conn.execute("DELETE FROM mention_conversation_turns WHERE updated_at < ?", (cutoff,))
            conn.execute(
                "DELETE FROM mention_conversation_turns WHERE pr_key NOT IN (SELECT pr_key FROM "
                "mention_conversation_turns ORDER BY updated_at DESC, pr_key DESC LIMIT ?)",
                (self._max_entries,),
            )
            return turns

    # ---- maintenance ---------------------------------------------------------------------------

    def prune(self, now: datetime) -> None:
        """Drop expired write keys and rate/turn entries older than the window (also done on each write)."""
        at = _us(now)
        with self._conn.transaction() as conn:
            conn.execute("DELETE FROM mention_write_locks WHERE expires_at <= ?", (at,))
            conn.execute("DELETE FROM mention_write_rate WHERE last_write_at < ?", (at - self._window_us,))
            conn.execute(
                "DELETE FROM mention_conversation_turns WHERE updated_at < ?", (at - self._window_us,)
            )
