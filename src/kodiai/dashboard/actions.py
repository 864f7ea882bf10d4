"""The dashboard's writes, each recorded where its command-line or GitHub twin records it.

- forget: like ``@kodiai forget`` — a ``memory_governance`` row says who retired the finding's memory (so
  feedback sync never writes it back) and, when this process has the memory store open, its rows leave the
  store at once; otherwise the row waits (``applied_at`` NULL) for the workers' maintenance to remove them;
- restore: undoes a forget (``restored_at``/``restored_by`` on its row) and writes the finding's memory again
  — here when the store and the embedder are open, else by the workers' maintenance
  (:mod:`kodiai.learning.governance_apply`);
- retry: like ``kodiai jobs retry`` — a ``dead`` delivery goes back to ``requeued`` with its attempts reset.
Access is the caller's to check (:mod:`kodiai.dashboard.routes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kodiai.learning.embeddings import EmbeddingProvider
from kodiai.learning.governance_apply import GovernedStore, mark_applied, restore_memory
from kodiai.storage.database import Database
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.knowledge_models import MemoryGovernanceRecord


@dataclass(frozen=True)
class ForgetResult:
    done: bool
    removed: int = 0
    message: str = ""


def _open_forget(db: Database, repo: str, finding_id: int) -> int | None:
    row = db.fetch_one(
        "SELECT id FROM memory_governance WHERE repo = ? AND finding_id = ? AND action = 'forget'"
        " AND restored_at IS NULL ORDER BY id DESC",
        (repo, finding_id),
    )
    return int(row[0]) if row else None


def forget_memory(
    knowledge: KnowledgeStore,
    db: Database,
    memory: GovernedStore | None,
    *,
    repo: str,
    finding_id: int,
    actor: str,
) -> ForgetResult:
    if _open_forget(db, repo, finding_id) is not None:
        return ForgetResult(False, message=f"Finding {finding_id} was already forgotten")
    finding = knowledge.get_finding_by_comment_id(repo, finding_id)
    if finding is None:
        return ForgetResult(False, message=f"No finding {finding_id} in {repo}")
    entry = knowledge.record_memory_governance(
        MemoryGovernanceRecord(
            repo=repo, action="forget", actor=actor, finding_id=finding_id, text=finding.title
        )
    )
    assert entry.id is not None
    if memory is None:
        return ForgetResult(
            True, 0, f"Forgot finding {finding_id}; a worker removes its memory rows within 10 minutes"
        )
    removed = memory.retire(repo, finding_id)
    mark_applied(db, entry.id, removed)
    return ForgetResult(True, removed, f"Forgot finding {finding_id} ({removed} memory rows removed)")


def restore_forgotten(
    db: Database,
    memory: GovernedStore | None,
    embeddings: EmbeddingProvider | None,
    *,
    repo: str,
    finding_id: int,
    actor: str,
) -> ForgetResult:
    """Undo the finding's forget; its memory is written again here when the store and a real embedder are
    open, else by the workers' maintenance."""
    governance_id = _open_forget(db, repo, finding_id)
    if governance_id is None:
        return ForgetResult(False, message=f"Finding {finding_id} is not forgotten")
    db.execute(
        "UPDATE memory_governance SET restored_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), restored_by = ?,"
        " applied_at = NULL WHERE id = ?",
        (actor, governance_id),
    )
    if memory is None or embeddings is None or embeddings.dimensions <= 0:
        return ForgetResult(
            True, 0, f"Restored finding {finding_id}; a worker writes its memory again within 10 minutes"
        )
    written = restore_memory(db, memory, embeddings, repo, finding_id)
    mark_applied(db, governance_id)
    return ForgetResult(True, written, f"Restored finding {finding_id} ({written} memory rows written)")


def retry_dead(jobs_target: str, pg_journal: Any | None, delivery_id: str) -> str:
    """Requeue one dead delivery; returns what happened, in words."""
    if pg_journal is not None:
        result = pg_journal.retry([delivery_id])
    else:
        from kodiai.jobs.journal_admin import retry
        from kodiai.storage.connection import connect

        conn = connect(jobs_target)
        try:
            result = retry(conn, [delivery_id])
        finally:
            conn.close()
    if delivery_id in result.requeued:
        return f"Requeued {delivery_id}"
    return f"Not requeued: {result.refused.get(delivery_id, 'unknown delivery')}"
