"""Operator access to the job journal (``kodiai jobs list|retry``), on a connection of its own.

These run beside a live server: reads use a read-only connection; a retry is one short write transaction
that only moves ``dead`` rows to ``requeued``. The server claims requeued rows within
``REQUEUE_POLL_SECONDS`` (or at its next start), so the CLI never dispatches anything itself.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypedDict

#: What ``kodiai jobs list --state`` accepts (``ignored`` rows are dedup-only ids, never listed).
STATES = ("pending", "running", "requeued", "dead", "done", "failed", "abandoned")
#: Listed when no state is given: everything not finished well.
DEFAULT_STATES = ("pending", "running", "requeued", "dead", "failed", "abandoned")

_COLUMNS = (
    "delivery_id, event_name, action, installation_id, status, attempts, received_at, started_at,"
    " finished_at, error, handlers_done"
)


class NamedRow(Protocol):
    """A row readable by column name: ``sqlite3.Row`` or a psycopg ``dict_row``."""

    def __getitem__(self, key: str, /) -> Any: ...


class DeliveryRow(TypedDict):
    """One journal row as ``kodiai jobs list`` shows it (the same columns from SQLite and PostgreSQL)."""

    delivery_id: str
    event_name: str
    action: str | None
    installation_id: int
    status: str
    attempts: int
    received_at: str
    started_at: str | None
    finished_at: str | None
    error: str | None
    handlers_done: str  # JSON list of the handlers that finished


def delivery_row(row: NamedRow) -> DeliveryRow:
    """A row selected with ``_COLUMNS`` (``sqlite3.Row`` or psycopg's ``dict_row``) as a :class:`DeliveryRow`."""
    return DeliveryRow(
        delivery_id=row["delivery_id"],
        event_name=row["event_name"],
        action=row["action"],
        installation_id=row["installation_id"],
        status=row["status"],
        attempts=row["attempts"],
        received_at=row["received_at"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        error=row["error"],
        handlers_done=row["handlers_done"],
    )


class JournalRecord(DeliveryRow):
    """A whole journal row, as ``get(delivery_id)`` of either journal returns it."""

    seq: int
    body_sha256: str | None


def journal_record(row: NamedRow) -> JournalRecord:
    """A ``SELECT *`` row of ``delivery_journal`` as a :class:`JournalRecord`."""
    return JournalRecord(**delivery_row(row), seq=row["seq"], body_sha256=row["body_sha256"])


def list_deliveries(conn: sqlite3.Connection, states: tuple[str, ...], *, limit: int) -> list[DeliveryRow]:
    """Journal rows in ``states``, newest first (at most ``limit``)."""
    marks = ", ".join("?" for _ in states)
    cur = conn.cursor()
    cur.row_factory = sqlite3.Row
    rows = cur.execute(
        f"SELECT {_COLUMNS} FROM delivery_journal WHERE status IN ({marks}) ORDER BY seq DESC LIMIT ?",
        (*states, int(limit)),
    ).fetchall()
    return [delivery_row(r) for r in rows]


@dataclass
class RetryResult:
    requeued: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)


def retry(conn: sqlite3.Connection, delivery_ids: list[str], *, all_dead: bool = False) -> RetryResult:
    """Move dead deliveries (named, or all) back to ``requeued`` with their attempts reset."""
    result = RetryResult()
    conn.execute("BEGIN IMMEDIATE")
    try:
        targets = retry_targets(
            lambda sql, params: conn.execute(sql, params).fetchall(), delivery_ids, all_dead, result
        )
        for delivery in targets:
            conn.execute(
                "UPDATE delivery_journal SET status = 'requeued', attempts = 0, finished_at = NULL"
                " WHERE delivery_id = ? AND status = 'dead'",
                (delivery,),
            )
            result.requeued.append(delivery)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return result


#: A delivery's status and whether its body is kept: what :func:`retry_refusal` judges (both journals).
RETRY_STATE_SQL = (
    "SELECT j.status, p.seq IS NOT NULL FROM delivery_journal j LEFT JOIN delivery_payloads p USING (seq)"
    " WHERE j.delivery_id = ?"
)


#: Runs a statement written with ``?`` placeholders and returns its rows (each journal's connection).
Fetch = Callable[[str, tuple[object, ...]], Sequence[Sequence[object]]]


def retry_targets(fetch: Fetch, delivery_ids: list[str], all_dead: bool, result: RetryResult) -> list[str]:
    """The deliveries a retry requeues: every dead one, or those named that :func:`retry_refusal` accepts
    (the others go to ``result.refused`` with the reason). Shared by the SQLite and PostgreSQL journals."""
    if all_dead:
        rows = fetch("SELECT delivery_id FROM delivery_journal WHERE status = 'dead' ORDER BY seq", ())
        return [str(r[0]) for r in rows]
    targets = []
    for delivery in delivery_ids:
        found = fetch(RETRY_STATE_SQL, (delivery,))
        reason = retry_refusal(found[0] if found else None)
        if reason is None:
            targets.append(delivery)
        else:
            result.refused[delivery] = reason
    return targets


def retry_refusal(row: Sequence[object] | None) -> str | None:
    """Why ``kodiai jobs retry`` refuses a delivery (its :data:`RETRY_STATE_SQL` row), or None."""
    if row is None or row[0] == "ignored":
        return "no such delivery with work in the journal"
    status, has_body = str(row[0]), bool(row[1])
    if status != "dead":
        return f"not dead (status {status}); only dead deliveries are retried"
    if not has_body:
        return "its stored body is gone"
    return None
