"""The learned memory's re-review scope in the review handler (issue 16; a port addition).

When Kodiai reviewed the PR before (the knowledge store has its earlier ``reviews`` rows), the PR's own
earlier findings are the precedent: only the memories of those reviews are retrieved, however much closer
another PR's memory is, and a PR whose earlier reviews left no memory gets none. A first review runs the
normal cut, and the original's ``maxgap`` path never scopes.
"""

from __future__ import annotations

from pathlib import Path

from test_review_checklist import MAXGAP, AxisEmbedder, at_distance

from kodiai.learning.types import LearningMemoryRecord
from kodiai.storage.knowledge_models import ReviewRecord
from support.review_harness import FIRST_STAGE, ReviewHarness

PR = 101  # the harness's default PR number


def earlier_review(h: ReviewHarness, pr_number: int) -> int:
    assert h.knowledge is not None
    return h.knowledge.record_review(ReviewRecord(repo="acme/repo", pr_number=pr_number))


def seed(h: ReviewHarness, review_id: int, finding_id: int, distance: float, text: str) -> None:
    assert h.memory_store is not None
    record = LearningMemoryRecord(
        repo="acme/repo",
        owner="acme",
        finding_id=finding_id,
        review_id=review_id,
        source_repo="acme/repo",
        finding_text=text,
        severity="major",
        category="correctness",
        file_path="src/example.ts",
        outcome="accepted",
        embedding_model=h.embedder.model,
        embedding_dim=h.embedder.dimensions,
    )
    h.memory_store.write_memory(record, at_distance(distance, finding_id))


def methods(h: ReviewHarness) -> list[str]:
    return [str(r[0]) for r in h.rows("telemetry.db", "SELECT threshold_method FROM retrieval_quality")]


async def test_a_re_review_retrieves_only_the_prs_own_earlier_findings(
    tmp_path: Path, harness: ReviewHarness
) -> None:
    h = ReviewHarness(tmp_path / "axis", harness.fake, harness.state, embedder=AxisEmbedder())
    try:
        other = earlier_review(h, 55)
        own = earlier_review(h, PR)
        seed(h, other, 1, 0.10, "Other PR: unchecked null return")
        seed(h, own, 2, 0.60, "This PR earlier: missing await on save")
        await h.deliver(h.open_pr(), delivery="same-pr-1")
        [prompt] = h.prompts
        assert "This PR earlier: missing await on save" in prompt
        assert "Other PR: unchecked null return" not in prompt  # closer, but another PR's
        assert methods(h) == ["same-pr:kept"]
    finally:
        h.close()


async def test_a_first_review_runs_the_normal_cut(tmp_path: Path, harness: ReviewHarness) -> None:
    h = ReviewHarness(tmp_path / "axis", harness.fake, harness.state, embedder=AxisEmbedder())
    try:
        other = earlier_review(h, 55)
        seed(h, other, 1, 0.10, "Other PR: unchecked null return")
        await h.deliver(h.open_pr(config=FIRST_STAGE), delivery="same-pr-2")
        [prompt] = h.prompts
        assert "Other PR: unchecked null return" in prompt
        [method] = methods(h)
        assert method.startswith("headgap:")
    finally:
        h.close()


async def test_a_re_review_whose_earlier_reviews_left_no_memory_gets_none(
    tmp_path: Path, harness: ReviewHarness
) -> None:
    h = ReviewHarness(tmp_path / "axis", harness.fake, harness.state, embedder=AxisEmbedder())
    try:
        other = earlier_review(h, 55)
        earlier_review(h, PR)  # reviewed before, clean: nothing memorised
        seed(h, other, 1, 0.10, "Other PR: unchecked null return")
        await h.deliver(h.open_pr(), delivery="same-pr-3")
        [prompt] = h.prompts
        assert "Other PR: unchecked null return" not in prompt
        assert methods(h) == ["same-pr:abstain"]
        assert h.rows("telemetry.db", "SELECT result_count FROM retrieval_quality") == [(0,)]
    finally:
        h.close()


async def test_the_originals_maxgap_path_never_scopes(tmp_path: Path, harness: ReviewHarness) -> None:
    h = ReviewHarness(tmp_path / "axis", harness.fake, harness.state, embedder=AxisEmbedder())
    try:
        other = earlier_review(h, 55)
        own = earlier_review(h, PR)
        seed(h, other, 1, 0.10, "Other PR: unchecked null return")
        seed(h, own, 2, 0.12, "This PR earlier: missing await on save")
        await h.deliver(h.open_pr(config=MAXGAP), delivery="same-pr-4")
        [prompt] = h.prompts
        assert "Other PR: unchecked null return" in prompt
        [method] = methods(h)
        assert not method.startswith("same-pr")
    finally:
        h.close()
