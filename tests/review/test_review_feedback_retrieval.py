"""The team's reactions travel with retrieved memories into the review prompt and telemetry (issue 14).

A memory's ``finding_id`` is its finding's comment id; the knowledge store's kept reactions for that comment
are the feedback. A net-negative finding is listed under "Rejected by the team", never as precedent, and
``retrieval_quality`` counts the results with 👍, with 👎 and the rejected ones.
"""

from __future__ import annotations

from pathlib import Path

from test_review_checklist import MAXGAP, AxisEmbedder, seed_memory

from kodiai.storage.knowledge_models import FeedbackReactionRecord, FindingRecord, ReviewRecord
from support.review_harness import ReviewHarness


def seed_reactions(h: ReviewHarness, comment_id: int, contents: list[str]) -> None:
    assert h.knowledge is not None
    review_id = h.knowledge.record_review(ReviewRecord(repo="acme/repo", pr_number=7))
    h.knowledge.record_findings(
        [
            FindingRecord(
                review_id=review_id,
                file_path="src/example.ts",
                severity="major",
                category="correctness",
                confidence=80,
                title=f"finding {comment_id}",
                comment_id=comment_id,
                comment_surface="pull_request_review_comment",
            )
        ]
    )
    h.knowledge.record_feedback_reactions(
        [
            FeedbackReactionRecord(
                repo="acme/repo",
                review_id=review_id,
                finding_id=comment_id,
                comment_id=comment_id,
                comment_surface="pull_request_review_comment",
                reaction_id=comment_id * 100 + i,
                reaction_content=content,
                reactor_login=f"user{i}",
                severity="major",
                category="correctness",
                file_path="src/example.ts",
                title=f"finding {comment_id}",
            )
            for i, content in enumerate(contents)
        ]
    )


async def test_feedback_reaches_the_prompt_and_telemetry(tmp_path: Path, harness: ReviewHarness) -> None:
    h = ReviewHarness(tmp_path / "axis", harness.fake, harness.state, embedder=AxisEmbedder())
    try:
        seed_memory(h, 0.20, 1, "src/example.ts", text="Rejected: prefer early returns")
        seed_memory(h, 0.22, 2, "src/example.ts", text="Confirmed: unchecked null return")
        seed_memory(h, 0.24, 3, "src/example.ts", text="No feedback: missing await")
        seed_reactions(h, 1, ["-1", "-1"])
        seed_reactions(h, 2, ["+1"])
        pull = h.open_pr(config=MAXGAP)
        await h.deliver(pull, delivery="feedback-1")
        [prompt] = h.prompts
        precedent, rejected = prompt.split("### Rejected by the team")
        assert "Confirmed: unchecked null return" in precedent and "team feedback: confirmed)" in precedent
        assert "No feedback: missing await" in precedent
        assert "Rejected: prefer early returns" not in precedent
        assert "Rejected: prefer early returns" in rejected and "team feedback: rejected twice" in rejected
        rows = h.rows(
            "telemetry.db",
            "SELECT result_count, feedback_positive, feedback_negative, feedback_rejected FROM retrieval_quality",
        )
        assert rows == [(3, 1, 1, 1)]
    finally:
        h.close()


async def test_without_feedback_the_section_is_the_originals(tmp_path: Path, harness: ReviewHarness) -> None:
    h = ReviewHarness(tmp_path / "axis", harness.fake, harness.state, embedder=AxisEmbedder())
    try:
        seed_memory(h, 0.20, 1, "src/example.ts", text="Unchecked null return")
        pull = h.open_pr(config=MAXGAP)
        await h.deliver(pull, delivery="feedback-2")
        [prompt] = h.prompts
        assert "team feedback" not in prompt and "Rejected by the team" not in prompt
        rows = h.rows(
            "telemetry.db",
            "SELECT feedback_positive, feedback_negative, feedback_rejected FROM retrieval_quality",
        )
        assert rows == [(0, 0, 0)]
    finally:
        h.close()
