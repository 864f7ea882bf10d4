"""The rows a review records for the dashboard: every memory of the reranked pool, kept ones with their rank,
written once per delivery through the knowledge store (a redelivery adds nothing)."""

from __future__ import annotations

from pathlib import Path

from kodiai.learning.pipeline import RetrievalOutcome
from kodiai.learning.types import RerankedResult
from kodiai.review.retrieval_hits import hits_of
from kodiai.storage.knowledge import KnowledgeStore
from learning.learning_helpers import make_record
from review.test_review_checklist import MAXGAP, AxisEmbedder, seed_memory
from support.review_harness import ReviewHarness


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


async def test_a_review_records_what_its_retrieval_looked_at(tmp_path: Path, harness: ReviewHarness) -> None:
    """The review job writes one row per memory of the pool beside its ``retrieval_quality`` row."""
    h = ReviewHarness(tmp_path / "axis", harness.fake, harness.state, embedder=AxisEmbedder())
    try:
        seed_memory(h, 0.20, 1, "src/example.ts", text="Prior: unchecked null return")
        seed_memory(h, 0.22, 2, "src/example.ts", text="Prior: missing await")
        await h.deliver(h.open_pr(config=MAXGAP), delivery="hits-1")
        [(kept,)] = h.rows("telemetry.db", "SELECT result_count FROM retrieval_quality")
        rows = h.rows(
            "knowledge.db",
            "SELECT delivery_id, repo, finding_id, kept, kept_rank FROM retrieval_hits ORDER BY finding_id",
        )
        assert kept == 2 and rows == [("hits-1", "acme/repo", 1, 1, 1), ("hits-1", "acme/repo", 2, 1, 2)]
    finally:
        h.close()
