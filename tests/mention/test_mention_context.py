"""The mention context block (behaviour E3.9; checklist E5.4) against an in-memory GitHub fake."""

from __future__ import annotations

from typing import Any

import pytest
from mention_fakes import FakeRest, issue_comment_payload, paged, pull, review_comment_payload

from kodiai.github.rest import GitHubApiError
from kodiai.mention.context import (
    MentionContextInputs,
    MentionContextLimits,
    build_mention_context,
    fetch_mention_context_inputs,
    render_mention_context,
    truncate_for_context,
)
from kodiai.mention.surface import MentionSurface, normalize_issue_comment, normalize_review_comment
from kodiai.storage.knowledge_models import FindingByComment

TRIGGER = "2025-01-01T10:00:00Z"
MARKER = "<!-- kodiai:review-output-key:kodiai-review-output:v1:inst-42:acme/repo:pr-101 -->"


def comment(cid: int, body: str | None, created: str, login: str = "bob", **extra: Any) -> dict[str, Any]:
    return {"id": cid, "body": body, "user": {"login": login}, "created_at": created, **extra}


def at(minute: int, hour: int = 9) -> str:
    return f"2025-01-01T{hour:02d}:{minute:02d}:00Z"


def issue_surface(on_pr: bool = False) -> MentionSurface:
    return normalize_issue_comment(issue_comment_payload("@kodiai hi", on_pr=on_pr, created_at=TRIGGER))


def inline_surface(in_reply_to_id: int | None = 500, **extra: Any) -> MentionSurface:
    payload = review_comment_payload("@kodiai why?", created_at=TRIGGER, **extra)
    if in_reply_to_id is not None:
        payload["comment"]["in_reply_to_id"] = in_reply_to_id
    return normalize_review_comment(payload)


async def context_for(surface: MentionSurface, rest: FakeRest, **kwargs: Any) -> str:
    return await build_mention_context(rest, surface, **kwargs)


# --- E5.4 ----------------------------------------------------------------------------------------


async def test_5_4_67_comments_after_trigger_are_excluded() -> None:
    rest = FakeRest(
        {
            "/issues/7/comments": paged(
                [
                    comment(1, "before", at(0)),
                    comment(2, "at trigger", TRIGGER),
                    comment(3, "after", at(1, hour=11)),
                    comment(4, "edited after", at(5), updated_at=at(30, hour=10)),
                ]
            )
        }
    )
    text = await context_for(issue_surface(), rest)
    assert "before" in text
    assert "at trigger" not in text and "after" not in text
    assert f"Included: 1 comment(s) (filtered to trigger time: {TRIGGER})" in text


async def test_5_4_68_bodies_are_sanitized() -> None:
    rest = FakeRest({"/issues/7/comments": paged([comment(1, "visible<!-- hidden -->\u200btext", at(0))])})
    text = await context_for(issue_surface(), rest)
    assert "visibletext" in text
    assert "hidden" not in text and "\u200b" not in text


async def test_5_4_69_pr_title_and_body_sanitized_and_truncated() -> None:
    body = "<!-- secret -->" + "d" * 1300
    rest = FakeRest(
        {
            "/issues/7/comments": paged([]),
            "/pulls/7": pull(7, title="Fix\u200b <!--x-->bug", body=body),
        }
    )
    text = await context_for(issue_surface(on_pr=True), rest)
    assert "## Pull Request Context" in text
    assert "Title: Fix bug" in text
    assert "Author: author" in text and "Branches: feature -> main" in text
    assert "Description:\n" + "d" * 1200 + "\n...[truncated]" in text
    assert "secret" not in text
    assert "- PR description truncated to 1200 characters." in text


async def test_5_4_70_last_n_comments_kept_and_long_bodies_truncated() -> None:
    items = [comment(i, f"comment-{i:02d}", at(i)) for i in range(1, 26)]
    items[-1]["body"] = "x" * 900
    rest = FakeRest({"/issues/7/comments": paged(items)})
    text = await context_for(issue_surface(), rest)
    assert "comment-05" not in text and "comment-06" in text
    assert "Included: 20 comment(s)" in text
    assert "x" * 800 + "\n...[truncated]" in text
    assert "- Only the last 20 comment(s) were included (comment count cap)." in text
    assert "- One or more individual comments were truncated to 800 characters." in text


