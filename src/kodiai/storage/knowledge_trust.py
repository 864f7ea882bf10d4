"""Queries of ``pending_memories`` (issue 23): findings of untrusted authors held back from learned memory.

A finding on a PR whose author lacks write permission is stored here, not in the memory store, so no later
review can retrieve it. It leaves the table's ``pending`` state only by a decision of someone with write
permission: a 👍 on its comment or the PR's merge promotes it, a 👎 or closing the PR unmerged discards it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from kodiai.storage.database import Database
from kodiai.storage.knowledge_models import DecisionHow, PendingMemory, PendingMemoryRecord, PendingStatus

_COLUMNS = list(PendingMemoryRecord.model_fields)
_CHUNK = 500


def _marks(values: Collection[object]) -> str:
    return ", ".join("?" for _ in values)


def record_pending(db: Database, rows: Sequence[PendingMemoryRecord]) -> int:
    """Insert the rows in one transaction; returns how many."""
    if not rows:
        return 0
    sql = f"INSERT INTO pending_memories ({', '.join(_COLUMNS)}) VALUES ({_marks(_COLUMNS)})"
    with db.transaction() as conn:
        for row in rows:
            values = row.model_dump()
            conn.execute(sql, tuple(values[c] for c in _COLUMNS))
    return len(rows)


def pending_for_pr(
    db: Database, repo: str, pr_number: int, statuses: Collection[PendingStatus]
) -> list[PendingMemory]:
    """The PR's held-back findings in the given states, oldest first."""
    if not statuses:
        return []
    rows = db.query(
        f"SELECT * FROM pending_memories WHERE repo = ? AND pr_number = ? AND status IN ({_marks(statuses)}) "
        "ORDER BY id",
        (repo, int(pr_number), *statuses),
    )
    return [PendingMemory(**dict(r)) for r in rows]


def pending_by_comment(db: Database, repo: str, comment_ids: Iterable[int]) -> dict[int, PendingMemory]:
    """The held-back finding posted as each comment (the newest row when a comment has several)."""
    out: dict[int, PendingMemory] = {}
    ids = sorted({int(c) for c in comment_ids})
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        rows = db.query(
            f"SELECT * FROM pending_memories WHERE repo = ? AND comment_id IN ({_marks(chunk)}) ORDER BY id",
            (repo, *chunk),
        )
        for row in rows:
            out[int(row["comment_id"])] = PendingMemory(**dict(row))
    return out


def decide(
    db: Database,
    ids: Collection[int],
    status: PendingStatus,
    *,
    by: str | None,
    how: DecisionHow,
    only_from: Collection[PendingStatus],
) -> int:
    """Move the rows ``ids`` that are still in one of ``only_from`` to ``status``; returns rows changed."""
    if not ids or not only_from:
        return 0
    with db.transaction() as conn:
        cur = conn.execute(
            "UPDATE pending_memories SET status = ?, decided_by = ?, decided_how = ?, "
            "decided_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') "
            f"WHERE id IN ({_marks(ids)}) AND status IN ({_marks(only_from)})",
            (status, by, how, *(int(i) for i in ids), *only_from),
        )
        return int(cur.rowcount)


def list_pending(db: Database, repo: str | None = None) -> list[PendingMemory]:
    """Every row (for ``kodiai memory list``), oldest first."""
    sql = "SELECT * FROM pending_memories"
    params: tuple[object, ...] = ()
    if repo is not None:
        sql, params = sql + " WHERE repo = ?", (repo,)
    return [PendingMemory(**dict(r)) for r in db.query(sql + " ORDER BY id", params)]
