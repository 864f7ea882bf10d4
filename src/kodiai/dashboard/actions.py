"""The dashboard's two writes, each recorded where its command-line or GitHub twin records it.

- forget: like ``@kodiai forget`` — the finding's memory rows leave the memory store (when this process has
  it open) and a ``memory_governance`` row says who retired it, so feedback sync never writes it back;
- retry: like ``kodiai jobs retry`` — a ``dead`` delivery goes back to ``requeued`` with its attempts reset.
Access is the caller's to check (:mod:`kodiai.dashboard.routes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.knowledge_models import MemoryGovernanceRecord


class Retirer(Protocol):
    def retire(self, repo: str, finding_id: int, outcome: str | None = None) -> int: ...


@dataclass(frozen=True)
class ForgetResult:
    done: bool
    removed: int = 0
    message: str = ""


def forget_memory(
    knowledge: KnowledgeStore, memory: Retirer | None, *, repo: str, finding_id: int, actor: str
) -> ForgetResult:
    earlier = knowledge.list_memory_governance(repo)
    if any(g.action == "forget" and g.finding_id == finding_id for g in earlier):
        return ForgetResult(False, message=f"Finding {finding_id} was already forgotten")
    finding = knowledge.get_finding_by_comment_id(repo, finding_id)
    removed = memory.retire(repo, finding_id) if memory is not None else 0
    if finding is None and removed == 0:
        return ForgetResult(False, message=f"No finding {finding_id} in {repo}")
    knowledge.record_memory_governance(
        MemoryGovernanceRecord(
            repo=repo,
            action="forget",
            actor=actor,
            finding_id=finding_id,
            removed=removed,
            text=finding.title if finding is not None else None,
        )
    )
    return ForgetResult(True, removed, f"Forgot finding {finding_id} ({removed} memory rows removed)")


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
