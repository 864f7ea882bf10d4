"""Replies trusted code posts for a mention (behaviour E3.15–E3.17) and where they go.

Every text here is final except for the outgoing-mention sanitiser, which :func:`deliver_reply` applies
(R14, the cost warning, is posted as is). The routing decision is pure (:func:`reply_route`); the
delivery is a few lines on top of it so the fall-back rules live in one place.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from kodiai.compat.js import js_number_to_string
from kodiai.execution.error_comments import mention_error_body
from kodiai.execution.errors import classify_error, format_error_comment
from kodiai.github.rest import RestApi
from kodiai.log import Logger, get_logger, redact
from kodiai.review.posted_texts import build_cost_warning
from kodiai.text.formatting import wrap_in_details
from kodiai.text.sanitizer import sanitize_outgoing_mentions

from .surface import MentionSurface

REPLY_SUMMARY = "kodiai response"
ERROR_DETAIL_FALLBACK = "An unexpected error occurred while processing your request."
CATCH_ALL_DETAIL_FALLBACK = "An unexpected error occurred"


def _wrapped(*lines: str) -> str:
    return wrap_in_details("\n".join(lines), REPLY_SUMMARY)


def no_publish_fallback_reply() -> str:
    """R3: the model succeeded but posted nothing."""
    return _wrapped(
        "I saw your mention, but I didn't publish a reply automatically.",
        "",
        "Can you clarify what you want me to do?",
        "- (1) What outcome are you aiming for?",
        "- (2) Which file(s) / line(s) should I focus on?",
    )


def opened_pr_reply(pr_url: str) -> str:
    """R4."""
    return _wrapped(f"Opened PR: {pr_url}")


def existing_pr_reply(pr_url: str) -> str:
    """R5: the deterministic bot branch already has a PR; the model is not run."""
    return _wrapped(f"Existing PR: {pr_url}")


def write_in_progress_reply() -> str:
    """R6: the same write key is already being handled."""
    return _wrapped(
        "Write request already in progress.", "", "If no PR appears shortly, retry the same comment."
    )


def rate_limited_reply(retry_after_seconds: int) -> str:
    """R7: ``write.minIntervalSeconds`` has not elapsed (the caller rounds the remaining seconds up)."""
    return _wrapped("Write request rate-limited.", "", f"Try again in {retry_after_seconds}s.")


def pr_context_only_reply() -> str:
    """R8: a write intent (``plan:`` included) outside a PR."""
    return _wrapped(
        "I can only apply changes in a PR context.",
        "",
        "Mention me in a PR top-level comment or an inline diff comment to request changes.",
    )


def write_disabled_reply() -> str:
    """R9: ``apply:``/``change:`` while ``write.enabled`` is false."""
    return _wrapped(
        "Write mode is disabled for this repo.",
        "",
        "To enable:",
        "```yml",
        "write:",
        "  enabled: true",
        "```",
        "",
        "Then re-run your request with `apply:` or `change:`.",
    )


def conversation_limit_reply(max_turns: int | float) -> str:
    """R10 (not wrapped): the per-PR turn cap of inline thread replies is reached."""
    return (
        f"Conversation limit reached ({js_number_to_string(max_turns)} turns per PR).\n"
        "Start a new thread or open a new issue for further questions."
    )


def no_changes_reply() -> str:
    """R11: write mode ran but left the working tree clean."""
    return _wrapped(
        "I didn't end up making any file changes.",
        "",
        "Try re-running with a more specific request (which file, and what exact change).",
    )


def already_applied_reply(source_pr_url: str) -> str:
    """R12: the PR head already carries this write key's commit marker."""
    return _wrapped(f"Already applied (idempotent): {source_pr_url}")


def updated_pr_reply(source_pr_url: str) -> str:
    """R13: the changes were pushed to the same-repo PR head branch."""
    return _wrapped(f"Updated PR: {source_pr_url}")


def cost_warning_reply(cost_usd: float, cost_warning_usd: float) -> str:
    """R14: the review's cost warning, unwrapped and unsanitised, always a top-level comment."""
    return build_cost_warning(cost_usd, cost_warning_usd)


WritePolicyCode = Literal[
    "write-policy-denied-path",
    "write-policy-not-allowed",
    "write-policy-secret-detected",
    "write-policy-no-changes",
]


class WritePolicyRefusal(BaseModel):
    """A write-policy error as R15 reports it (E3.14.7)."""

    model_config = ConfigDict(frozen=True)

    code: str
    message: str
    rule: str | None = None
    path: str | None = None
    pattern: str | None = None
    detector: str | None = None


def yaml_single_quoted(value: str) -> str:
    """``'value'`` with single quotes doubled, as YAML wants."""
    return "'" + value.replace("'", "''") + "'"


def _refusal_tail(refusal: WritePolicyRefusal, allow_paths: Sequence[str]) -> list[str]:
    if refusal.code == "write-policy-not-allowed" and refusal.path:
        tail = [
            "",
            "Smallest config change (if intended):",
            "```yml",
            "write:",
            "  allowPaths:",
            f"    - {yaml_single_quoted(refusal.path)}",
            "```",
        ]
        if allow_paths:
            tail += ["", "Current allowPaths: " + ", ".join(yaml_single_quoted(p) for p in allow_paths)]
        return tail
    if refusal.code == "write-policy-denied-path":
        return [
            "",
            "This path is blocked by `write.denyPaths` because changing it automatically is potentially risky.",
            "If this change is intended, narrow or remove the matching `write.denyPaths` entry.",
        ]
    if refusal.code == "write-policy-secret-detected":
        advice = [
            "",
            "No safe config bypass suggested.",
            "Remove or redact the secret-like content and retry.",
        ]
        if refusal.detector == "entropy":
            return [
                *advice,
                "If this is a false positive, `write.secretScan.enabled: false` disables the scan (reduced safety).",
            ]
        # port deviation: token detectors and the server's own secrets are always on (docs/parity.md)
        return [*advice, "Tokens, private keys and the server's own secrets are always refused."]
    if refusal.code == "write-policy-no-changes":
        return [
            "",
            "No file changes were produced.",
            "Restate the request with a concrete file and the exact edit you want.",
        ]
    return []


