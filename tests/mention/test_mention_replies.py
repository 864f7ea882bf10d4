"""Trusted-code replies, error replies and reply routing (behaviour E3.15–E3.17)."""

from __future__ import annotations

import pytest
from mention_fakes import FakeRest, issue_comment_payload, review_comment_payload, review_payload

from kodiai.github.rest import GitHubApiError
from kodiai.mention.replies import (
    WritePolicyRefusal,
    already_applied_reply,
    catch_all_error_reply,
    conversation_limit_reply,
    cost_warning_reply,
    deliver_reply,
    execution_error_reply,
    existing_pr_reply,
    no_changes_reply,
    no_publish_fallback_reply,
    opened_pr_reply,
    pr_context_only_reply,
    rate_limited_reply,
    reply_route,
    updated_pr_reply,
    write_disabled_reply,
    write_in_progress_reply,
    write_refusal_reply,
)
from kodiai.mention.surface import (
    MentionSurface,
    normalize_issue_comment,
    normalize_review_body,
    normalize_review_comment,
)

HANDLES = ("kodiai", "claude")


def wrapped(text: str) -> str:
    return f"<details>\n<summary>kodiai response</summary>\n\n{text}\n\n</details>"


# --- E3.17 catalogue -------------------------------------------------------------------------------


def test_r3_no_publish_fallback() -> None:
    assert no_publish_fallback_reply() == wrapped(
        "I saw your mention, but I didn't publish a reply automatically.\n\n"
        "Can you clarify what you want me to do?\n"
        "- (1) What outcome are you aiming for?\n"
        "- (2) Which file(s) / line(s) should I focus on?"
    )


def test_r4_r5_r12_r13_urls() -> None:
    assert opened_pr_reply("https://x/pull/9") == wrapped("Opened PR: https://x/pull/9")
    assert existing_pr_reply("https://x/pull/9") == wrapped("Existing PR: https://x/pull/9")
    assert already_applied_reply("https://x/pull/1") == wrapped(
        "Already applied (idempotent): https://x/pull/1"
    )
    assert updated_pr_reply("https://x/pull/1") == wrapped("Updated PR: https://x/pull/1")


def test_r6_in_progress() -> None:
    assert write_in_progress_reply() == wrapped(
        "Write request already in progress.\n\nIf no PR appears shortly, retry the same comment."
    )


def test_r7_rate_limited() -> None:
    assert rate_limited_reply(37) == wrapped("Write request rate-limited.\n\nTry again in 37s.")


def test_r8_pr_context_only() -> None:
    text = pr_context_only_reply()
    assert text.startswith(wrapped("I can only apply changes in a PR context.\n\n")[:-12])
    assert "inline diff comment" in text


def test_r9_write_disabled() -> None:
    """Checklist 103's reply: "Write mode is disabled", ``write:`` and ``enabled: true``."""
    assert write_disabled_reply() == wrapped(
        "Write mode is disabled for this repo.\n\nTo enable:\n```yml\nwrite:\n  enabled: true\n```\n\n"
        "Then re-run your request with `apply:` or `change:`."
    )


def test_r10_conversation_limit_is_not_wrapped() -> None:
    """Checklist 99's reply: "Conversation limit reached (1 turns per PR)."; config numbers print as JS does."""
    expected = "Conversation limit reached (1 turns per PR).\nStart a new thread or open a new issue for further questions."
    assert conversation_limit_reply(1) == expected
    assert conversation_limit_reply(1.0) == expected


def test_r11_no_changes() -> None:
    assert no_changes_reply().startswith(wrapped("I didn't end up making any file changes.\n\n")[:-12])


def test_r14_cost_warning_is_the_reviews() -> None:
    """Checklist 118's text: "cost warning", ``$3.5000`` and ``$1.00``; unwrapped blockquote."""
    text = cost_warning_reply(3.5, 1)
    assert text.startswith("> **Kodiai cost warning:** This execution cost $3.5000 USD")
    assert "$1.00 USD" in text and ">   costWarningUsd: 5.0  # or 0 to disable" in text
    assert "<details>" not in text