async def test_5_4_71_inline_surface_section() -> None:
    rest = FakeRest({"/issues/101/comments": paged([]), "/pulls/101": pull()})
    text = await context_for(inline_surface(in_reply_to_id=None), rest)
    assert "## Inline Review Comment Context\nFile: src/app.ts\nLine: 42\n\nDiff hunk:\n```diff\n" in text
    assert "@@ -1,2 +1,2 @@\n-old\n+new\n```" in text
    assert "## Review Comment Thread Context" not in text


def thread_rest(parent_body: str = "parent finding", extra: list[dict[str, Any]] | None = None) -> FakeRest:
    review_comments = [
        comment(500, parent_body, at(0), login="kodiai[bot]"),
        comment(501, "first reply", at(1), in_reply_to_id=500),
        comment(900, "@kodiai why? (the trigger)", at(2), in_reply_to_id=500),
        comment(600, "another thread", at(3)),
        *(extra or []),
    ]
    return FakeRest(
        {
            "/issues/101/comments": paged([]),
            "/pulls/101": pull(),
            "/pulls/comments/500": review_comments[0],
            "/pulls/101/comments": paged(review_comments),
        }
    )


async def test_5_4_72_thread_context_has_earlier_replies_not_the_trigger() -> None:
    rest = thread_rest()
    text = await context_for(inline_surface(), rest)
    assert "## Review Comment Thread Context" in text
    assert "parent finding" in text and "first reply" in text
    assert "(the trigger)" not in text and "another thread" not in text
    assert rest.gets("/pulls/101/comments") == [{"per_page": 100, "sort": "created", "direction": "asc"}]
    assert rest.gets("/pulls/comments/500") == [{}]


async def test_5_4_73_marker_and_lookup_render_the_finding() -> None:
    calls: list[tuple[str, int]] = []

    def lookup(repo: str, comment_id: int) -> FindingByComment:
        calls.append((repo, comment_id))
        return FindingByComment(
            severity="major",
            category="correctness",
            file_path="src/app.ts",
            start_line=42,
            title="Null deref",
        )

    text = await context_for(inline_surface(), thread_rest(f"finding text\n{MARKER}"), finding_lookup=lookup)
    assert calls == [("acme/repo", 500)]
    assert (
        'Original finding: [MAJOR] correctness\nFile: "src/app.ts"\nLine: 42\nTitle: "Null deref"\n' in text
    )
    assert MARKER not in text  # the sanitizer removes HTML comments from the rendered parent


async def test_5_4_74_lookup_returning_none() -> None:
    text = await context_for(inline_surface(), thread_rest(MARKER), finding_lookup=lambda repo, cid: None)
    thread = text[text.index("## Review Comment Thread Context") :]
    assert thread.startswith("## Review Comment Thread Context\n### @kodiai[bot]")
    assert "Original finding" not in thread and "File:" not in thread and "Line:" not in thread


async def test_5_4_75_lookup_throwing_keeps_thread_context() -> None:
    def lookup(repo: str, comment_id: int) -> FindingByComment | None:
        raise RuntimeError("db locked")

    text = await context_for(inline_surface(), thread_rest(MARKER), finding_lookup=lookup)
    assert "## Review Comment Thread Context" in text and "first reply" in text
    assert "Original finding" not in text


async def test_lookup_not_called_without_marker() -> None:
    calls: list[int] = []
    await context_for(inline_surface(), thread_rest("no marker"), finding_lookup=lambda r, c: calls.append(c))
    assert calls == []


async def test_5_4_76_parent_404_omits_thread_section() -> None:
    rest = thread_rest()
    rest.answers["/pulls/comments/500"] = GitHubApiError("Not Found - https://docs.github.com", 404)
    text = await context_for(inline_surface(), rest)
    assert "## Inline Review Comment Context" in text
    assert "## Review Comment Thread Context" not in text
    assert rest.gets("/pulls/101/comments") == []


async def test_parent_other_error_empties_the_whole_context() -> None:
    rest = thread_rest()
    rest.answers["/pulls/comments/500"] = GitHubApiError("Server Error", 500)
    assert await context_for(inline_surface(), rest) == ""


async def test_5_4_77_older_thread_turns_cut_to_200() -> None:
    long = "y" * 300
    extra = [comment(510 + i, f"turn{i} " + long, at(10 + i), in_reply_to_id=500) for i in range(3)]
    text = await context_for(inline_surface(), thread_rest("p" * 300, extra))
    # turns: parent, first reply, turn0, turn1, turn2 → parent and "first reply" are older; the parent is long
    assert text.count("...[truncated]") == 1
    extra = [comment(510 + i, f"turn{i} " + long, at(10 + i), in_reply_to_id=500) for i in range(4)]
    text = await context_for(inline_surface(), thread_rest("p" * 300, extra))
    assert text.count("...[truncated]") == 2  # parent and turn0; turn1..turn3 are the recent three
    assert "p" * 200 + "\n...[truncated]" in text
    assert "- Older review thread turns were truncated to 200 characters to preserve recent context." in text


