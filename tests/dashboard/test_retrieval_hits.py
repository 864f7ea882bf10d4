"""The rows a review records for the dashboard: every memory of the reranked pool, kept ones with their rank,
written once per delivery through the knowledge store (a redelivery adds nothing)."""

from __future__ import annotations

from pathlib import Path

from kodiai.learning.pipeline import RetrievalOutcome
from kodiai.learning.types import RerankedResult
from kodiai.review.retrieval_hits import hits_of
from kodiai.storage.knowledge import KnowledgeStore
from learning.learning_helpers import make_record


def _result(memory_id: int, finding_id: int, distance: float) -> RerankedResult:
    return RerankedResult(
        memory_id=memory_id,
        distance=distance,
        record=make_record(finding_id=finding_id),
        source_repo="acme/api",
        adjusted_distance=distance + 0.01,
        language_match=True,
    )


def test_hits_mark_the_kept_memories_and_are_written_once(tmp_path: Path) -> None:
    pool = [_result(1, 501, 0.1), _result(2, 502, 0.2), _result(3, 503, 0.5)]
    # only the stages' outputs matter here: the rest of the outcome is not read
    outcome = RetrievalOutcome.model_construct(reranked=pool, results=[pool[1], pool[0]])
    hits = hits_of(outcome, delivery_id="d1", repo="acme/api", pr_number=7)
    assert [(h.finding_id, h.kept, h.kept_rank) for h in hits] == [
        (501, True, 2),
        (502, True, 1),
        (503, False, None),
    ]
    assert hits[2].distance == 0.5 and hits[2].adjusted_distance == 0.51
    store = KnowledgeStore(tmp_path / "knowledge.db")
    try:
        assert store.record_retrieval_hits(hits) == 3
        assert store.record_retrieval_hits(hits) == 0  # a redelivery of the same review
    finally:
        store.close()