def test_r15_denied_path() -> None:
    """Checklist 108's reply fields."""
    refusal = WritePolicyRefusal(
        code="write-policy-denied-path",
        message="Path README.md matches denyPaths pattern README.md",
        rule="denyPaths",
        path="README.md",
        pattern="README.md",
    )
    assert write_refusal_reply(refusal) == wrapped(
        "Write request refused.\n\nReason: write-policy-denied-path\nRule: denyPaths\nFile: README.md\n"
        "Matched pattern: README.md\n\nPath README.md matches denyPaths pattern README.md\n\n"
        "This path is blocked by `write.denyPaths` because changing it automatically is potentially risky.\n"
        "If this change is intended, narrow or remove the matching `write.denyPaths` entry."
    )


def test_r15_not_allowed_with_snippet_and_current_allow_paths() -> None:
    """Checklist 109's reply: "Smallest config change" and ``- 'README.md'``; single quotes doubled."""
    refusal = WritePolicyRefusal(
        code="write-policy-not-allowed", message="not allowed", rule="allowPaths", path="it's.md"
    )
    assert write_refusal_reply(refusal, ["src/", "doc's/"]) == wrapped(
        "Write request refused.\n\nReason: write-policy-not-allowed\nRule: allowPaths\nFile: it's.md\n\n"
        "not allowed\n\nSmallest config change (if intended):\n```yml\nwrite:\n  allowPaths:\n"
        "    - 'it''s.md'\n```\n\nCurrent allowPaths: 'src/', 'doc''s/'"
    )
    no_current = write_refusal_reply(refusal.model_copy(update={"path": "README.md"}))
    assert "    - 'README.md'\n```\n\n</details>" in no_current and "Current allowPaths" not in no_current


def test_r15_not_allowed_without_path_has_no_snippet() -> None:
    refusal = WritePolicyRefusal(
        code="write-policy-not-allowed", message="Invalid glob: [", rule="allowPaths"
    )
    assert write_refusal_reply(refusal) == wrapped(
        "Write request refused.\n\nReason: write-policy-not-allowed\nRule: allowPaths\n\nInvalid glob: ["
    )


def test_r15_secret_detected() -> None:
    """Checklist 110's reply fields."""
    refusal = WritePolicyRefusal(
        code="write-policy-secret-detected",
        message="Potential secret detected",
        rule="secretScan",
        path="README.md",
        detector="regex:github-pat",
    )
    text = write_refusal_reply(refusal)
    assert (
        "Reason: write-policy-secret-detected\nRule: secretScan\nFile: README.md\nDetector: regex:github-pat\n"
        in (text)
    )
    assert "\n\nNo safe config bypass suggested.\nRemove or redact" in text and "secretScan" in text


def test_r15_only_the_entropy_refusal_suggests_turning_the_scan_off() -> None:
    """Token detectors and the server's own secrets run whatever ``write.secretScan.enabled`` says, so only
    an entropy hit may point at that switch (a port deviation)."""

    def advice(detector: str) -> str:
        return write_refusal_reply(
            WritePolicyRefusal(code="write-policy-secret-detected", message="m", detector=detector)
        )

    assert "`write.secretScan.enabled: false` disables the scan" in advice("entropy")
    for detector in ("regex:github-pat", "server-secret"):
        text = advice(detector)
        assert "secretScan.enabled" not in text
        assert "Tokens, private keys and the server's own secrets are always refused." in text


def test_r15_no_changes() -> None:
    refusal = WritePolicyRefusal(code="write-policy-no-changes", message="No staged changes to commit")
    assert write_refusal_reply(refusal) == wrapped(
        "Write request refused.\n\nReason: write-policy-no-changes\n\nNo staged changes to commit\n\n"
        "No file changes were produced.\nRestate the request with a concrete file and the exact edit you want."
    )


# --- E3.15 error replies -----------------------------------------------------------------------------


def test_execution_error_reply_is_wrapped_and_sanitized() -> None:
    """Checklist 102: ``@kodiai``/``@claude`` in the error message appear without ``@``."""
    text = execution_error_reply(
        is_timeout=False, error_message_text="@kodiai and @claude broke", bot_handles=HANDLES
    )
    assert text.startswith(
        "<details>\n<summary>Kodiai encountered an error</summary>\n\n> **Kodiai encountered an error**"
    )
    assert "_kodiai and claude broke_" in text and "@" not in text


