"""The pure rules of memory trust (issue 23): whose reactions are kept, and who closed a PR."""

from __future__ import annotations

from kodiai.feedback.closed import closed_pull
from kodiai.feedback.trust import split_by_access
from kodiai.storage.knowledge_models import FeedbackReactionRecord


def reaction(reaction_id: int, login: str) -> FeedbackReactionRecord:
    return FeedbackReactionRecord(
        repo="acme/repo",
        review_id=1,
        finding_id=1,
        comment_id=10,
        comment_surface="pull_request_review_comment",
        reaction_id=reaction_id,
        reaction_content="+1",
        reactor_login=login,
        severity="major",
        category="correctness",
        file_path="a.py",
        title="t",
    )


def test_only_writers_are_kept_and_unknowns_are_neither_kept_nor_dropped() -> None:
    records = [reaction(1, "maya"), reaction(2, "randall"), reaction(3, "ghost"), reaction(4, "nobody")]
    kept, unknown = split_by_access(records, {"maya": "write", "randall": "read", "ghost": "unknown"})
    assert [r.reactor_login for r in kept] == ["maya"]
    assert unknown == [3, 4]  # a login missing from the answers counts as unknown, never as a writer


def payload(pull: dict[str, object], sender: str = "maya") -> dict[str, object]:
    repository = {"name": "repo", "owner": {"login": "acme"}}
    return {"action": "closed", "pull_request": pull, "repository": repository, "sender": {"login": sender}}


def test_a_merge_is_credited_to_the_merger_a_close_to_the_sender() -> None:
    merged = closed_pull(payload({"number": 7, "merged": True, "merged_by": {"login": "lead"}}))
    assert merged is not None and (merged.full_name, merged.number, merged.merged, merged.closed_by) == (
        "acme/repo",
        7,
        True,
        "lead",
    )
    closed = closed_pull(payload({"number": 7, "merged": False, "merged_by": None}, sender="mallory"))
    assert closed is not None and (closed.merged, closed.closed_by) == (False, "mallory")
    # ``merged`` must be exactly true: a truthy string is not a merge.
    assert closed_pull(payload({"number": 7, "merged": "yes"})).merged is False  # type: ignore[union-attr]
    assert closed_pull(payload({"merged": True})) is None
    assert closed_pull({"pull_request": {"number": 7}}) is None
