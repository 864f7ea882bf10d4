"""Carrying out recorded forgets and restores where the learned memory is open.

A ``web`` replica's dashboard does not open the memory store, so its forget (and its restore) is only a
``memory_governance`` row with ``applied_at`` NULL. Whoever has the store open — the process itself on role
``all``, else the workers' periodic maintenance (:func:`apply_pending_governance`) — applies those rows:

- forget: the finding's memory rows leave the store (``removed`` counts them);
- a restored forget: the finding's memory is written again from the knowledge store's finding (its text is
  the same three lines review wrote, so the same embedding model gives the same vector); its 👍/👎 rows come
  back at the finding's next feedback sync, which no longer skips it.

Blocking (LanceDB, the embedder, the database): run in a worker thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from kodiai.learning.embeddings import EmbeddingProvider
from kodiai.learning.setup import finding_memory_text
from kodiai.learning.types import LearningMemoryRecord
from kodiai.storage.database import Database

NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"


class GovernedStore(Protocol):
    def retire(self, repo: str, finding_id: int, outcome: str | None = None) -> int: ...

    def write_memory(self, record: LearningMemoryRecord, embedding: Any) -> int | None: ...


@dataclass
class AppliedCounts:
    forgets: int = 0
    removed: int = 0
    restores: int = 0
    written: int = 0


def mark_applied(db: Database, governance_id: int, removed: int | None = None) -> None:
    if removed is None:
        db.execute(f"UPDATE memory_governance SET applied_at = {NOW} WHERE id = ?", (governance_id,))
    else:
        db.execute(
            f"UPDATE memory_governance SET applied_at = {NOW}, removed = ? WHERE id = ?",
            (removed, governance_id),
        )


def restore_memory(
    db: Database, store: GovernedStore, embeddings: EmbeddingProvider, repo: str, finding_id: int
) -> int:
    """Write the finding's memory again; returns the rows written (0: no such finding, or it is there)."""
    row = db.fetch_one(
        "SELECT f.severity, f.category, f.title, f.file_path, f.suppressed, f.review_id FROM findings f"
        " JOIN reviews r ON r.id = f.review_id WHERE r.repo = ? AND f.comment_id = ? ORDER BY f.id DESC",
        (repo, finding_id),
    )
    if row is None:
        return 0
    severity, category, title, file_path, suppressed, review_id = row
    vector = embeddings.generate(finding_memory_text(severity, category, title, file_path), "document")
    if vector is None:
        raise RuntimeError("the embedding provider returned no vector for the restored memory")
    record = LearningMemoryRecord(
        repo=repo,
        owner=repo.split("/", 1)[0],
        finding_id=finding_id,
        review_id=int(review_id),
        source_repo=repo,
        finding_text=str(title),
        severity=str(severity),
        category=str(category),
        file_path=str(file_path),
        outcome="suppressed" if suppressed else "accepted",
        embedding_model=embeddings.model,
        embedding_dim=embeddings.dimensions,
    )
    return 0 if store.write_memory(record, np.asarray(vector)) is None else 1


def apply_pending_governance(
    db: Database, store: GovernedStore, embeddings: EmbeddingProvider | None, limit: int = 500
) -> AppliedCounts:
    """Apply the forget rows not yet carried out (oldest first, ``limit`` per run). A restore needs the
    embedder; without one (``none`` provider) it stays pending."""
    counts = AppliedCounts()
    rows = db.fetch_all(
        "SELECT id, repo, finding_id, restored_at FROM memory_governance WHERE applied_at IS NULL"
        " AND action = 'forget' AND finding_id IS NOT NULL ORDER BY id LIMIT ?",
        (limit,),
    )
    for governance_id, repo, finding_id, restored_at in rows:
        if restored_at is None:
            removed = store.retire(str(repo), int(finding_id))
            current = db.fetch_one("SELECT removed FROM memory_governance WHERE id = ?", (governance_id,))
            mark_applied(db, int(governance_id), int(current[0] if current else 0) + removed)
            counts.forgets += 1
            counts.removed += removed
        elif embeddings is not None and embeddings.dimensions > 0:
            if not _still_forgotten(db, str(repo), int(finding_id)):
                counts.written += restore_memory(db, store, embeddings, str(repo), int(finding_id))
            mark_applied(db, int(governance_id))
            counts.restores += 1
    return counts


def _still_forgotten(db: Database, repo: str, finding_id: int) -> bool:
    """Another forget of the same finding, not restored (forgotten again after the restore)."""
    row = db.fetch_one(
        "SELECT 1 FROM memory_governance WHERE repo = ? AND finding_id = ? AND action = 'forget'"
        " AND restored_at IS NULL",
        (repo, finding_id),
    )
    return row is not None


def sweep_governance(
    knowledge_target: str, store: GovernedStore, embeddings: EmbeddingProvider | None
) -> AppliedCounts:
    """One maintenance run over the knowledge database at ``knowledge_target`` (a SQLite file or the
    ``postgresql://`` URL): its own short-lived connection, so the run never holds a store's lock."""
    from kodiai.storage.database import SqliteDatabase, is_postgres_url
    from kodiai.storage.opening import open_postgres

    db = (
        open_postgres(knowledge_target, "knowledge-governance")
        if is_postgres_url(knowledge_target)
        else SqliteDatabase.open(knowledge_target)
    )
    try:
        counts = apply_pending_governance(db, store, embeddings)
    finally:
        db.close()
    if counts.forgets or counts.restores:
        from kodiai.log import get_logger

        get_logger("kodiai.learning").info(
            "Recorded memory forgets/restores applied",
            forgets=counts.forgets,
            removed=counts.removed,
            restores=counts.restores,
            written=counts.written,
        )
    return counts