def test_execution_error_reply_timeout_and_fallback_detail() -> None:
    text = execution_error_reply(
        is_timeout=True, error_message_text="Job timed out after 600 seconds", bot_handles=()
    )
    assert "> **Kodiai timed out**" in text and "partial" not in text
    text = execution_error_reply(is_timeout=False, error_message_text=None, bot_handles=())
    assert "_An unexpected error occurred while processing your request._" in text
    text = execution_error_reply(
        is_timeout=False, error_message_text="Invalid .kodiai.yml: x", bot_handles=()
    )
    assert "> **Kodiai found a configuration problem**" in text


def test_catch_all_error_reply() -> None:
    assert "> **Kodiai couldn't access the repository**" in catch_all_error_reply(
        RuntimeError("git clone failed"), ()
    )
    text = catch_all_error_reply(RuntimeError(""), ())
    assert "_An unexpected error occurred_" in text and "> **Kodiai encountered an error**" in text


# --- E3.16 routing -------------------------------------------------------------------------------------


def issue() -> MentionSurface:
    return normalize_issue_comment(issue_comment_payload("@kodiai hi"))


def inline() -> MentionSurface:
    return normalize_review_comment(review_comment_payload("@kodiai hi"))


def review_body() -> MentionSurface:
    surface = normalize_review_body(review_payload("@kodiai hi"))
    assert surface is not None
    return surface


def suffixes(surface: MentionSurface, purpose: str) -> list[str]:
    return [e.suffix for e in reply_route(surface, purpose).endpoints]  # type: ignore[arg-type]


def test_routes() -> None:
    thread, top = "/pulls/101/comments/900/replies", "/issues/101/comments"
    assert suffixes(inline(), "reply") == [thread, top]
    assert suffixes(inline(), "error") == [thread, top]
    assert suffixes(inline(), "no_publish_fallback") == [thread]
    assert suffixes(inline(), "catch_all_error") == [thread]
    for purpose in ("reply", "error", "no_publish_fallback", "catch_all_error"):
        assert suffixes(issue(), purpose) == ["/issues/7/comments"]
        assert suffixes(review_body(), purpose) == ["/issues/101/comments"]  # review ids are not comment ids
    assert reply_route(inline(), "reply").on_failure == "raise"
    assert reply_route(inline(), "error").on_failure == "log"
    assert reply_route(inline(), "catch_all_error").failure_message == "Failed to post error comment"


async def test_deliver_sanitizes_and_falls_back() -> None:
    rest = FakeRest()
    rest.post_failures["/pulls/101/comments/900/replies"] = GitHubApiError("Not Found", 404)
    created = await deliver_reply(rest, reply_route(inline()), "hi @KODIAI", bot_handles=HANDLES)
    assert created is not None
    assert rest.posted == [("/issues/101/comments", {"body": "hi kodiai"})]


async def test_deliver_top_level_failure_propagates_for_r_post() -> None:
    rest = FakeRest()
    rest.post_failures["/issues/7/comments"] = GitHubApiError("Server Error", 500)
    with pytest.raises(GitHubApiError):
        await deliver_reply(rest, reply_route(issue()), "x", bot_handles=HANDLES)


async def test_deliver_error_route_swallows_final_failure() -> None:
    rest = FakeRest()
    rest.post_failures["/pulls/101/comments/900/replies"] = GitHubApiError("x", 500)
    assert (
        await deliver_reply(rest, reply_route(inline(), "catch_all_error"), "x", bot_handles=HANDLES) is None
    )
    assert [c[1] for c in rest.calls] == ["/pulls/101/comments/900/replies"]


async def test_deliver_cost_warning_unsanitized() -> None:
    rest = FakeRest()
    await deliver_reply(rest, reply_route(issue()), "@kodiai", bot_handles=HANDLES, sanitize=False)
    assert rest.posted == [("/issues/7/comments", {"body": "@kodiai"})]
