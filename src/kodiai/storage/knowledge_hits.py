"""``retrieval_hits``: which learned memories one review's retrieval looked at (issue 28, the dashboard).

One row per memory in the pool after rerank, ``kept`` when it reached the prompt. Written once per delivery
(``ON CONFLICT DO NOTHING`` on ``(delivery_id, memory_id)``: a redelivery adds nothing), read by
:mod:`kodiai.dashboard.queries_memory` and :mod:`kodiai.dashboard.queries_quiet`.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from kodiai.storage.database import Database

COLUMNS = (
    "delivery_id",
    "repo",
    "pr_number",
    "memory_id",
    "finding_id",
    "source_repo",
    "outcome",
    "distance",
    "adjusted_distance",
    "kept",
    "kept_rank",
)


class RetrievalHit(BaseModel):
    """One memory one retrieval looked at."""

    model_config = ConfigDict(frozen=True)

    delivery_id: str
    repo: str
    pr_number: int | None
    memory_id: int
    finding_id: int | None
    source_repo: str
    outcome: str
    distance: float
    adjusted_distance: float | None
    kept: bool
    kept_rank: int | None


def record_hits(db: Database, hits: Sequence[RetrievalHit]) -> int:
    """Insert the rows of one retrieval in one transaction; returns how many were new."""
    if not hits:
        return 0
    sql = (
        f"INSERT INTO retrieval_hits ({', '.join(COLUMNS)}) VALUES ({', '.join('?' for _ in COLUMNS)})"
        " ON CONFLICT DO NOTHING"
    )
    added = 0
    with db.transaction() as tx:
        for hit in hits:
            values = hit.model_dump()
            values["kept"] = int(hit.kept)
            added += tx.execute(sql, tuple(values[c] for c in COLUMNS)).rowcount
    return added