async def test_5_4_78_thread_budget_truncates() -> None:
    extra = [comment(510 + i, "z" * 200, at(10 + i), in_reply_to_id=500) for i in range(3)]
    limits = MentionContextLimits(max_thread_chars=250)
    text = await context_for(inline_surface(), thread_rest("short parent", extra), limits=limits)
    assert "- Review thread context truncated due to 250 character cap." in text
    assert "z" * 27 + "\n...[truncated]" in text  # 250 - 12 - 11 - 200 left for the second turn
    assert "09:12:00Z" not in text  # the third turn is dropped: the budget is spent


async def test_budget_cut_longer_than_the_turn_adds_no_note() -> None:
    """E3.9: the note needs the budget-cut text to be *shorter*; a cut that the marker makes longer is silent."""
    extra = [comment(510 + i, "z" * 120, at(10 + i), in_reply_to_id=500) for i in range(3)]
    limits = MentionContextLimits(max_thread_chars=250)
    text = await context_for(inline_surface(), thread_rest("short parent", extra), limits=limits)
    assert "z" * 107 + "\n...[truncated]" in text
    assert "Review thread context truncated" not in text


# --- paging (step 1) ------------------------------------------------------------------------------


def stream(count: int, start_hour: int = 0) -> list[dict[str, Any]]:
    """``count`` comments a minute apart from 2025-01-01T00:00 (all before the trigger at 10:00)."""
    return [
        comment(i + 1, f"c{i + 1}", f"2025-01-01T{start_hour + i // 60:02d}:{i % 60:02d}:00Z")
        for i in range(count)
    ]


async def test_scan_request_parameters_and_short_page_stop() -> None:
    rest = FakeRest({"/issues/7/comments": paged(stream(150))})
    inputs = await fetch_mention_context_inputs(
        rest, issue_surface(), limits=MentionContextLimits(max_comments=500)
    )
    assert rest.gets("/issues/7/comments") == [
        {"per_page": 100, "page": 1, "sort": "created", "direction": "desc"},
        {"per_page": 100, "page": 2, "sort": "created", "direction": "desc"},
    ]
    assert len(inputs.conversation.comments) == 150 and not inputs.conversation.page_cap_hit


async def test_scan_early_exit_once_enough_eligible_before_trigger() -> None:
    """E3.21.7: the first page already holds ≥ 20 eligible comments older than the trigger → stop."""
    rest = FakeRest({"/issues/7/comments": paged(stream(300))})
    text = await context_for(issue_surface(), rest)
    assert len(rest.gets("/issues/7/comments")) == 1
    assert "c100" in text and "c80" not in text and "c81" in text  # the oldest-first window, kept


async def test_scan_without_trigger_stops_at_max_comments() -> None:
    surface = issue_surface().model_copy(update={"created_at": None})
    rest = FakeRest({"/issues/7/comments": paged(stream(300))})
    await fetch_mention_context_inputs(rest, surface)
    assert len(rest.gets("/issues/7/comments")) == 1


async def test_scan_page_cap_and_trigger_time_cap_notes() -> None:
    """Eleven full pages of comments after the trigger: ten pages read, both guardrail notes."""
    late = [
        comment(i + 1, f"late{i}", f"2025-01-02T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z")
        for i in range(1100)
    ]
    rest = FakeRest({"/issues/7/comments": paged(late)})
    inputs = await fetch_mention_context_inputs(rest, issue_surface())
    assert len(rest.gets("/issues/7/comments")) == 10
    assert inputs.conversation.page_cap_hit and inputs.conversation.trigger_time_cap_hit
    text = render_mention_context(issue_surface(), inputs)
    assert text.startswith(
        "## Scale Notes\nSome context was omitted due to scale guardrails:\n"
        "- Conversation history scan capped at 10 page(s) of issue comments (pagination guardrail).\n"
        "- Conversation history may include comments after trigger time because scan did not reach older "
        f"pages before {TRIGGER}.\n"
    )
    assert "## Conversation History" not in text


