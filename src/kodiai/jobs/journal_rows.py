"""One delivery's rows in the job journal: the intake record, how a body is stored, and the SQL statements
that write a delivery's rows, each run inside the caller's transaction (the group-commit batch or a
transaction of its own), so a batch can hold many of them.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

import zstandard

from kodiai.webhook.body import parse_json

PAYLOAD_ZSTD_LEVEL = 1  # 2.2 KB for a 24 KB pull_request body in 35 µs (level 3: 2.1 KB in 46 µs)
FINAL_STATUSES = ("done", "failed", "abandoned")  # their bodies are dropped; a dead row keeps its body


@dataclass(frozen=True, slots=True)
class Intake:
    """What intake records for one delivery (a plain record: it is built on the acknowledgement path).

    ``digest``: the body's sha256 (hex) when a replayed body under a new delivery id must count as a
    duplicate too (the webhook ingress always passes it).
    """

    delivery_id: str
    event_name: str
    action: str | None
    installation_id: int
    body: bytes
    digest: str | None = None


@dataclass(frozen=True, slots=True)
class Duplicate:
    """Intake's answer for a delivery already recorded: by its id, or by the same body under another id."""

    of: str
    by: Literal["id", "body"]

    def __bool__(self) -> bool:
        return False


Acceptance = Literal[True] | Duplicate


def iso(now: datetime) -> str:
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


def accept_in(
    conn: sqlite3.Connection,
    intake: Intake,
    *,
    now: datetime,
    window: timedelta,
    journal: bool,
    started: bool,
    codec: PayloadCodec,
) -> Acceptance:
    """The intake statements, inside the caller's transaction; a :class:`Duplicate` when already seen."""
    received = iso(now)
    if intake.digest is not None:
        row = conn.execute(
            "SELECT delivery_id FROM delivery_journal WHERE body_sha256 = ? AND received_at >= ? LIMIT 1",
            (intake.digest, iso(now - window)),
        ).fetchone()
        if row is not None and row[0] != intake.delivery_id:
            return Duplicate(of=str(row[0]), by="body")
    first = journal and started
    status = ("running" if first else "pending") if journal else "ignored"
    cur = conn.execute(
        "INSERT OR IGNORE INTO delivery_journal (delivery_id, event_name, action, installation_id, status,"
        " attempts, received_at, started_at, body_sha256) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            intake.delivery_id,
            intake.event_name,
            intake.action,
            intake.installation_id,
            status,
            1 if first else 0,
            received,
            received if first else None,
            intake.digest,
        ),
    )
    if cur.rowcount == 0:
        return Duplicate(of=intake.delivery_id, by="id")
    if journal:
        conn.execute(
            "INSERT INTO delivery_payloads (seq, payload) VALUES (?, ?)",
            (cur.lastrowid, codec.encode(intake.body)),
        )
    return True


def start_in(conn: sqlite3.Connection, delivery_id: str, now: datetime) -> int:
    row = conn.execute(
        "UPDATE delivery_journal SET status = 'running', attempts = attempts + 1, started_at = ?"
        " WHERE delivery_id = ? AND status IN ('pending', 'running') RETURNING attempts",
        (iso(now), delivery_id),
    ).fetchone()
    return int(row[0]) if row is not None else 0


def release_in(conn: sqlite3.Connection, delivery_id: str) -> None:
    conn.execute(
        "UPDATE delivery_journal SET status = 'pending', attempts = MAX(attempts - 1, 0)"
        " WHERE delivery_id = ? AND status = 'running'",
        (delivery_id,),
    )


def claim_requeued_in(conn: sqlite3.Connection) -> list[sqlite3.Row]:
    cur = conn.cursor()
    cur.row_factory = sqlite3.Row
    rows = cur.execute(
        "SELECT j.delivery_id, j.event_name, j.action, j.installation_id, p.payload, j.status, j.attempts,"
        " j.handlers_done, j.error FROM delivery_journal j JOIN delivery_payloads p USING (seq)"
        " WHERE j.status = 'requeued' ORDER BY j.seq"
    ).fetchall()
    conn.execute("UPDATE delivery_journal SET status = 'pending' WHERE status = 'requeued'")
    return list(rows)


def finish_in(
    conn: sqlite3.Connection, delivery_id: str, now: datetime, status: str, error: str | None
) -> None:
    conn.execute(
        "UPDATE delivery_journal SET status = ?, finished_at = ?, error = ? WHERE delivery_id = ?",
        (status, iso(now), error, delivery_id),
    )
    if status in FINAL_STATUSES:
        conn.execute(
            "DELETE FROM delivery_payloads WHERE seq = (SELECT seq FROM delivery_journal WHERE delivery_id = ?)",
            (delivery_id,),
        )


def mark_done_in(conn: sqlite3.Connection, delivery_id: str, handler: str) -> None:
    conn.execute(
        "UPDATE delivery_journal SET handlers_done = json_insert(handlers_done, '$[#]', ?)"
        " WHERE delivery_id = ? AND NOT EXISTS (SELECT 1 FROM json_each(handlers_done) WHERE value = ?)",
        (handler, delivery_id, handler),
    )


def payload_bytes(payload: dict[str, Any], raw: bytes | str | None) -> bytes:
    """The body exactly as received (any encoding ``json.loads`` accepts), else the parsed payload
    serialised compactly."""
    if isinstance(raw, bytes):
        return raw
    if isinstance(raw, str):
        return raw.encode("utf-8", "surrogatepass")
    return json.dumps(payload, separators=(",", ":")).encode("utf-8", "surrogatepass")


_FIRST_SCHEMA_COLUMNS = (
    "delivery_id, event_name, action, installation_id, status, attempts, handlers_done, received_at,"
    " started_at, finished_at, error"
)


def adopt_first_schema_rows(conn: sqlite3.Connection) -> None:
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
