"""The memories one review's retrieval looked at, as ``retrieval_hits`` rows (issue 28: the dashboard's
memory quality and "why it stayed quiet" pages read them).

:func:`hits_of` is pure (a :class:`RetrievalOutcome` → rows: the pool after rerank, each marked kept or
not); :func:`record_retrieval_hits` writes them fail-open, like the ``retrieval_quality`` row beside it.
"""

from __future__ import annotations

import asyncio

from kodiai.handler_kit.fail_open import fail_open
from kodiai.learning.pipeline import RetrievalOutcome
from kodiai.log import Logger
from kodiai.storage.knowledge import KnowledgeStore
from kodiai.storage.knowledge_hits import RetrievalHit


def hits_of(
    outcome: RetrievalOutcome, *, delivery_id: str, repo: str, pr_number: int | None
) -> list[RetrievalHit]:
    """One row per memory of the reranked pool (the candidates the cut saw), ``kept`` with its rank when it
    is among the final results; a memory kept but absent from the pool (none today) is added as kept."""
    ranks = {r.memory_id: i + 1 for i, r in enumerate(outcome.results)}
    seen: set[int] = set()
    rows: list[RetrievalHit] = []
    for r in [*outcome.reranked, *outcome.results]:
        if r.memory_id in seen:
            continue
        seen.add(r.memory_id)
        rows.append(
            RetrievalHit(
                delivery_id=delivery_id,
                repo=repo,
                pr_number=pr_number,
                memory_id=r.memory_id,
                finding_id=r.record.finding_id,
                source_repo=r.source_repo,
                outcome=r.record.outcome,
                distance=float(r.distance),
                adjusted_distance=float(r.adjusted_distance),
                kept=r.memory_id in ranks,
                kept_rank=ranks.get(r.memory_id),
            )
        )
    return rows


async def record_retrieval_hits(
    knowledge: KnowledgeStore | None,
    outcome: RetrievalOutcome,
    *,
    enabled: bool,
    delivery_id: str,
    repo: str,
    pr_number: int | None,
    log: Logger,
) -> None:
    """Write the rows (when the repository's telemetry is enabled); a failure is a warning, never an error."""
    if not enabled or knowledge is None:
        return
    rows = hits_of(outcome, delivery_id=delivery_id, repo=repo, pr_number=pr_number)
    if not rows:
        return
    await fail_open(
        log,
        "retrieval-hits",
        lambda: asyncio.to_thread(knowledge.record_retrieval_hits, rows),
        None,
        "Retrieval hits write failed (fail-open)",
    )