def write_refusal_reply(refusal: WritePolicyRefusal, allow_paths: Sequence[str] = ()) -> str:
    """R15: ``Write request refused.``, the reason fields present, the message, then the per-code advice."""
    lines = ["Write request refused.", "", f"Reason: {refusal.code}"]
    for label, value in (
        ("Rule", refusal.rule),
        ("File", refusal.path),
        ("Matched pattern", refusal.pattern),
        ("Detector", refusal.detector),
    ):
        if value:
            lines.append(f"{label}: {value}")
    lines += ["", refusal.message, *_refusal_tail(refusal, allow_paths)]
    return _wrapped(*lines)


# --- error replies (E3.15) --------------------------------------------------------------------------


def execution_error_reply(
    *, is_timeout: bool, error_message_text: str | None, bot_handles: Sequence[str]
) -> str:
    """E3.15.2: an ``error`` conclusion; ``timeout`` when timed out, else classified (never ``timeout_partial``)."""
    category = "timeout" if is_timeout else classify_error(error_message_text or "", False)
    detail = error_message_text or ERROR_DETAIL_FALLBACK
    return mention_error_body(format_error_comment(category, detail), bot_handles)


def catch_all_error_reply(error: object, bot_handles: Sequence[str]) -> str:
    """E3.15.3: an exception escaped the job; classified from its message (a non-exception gets the fallback)."""
    category = classify_error(error, False)
    detail = str(error) if isinstance(error, BaseException) else ""
    return mention_error_body(
        format_error_comment(category, detail or CATCH_ALL_DETAIL_FALLBACK), bot_handles
    )


# --- routing (E3.16) --------------------------------------------------------------------------------

ReplyPurpose = Literal["reply", "no_publish_fallback", "error", "catch_all_error"]


class ReplyEndpoint(BaseModel):
    """One POST: a thread reply to an inline comment, or a top-level issue/PR comment."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["thread_reply", "issue_comment"]
    suffix: str


class ReplyRoute(BaseModel):
    """Endpoints tried in order (the next one only after a failure); when the last fails the error is
    raised (``on_failure="raise"``, reaching the catch-all) or logged and swallowed (``"log"``)."""

    model_config = ConfigDict(frozen=True)

    endpoints: tuple[ReplyEndpoint, ...]
    on_failure: Literal["raise", "log"]
    failure_message: str = ""


def reply_route(surface: MentionSurface, purpose: ReplyPurpose = "reply") -> ReplyRoute:
    """Where a reply goes.

    - ``reply`` (R-post): inline surface with a PR → thread reply, falling back to a top-level comment;
      otherwise top-level; a failed top-level post raises.
    - ``no_publish_fallback`` (R3): inline → thread reply only; otherwise top-level.
    - ``error`` (E3.15.2): like R-post, but a final failure is only logged.
    - ``catch_all_error`` (E3.15.3): inline → thread reply only; otherwise top-level; failures are logged.
    """
    top = ReplyEndpoint(kind="issue_comment", suffix=f"/issues/{surface.issue_number}/comments")
    thread = (
        ReplyEndpoint(
            kind="thread_reply", suffix=f"/pulls/{surface.pr_number}/comments/{surface.comment_id}/replies"
        )
        if surface.is_inline and surface.pr_number is not None
        else None
    )
    if purpose == "reply":
        return ReplyRoute(endpoints=(thread, top) if thread else (top,), on_failure="raise")
    if purpose == "no_publish_fallback":
        return ReplyRoute(endpoints=(thread or top,), on_failure="raise")
    if purpose == "error":
        return ReplyRoute(
            endpoints=(thread, top) if thread else (top,),
            on_failure="log",
            failure_message="Failed to post/update error comment",
        )
    return ReplyRoute(
        endpoints=(thread or top,),
        on_failure="log",
        failure_message="Failed to post error comment" if thread else "Failed to post/update error comment",
    )


async def deliver_reply(
    rest: RestApi,
    route: ReplyRoute,
    body: str,
    *,
    bot_handles: Sequence[str],
    sanitize: bool = True,
    log: Logger | None = None,
) -> Any:
    """Post ``body`` along ``route`` (outgoing mentions defused unless ``sanitize`` is false, i.e. R14).

    Returns the created comment's JSON, or None when every endpoint failed under ``on_failure="log"``.
    """
    logger = log or get_logger("kodiai.mention")
    text = sanitize_outgoing_mentions(body, bot_handles) if sanitize else body
    last = len(route.endpoints) - 1
    for index, endpoint in enumerate(route.endpoints):
        try:
            return await rest.post(endpoint.suffix, {"body": text})
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if index < last:
                logger.warning(
                    "Failed to post thread reply; falling back to top-level comment",
                    endpoint=endpoint.kind,
                    err=redact(str(exc)),
                )
                continue
            if route.on_failure == "raise":
                raise
            logger.error(route.failure_message, endpoint=endpoint.kind, err=redact(str(exc)))
    return None