async def test_page_cap_without_trigger_time_cap_when_old_enough() -> None:
    """Ten full pages whose last item is older than the trigger but too few eligible: page cap only."""
    items = [comment(i + 1, "late", "2025-01-02T00:00:00Z") for i in range(999)] + [
        comment(1000, "old", at(0))
    ]
    rest = FakeRest({"/issues/7/comments": paged(items)})
    inputs = await fetch_mention_context_inputs(rest, issue_surface())
    assert inputs.conversation.page_cap_hit and not inputs.conversation.trigger_time_cap_hit


# --- render details -------------------------------------------------------------------------------


def test_conversation_budget_note_and_layout() -> None:
    surface = issue_surface()
    rest_items = [comment(i, "w" * 700, at(i)) for i in range(1, 4)]
    inputs = MentionContextInputs.model_validate(
        {
            "conversation": {
                "comments": [
                    {"id": c["id"], "login": "bob", "body": c["body"], "created_at": c["created_at"]}
                    for c in rest_items
                ]
            }
        }
    )
    text = render_mention_context(surface, inputs, MentionContextLimits(max_conversation_chars=1000))
    assert "- Conversation history truncated due to 1000 character cap across included comments." in text
    assert (
        "### @bob (2025-01-01T09:01:00Z)\n"
        + "w" * 700
        + "\n\n### @bob (2025-01-01T09:02:00Z)\n"
        + "w" * 300
        + "\n...[truncated]"
        in text
    )
    assert "09:03:00Z" not in text  # budget exhausted: stop
    assert text.endswith("...[truncated]\n")


def test_legacy_tracking_comments_and_null_bodies() -> None:
    inputs = MentionContextInputs.model_validate(
        {
            "conversation": {
                "comments": [
                    {"id": 2, "login": None, "body": None, "created_at": at(1)},
                    {"id": 1, "login": "bob", "body": "> **Kodiai** is working", "created_at": at(0)},
                ]
            }
        }
    )
    text = render_mention_context(issue_surface(), inputs)
    assert (
        text
        == f"## Conversation History\nIncluded: 1 comment(s) (filtered to trigger time: {TRIGGER})\n\n### @unknown ({at(1)})\n(empty)\n"
    )


def test_empty_context_is_a_single_newline() -> None:
    assert render_mention_context(issue_surface(), MentionContextInputs()) == "\n"


def test_thread_without_earlier_turns() -> None:
    inputs = MentionContextInputs.model_validate(
        {"thread": {"parent": {"id": 400, "body": "gone", "created_at": at(0)}, "comments": []}}
    )
    text = render_mention_context(inline_surface(in_reply_to_id=400), inputs)
    assert "## Review Comment Thread Context\nNo earlier comments found in this thread." in text


def test_thread_root_is_the_parents_parent() -> None:
    inputs = MentionContextInputs.model_validate(
        {
            "thread": {
                "parent": {"id": 501, "body": "reply", "created_at": at(1), "in_reply_to_id": 500},
                "comments": [
                    {"id": 501, "body": "reply", "created_at": at(1), "in_reply_to_id": 500},
                    {"id": 500, "body": "root", "created_at": at(0)},
                ],
            }
        }
    )
    text = render_mention_context(inline_surface(in_reply_to_id=501), inputs)
    assert text.index("root") < text.index("reply")


@pytest.mark.parametrize(
    ("text", "cap", "expected"),
    [
        ("abc", 0, ("", True)),
        ("", 0, ("", False)),
        ("abc", 3, ("abc", False)),
        ("ab  cd", 4, ("ab\n...[truncated]", True)),
        ("😀😀", 2, ("😀\n...[truncated]", True)),
    ],
)
def test_truncate_for_context(text: str, cap: int, expected: tuple[str, bool]) -> None:
    """UTF-16 lengths; right-trim before the marker; cap ≤ 0 empties."""
    assert truncate_for_context(text, cap) == expected


async def test_build_context_logs_and_returns_empty_on_failure() -> None:
    class Log:
        def __init__(self) -> None:
            self.warnings: list[str] = []

        def warning(self, msg: str, **_: Any) -> None:
            self.warnings.append(msg)

        def debug(self, msg: str, **_: Any) -> None:
            pass

    log = Log()
    rest = FakeRest({"/issues/7/comments": RuntimeError("boom")})
    assert await build_mention_context(rest, issue_surface(), log=log) == ""
    assert log.warnings == ["Failed to build mention context; proceeding with empty context"]
