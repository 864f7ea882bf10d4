"""End to end through the handler stack (model scripted): a finding is published, recorded and learned."""

from __future__ import annotations

from support.review_harness import OWNER, REPO, ReviewHarness, inline


async def test_opened_pr_is_reviewed_recorded_and_learned(harness: ReviewHarness) -> None:
    # A team member's PR: its findings are learned at once (an outsider's wait, test_memory_trust_*).
    harness.state.set_permission(OWNER, REPO, "alice", "write")
    pull = harness.open_pr()
    harness.script(inline("src/index.ts", 1, "[MAJOR] Unchecked constant change\n\nThis breaks callers."))
    outcome = await harness.deliver(pull)
    assert outcome.succeeded == 1, outcome
    assert len(harness.executor.contexts) == 1
    comments = harness.review_comments()
    assert len(comments) == 1 and "kodiai:review-output-key" in comments[0]["body"]
    details = [c for c in harness.issue_comments() if "<summary>Review Details</summary>" in c["body"]]
    assert len(details) == 1, harness.issue_comments()
    assert harness.rows("knowledge.db", "SELECT findings_total, findings_major FROM reviews") == [(1, 1)]
    assert harness.rows("telemetry.db", "SELECT conclusion FROM executions") == [("success",)]
    assert harness.memory_store is not None and harness.memory_store.count() == 1
