"""Mention surfaces, mention matching and the pre-queue filters (behaviour E3.2, E3.3; checklist E5.6)."""

from __future__ import annotations

import pytest
from mention_fakes import issue_comment_payload, pull, review_comment_payload, review_payload
from pydantic import ValidationError

from kodiai.mention.surface import (
    contains_mention,
    normalize_issue_comment,
    normalize_mention,
    normalize_review_body,
    normalize_review_comment,
    pre_queue_skip,
    strip_mention,
    with_pull_refs,
)

# --- E5.6 containsMention / stripMention ---------------------------------------------------------


def test_5_6_85_contains_mention_is_case_insensitive() -> None:
    assert contains_mention("Hey @KodiAI can you look?", ["kodiai"])
    assert contains_mention("@kodiai", ["@kodiai"])


def test_5_6_86_contains_mention_rejects_partial_handles() -> None:
    assert not contains_mention("@kodiai123 hi", ["kodiai", "claude"])
    assert not contains_mention("@claude123 hi", ["kodiai", "claude"])


def test_5_6_87_claude_matches_only_when_accepted() -> None:
    assert contains_mention("@claude help", ["kodiai", "claude"])
    assert not contains_mention("@claude help", ["kodiai"])


def test_contains_mention_edge_cases() -> None:
    """E3.2: no handles never match; null/empty body is false; blank handles are dropped."""
    assert not contains_mention("@kodiai", [])
    assert not contains_mention("@kodiai", ["", "  "])
    assert not contains_mention(None, ["kodiai"])
    assert not contains_mention("", ["kodiai"])


def test_5_6_88_strip_removes_mention_and_trims() -> None:
    assert strip_mention("  @kodiai what does this do?  ", ["kodiai"]) == "what does this do?"


def test_5_6_89_strip_removes_claude_when_accepted() -> None:
    assert strip_mention("@claude explain", ["kodiai", "claude"]) == "explain"


def test_5_6_90_strip_removes_several_handles() -> None:
    assert strip_mention("@kodiai and @Claude: why?", ["kodiai", "claude"]) == "and : why?"


def test_5_6_91_strip_leaves_partial_handles() -> None:
    assert strip_mention("@kodiai ask @claude123", ["kodiai", "claude"]) == "ask @claude123"


def test_5_6_92_mention_only_body_strips_to_empty() -> None:
    assert strip_mention("@kodiai", ["kodiai"]) == ""


def test_word_boundary_is_ascii() -> None:
    """E3.22: ``\\b`` is ASCII, so a non-ASCII letter after the handle still ends the mention."""
    assert contains_mention("@kodiaié", ["kodiai"])
    assert strip_mention("@kodiaié", ["kodiai"]) == "é"


# --- E5.6 normalisation ----------------------------------------------------------------------------


def test_5_6_93_review_comment_copies_in_reply_to_id() -> None:
    assert (
        normalize_review_comment(review_comment_payload("@kodiai", in_reply_to_id=123)).in_reply_to_id == 123
    )


def test_5_6_94_review_comment_without_reply_leaves_it_unset() -> None:
    assert normalize_review_comment(review_comment_payload("@kodiai")).in_reply_to_id is None


def test_5_6_95_issue_comment_never_sets_in_reply_to_id() -> None:
    payload = issue_comment_payload("@kodiai", on_pr=True, in_reply_to_id=5)
    assert normalize_issue_comment(payload).in_reply_to_id is None


def test_5_6_96_review_body_never_sets_in_reply_to_id() -> None:
    surface = normalize_review_body(review_payload("@kodiai", in_reply_to_id=5))
    assert surface is not None and surface.in_reply_to_id is None


def test_issue_comment_on_issue() -> None:
    s = normalize_issue_comment(issue_comment_payload("@kodiai hi"))
    assert (s.surface, s.issue_number, s.pr_number, s.comment_id) == ("issue_comment", 7, None, 555)
    assert (s.owner, s.repo, s.author, s.installation_id, s.default_branch) == (
        "acme",
        "repo",
        "alice",
        42,
        "main",
    )
    assert s.created_at == "2025-01-01T10:00:00Z"
    assert s.head_ref is None and s.base_ref is None and not s.is_pr and not s.is_inline


def test_issue_comment_on_pr_has_no_refs_until_filled() -> None:
    s = normalize_issue_comment(issue_comment_payload("@kodiai hi", on_pr=True))
    assert (s.surface, s.issue_number, s.pr_number) == ("pr_comment", 7, 7)
    assert s.head_ref is None
    fork = {"name": "repo", "full_name": "bob/repo", "owner": {"login": "bob"}}
    filled = with_pull_refs(s, pull(7, head_repo=fork))
    assert (filled.head_ref, filled.base_ref, filled.head_repo_owner, filled.head_repo_name) == (
        "feature",
        "main",
        "bob",
        "repo",
    )


def test_issue_pull_request_link_counts_even_when_empty() -> None:
    """``issue.pull_request`` truthy in JS: an empty object still marks a PR."""
    payload = issue_comment_payload("@kodiai")
    payload["issue"]["pull_request"] = {}
    assert normalize_issue_comment(payload).surface == "pr_comment"


def test_review_comment_surface_fields() -> None:
    s = normalize_review_comment(review_comment_payload("@kodiai why?"))
    assert (s.surface, s.issue_number, s.pr_number, s.comment_id) == ("pr_review_comment", 101, 101, 900)
    assert (s.file_path, s.file_line, s.diff_hunk) == ("src/app.ts", 42, "@@ -1,2 +1,2 @@\n-old\n+new")
    assert (s.head_ref, s.base_ref, s.head_repo_owner, s.head_repo_name) == (
        "feature",
        "main",
        "acme",
        "repo",
    )
    assert s.is_inline


def test_review_comment_line_falls_back_to_original_line() -> None:
    assert normalize_review_comment(review_comment_payload("@kodiai", line=None)).file_line == 40


def test_review_comment_deleted_head_repo() -> None:
    payload = review_comment_payload("@kodiai")
    payload["pull_request"]["head"]["repo"] = None
    s = normalize_review_comment(payload)
    assert s.head_repo_owner is None and s.head_repo_name is None and s.head_ref == "feature"


def test_review_body_uses_review_id_and_submitted_at() -> None:
    s = normalize_review_body(review_payload("@kodiai check"))
    assert s is not None
    assert (s.surface, s.comment_id, s.created_at, s.pr_number) == (
        "pr_review_body",
        777,
        "2025-01-01T11:00:00Z",
        101,
    )


def test_review_body_trigger_time_falls_back_to_pr_updated_at() -> None:
    s = normalize_review_body(review_payload("@kodiai", submitted_at=None))
    assert s is not None and s.created_at == "2025-01-02T00:00:00Z"


@pytest.mark.parametrize("body", [None, ""])
def test_review_without_body_is_ignored(body: str | None) -> None:
    assert normalize_review_body(review_payload(body)) is None
    assert normalize_mention("pull_request_review", review_payload(body)) is None


def test_normalize_mention_dispatches_and_ignores_other_events() -> None:
    assert normalize_mention("issue_comment", issue_comment_payload("x")) is not None
    assert normalize_mention("pull_request_review_comment", review_comment_payload("x")) is not None
    assert normalize_mention("push", {}) is None
    with pytest.raises(ValidationError):
        normalize_mention("issue_comment", {"action": "created"})


# --- E3.3 pre-queue filters ------------------------------------------------------------------------


def test_pre_queue_accepts_a_mention() -> None:
    assert pre_queue_skip("issue_comment", "created", issue_comment_payload("@kodiai hi"), "kodiai") is None
    assert pre_queue_skip("pull_request_review", "submitted", review_payload("@Claude hi"), "kodiai") is None


def test_pre_queue_rejects_other_events_and_actions() -> None:
    payload = issue_comment_payload("@kodiai hi")
    assert pre_queue_skip("issue_comment", "edited", payload, "kodiai") == "unsupported-event"
    assert pre_queue_skip("pull_request_review", "dismissed", review_payload("@kodiai"), "kodiai") == (
        "unsupported-event"
    )
    assert pre_queue_skip("issues", "opened", payload, "kodiai") == "unsupported-event"


def test_pre_queue_fast_filter_is_a_substring_test() -> None:
    """E3.21.1: ``@kodiai123`` passes the fast filter; text without a handle does not."""
    assert pre_queue_skip("issue_comment", "created", issue_comment_payload("@kodiai123 x"), "kodiai") is None
    assert (
        pre_queue_skip("issue_comment", "created", issue_comment_payload("hello"), "kodiai") == "no-mention"
    )
    assert pre_queue_skip("issue_comment", "created", issue_comment_payload(None), "kodiai") == "no-mention"


def test_pre_queue_empty_review_body() -> None:
    assert (
        pre_queue_skip("pull_request_review", "submitted", review_payload(None), "kodiai")
        == "empty-review-body"
    )


@pytest.mark.parametrize("author", ["kodiai", "KodiAI", "dependabot[bot]", "kodiai[bot]"])
def test_pre_queue_self_and_bot_authors_are_skipped(author: str) -> None:
    """E3.3 step 3 (checklist 98's first half): the comment-author defence."""
    payload = issue_comment_payload("@kodiai hi", author=author)
    assert pre_queue_skip("issue_comment", "created", payload, "kodiai") == "self-or-bot-author"
