"""The context block of a mention prompt (behaviour E3.9), split the sans-I/O way.

:func:`fetch_mention_context_inputs` does the GitHub reads (with the original's paging and stop rules,
including its newest-first assumption, E3.21.7); :func:`render_mention_context` is pure: TOCTOU filter,
sanitising, UTF-16 truncation, budgets and scale notes. :func:`build_mention_context` composes both and
never fails a mention: any error yields an empty context.
"""

from __future__ import annotations

import asyncio
import functools
import math
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from kodiai.compat.js import JS_S, js_trim, utf16_len
from kodiai.github.rest import RestApi
from kodiai.log import Logger, get_logger, redact
from kodiai.review.prompt.truncate import truncate_deterministic
from kodiai.text.quoted_data import data_token, quote_data
from kodiai.text.sanitizer import filter_comments_to_trigger_time, sanitize_content

from .finding import FindingLookup, ReviewFinding, call_finding_lookup
from .surface import MentionSurface

LEGACY_TRACKING_PREFIX = "> **Kodiai**"
_REVIEW_OUTPUT_MARKER = re.compile(rf"<!--{JS_S}*kodiai:review-output-key:[\s\S]*?-->")


class MentionContextLimits(BaseModel):
    """The builder's guardrails; the handler passes ``int(mention.conversation.contextBudgetChars)`` as
    the thread budget (unset, it equals the conversation budget)."""

    model_config = ConfigDict(frozen=True)

    max_comments: int = 20
    max_chars_per_comment: int = 800
    max_conversation_chars: int = 16_000
    max_api_pages: int = 10
    per_page: int = 100
    max_pr_body_chars: int = 1200
    max_thread_chars: int | None = None
    recent_thread_turns: int = 3
    older_thread_turn_chars: int = 200

    @property
    def thread_budget(self) -> int:
        return self.max_thread_chars if self.max_thread_chars is not None else self.max_conversation_chars

    @property
    def older_turn_cap(self) -> int:
        return min(self.older_thread_turn_chars, self.max_chars_per_comment)


class ContextComment(BaseModel):
    """The fields of an issue or review comment the context reads."""

    model_config = ConfigDict(frozen=True)

    id: int
    login: str | None = None
    body: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    in_reply_to_id: int | None = None

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> ContextComment:
        user = data.get("user")
        return cls(
            id=data["id"],
            login=user.get("login") if isinstance(user, Mapping) else None,
            body=data.get("body"),
            created_at=data.get("created_at"),
            updated_at=data.get("updated_at"),
            in_reply_to_id=data.get("in_reply_to_id"),
        )


class PullSummary(BaseModel):
    """Title, author, refs and description of the PR (``GET pulls/{n}``)."""

    model_config = ConfigDict(frozen=True)

    title: str = ""
    body: str | None = None
    author: str | None = None
    head_ref: str | None = None
    base_ref: str | None = None

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> PullSummary:
        def ref(side: str) -> str | None:
            value = data.get(side)
            return value.get("ref") if isinstance(value, Mapping) else None

        user = data.get("user")
        return cls(
            title=data.get("title") or "",
            body=data.get("body"),
            author=user.get("login") if isinstance(user, Mapping) else None,
            head_ref=ref("head"),
            base_ref=ref("base"),
        )


class ConversationScan(BaseModel):
    """The issue comments fetched, in API order, and why the scan stopped."""

    model_config = ConfigDict(frozen=True)

    comments: tuple[ContextComment, ...] = ()
    pages_fetched: int = 0
    page_cap_hit: bool = False
    trigger_time_cap_hit: bool = False


class ThreadInputs(BaseModel):
    """The parent of a thread reply, the PR's first page of review comments, and the parent's finding."""

    model_config = ConfigDict(frozen=True)

    parent: ContextComment
    comments: tuple[ContextComment, ...] = ()
    finding: ReviewFinding | None = None


class MentionContextInputs(BaseModel):
    """Everything :func:`render_mention_context` needs; ``thread`` is None when it does not apply or the
    parent comment is gone (404)."""

    model_config = ConfigDict(frozen=True)

    conversation: ConversationScan = ConversationScan()
    pull: PullSummary | None = None
    thread: ThreadInputs | None = None


# --- time -----------------------------------------------------------------------------------------


def _epoch(value: str | None) -> float:
    """``Date.parse``: epoch seconds, NaN for missing or unparseable text (every comparison is then false)."""
    if not value:
        return math.nan
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        return math.nan
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _is_older(created_at: str | None, trigger: str) -> bool:
    return _epoch(created_at) < _epoch(trigger)


def _chronological(comments: Sequence[ContextComment]) -> list[ContextComment]:
    """Ascending by created time, then id (a NaN time difference falls through to the ids, as in JS)."""

    def compare(a: ContextComment, b: ContextComment) -> int:
        diff = _epoch(a.created_at) - _epoch(b.created_at)
        if diff and not math.isnan(diff):
            return -1 if diff < 0 else 1
        return (a.id > b.id) - (a.id < b.id)

    return sorted(comments, key=functools.cmp_to_key(compare))


def _is_legacy_tracking(comment: ContextComment) -> bool:
    return (comment.body or "").startswith(LEGACY_TRACKING_PREFIX)


def eligible_comments(comments: Sequence[ContextComment], trigger_time: str | None) -> list[ContextComment]:
    """TOCTOU-filtered (created and updated strictly before the trigger), legacy tracking comments dropped."""
    return [c for c in filter_comments_to_trigger_time(comments, trigger_time) if not _is_legacy_tracking(c)]


# --- fetch (I/O) ----------------------------------------------------------------------------------


async def scan_conversation(
    rest: RestApi, surface: MentionSurface, limits: MentionContextLimits
) -> ConversationScan:
    """Step 1: up to ``max_api_pages`` pages of issue comments, stopping early as the original does.

    The request asks for ``sort=created&direction=desc``; GitHub ignores both on this endpoint and
    answers oldest-first, so the early exit can select an old window on long issues (E3.21.7, kept).
    """
    trigger = surface.created_at
    comments: list[ContextComment] = []
    pages = 0
    for page in range(1, limits.max_api_pages + 1):
        data = await rest.get(
            f"/issues/{surface.issue_number}/comments",
            per_page=limits.per_page,
            page=page,
            sort="created",
            direction="desc",
        )
        batch = [ContextComment.from_api(item) for item in data] if isinstance(data, list) else []
        comments.extend(batch)
        pages = page
        if not trigger and len(comments) >= limits.max_comments:
            break
        if (
            trigger
            and batch
            and _is_older(batch[-1].created_at, trigger)
            and len(eligible_comments(comments, trigger)) >= limits.max_comments
        ):
            break
        if len(batch) < limits.per_page:
            break
    else:
        reached_older = bool(comments) and _is_older(comments[-1].created_at, trigger or "")
        return ConversationScan(
            comments=tuple(comments),
            pages_fetched=pages,
            page_cap_hit=True,
            trigger_time_cap_hit=bool(trigger) and bool(comments) and not reached_older,
        )
    return ConversationScan(comments=tuple(comments), pages_fetched=pages)


async def fetch_thread_inputs(
    rest: RestApi,
    surface: MentionSurface,
    finding_lookup: FindingLookup | None = None,
    log: Logger | None = None,
) -> ThreadInputs | None:
    """Step 6 reads: the parent (404 → None, other errors propagate), its finding when the parent carries
    a review-output marker (lookup errors swallowed), and the first 100 review comments of the PR."""
    if surface.in_reply_to_id is None or surface.pr_number is None:
        return None
    logger = log or get_logger("kodiai.mention")
    try:
        raw_parent = await rest.get(f"/pulls/comments/{surface.in_reply_to_id}")
    except Exception as exc:
        if getattr(exc, "status", None) != 404:
            raise
        logger.warning(
            "Parent review comment not found; skipping thread context", inReplyToId=surface.in_reply_to_id
        )
        return None
    parent = ContextComment.from_api(raw_parent)
    finding: ReviewFinding | None = None
    if finding_lookup is not None and _REVIEW_OUTPUT_MARKER.search(parent.body or ""):
        try:
            finding = call_finding_lookup(finding_lookup, surface.full_name, surface.in_reply_to_id)
        except Exception as exc:
            logger.debug("Finding lookup failed; thread context without finding", err=redact(str(exc)))
    data = await rest.get(
        f"/pulls/{surface.pr_number}/comments", per_page=100, sort="created", direction="asc"
    )
    comments = tuple(ContextComment.from_api(item) for item in data) if isinstance(data, list) else ()
    return ThreadInputs(parent=parent, comments=comments, finding=finding)


async def fetch_mention_context_inputs(
    rest: RestApi,
    surface: MentionSurface,
    *,
    finding_lookup: FindingLookup | None = None,
    limits: MentionContextLimits | None = None,
    log: Logger | None = None,
) -> MentionContextInputs:
    """All GitHub reads of the context, in the original's order: conversation, PR, thread."""
    limits = limits or MentionContextLimits()
    conversation = await scan_conversation(rest, surface, limits)
    pull = None
    if surface.pr_number is not None:
        pull = PullSummary.from_api(await rest.get(f"/pulls/{surface.pr_number}"))
    thread = None
    if surface.is_inline:
        thread = await fetch_thread_inputs(rest, surface, finding_lookup, log)
    return MentionContextInputs(conversation=conversation, pull=pull, thread=thread)


# --- render (pure) --------------------------------------------------------------------------------


def truncate_for_context(text: str, cap: int) -> tuple[str, bool]:
    """Cap ≤ 0 → empty (truncated when there was text); else the review prompt's deterministic cut."""
    if cap <= 0:
        return "", bool(text)
    return truncate_deterministic(text, cap)


def _comment_body(comment: ContextComment) -> str:
    return sanitize_content(comment.body) if comment.body is not None else "(empty)"


def _budgeted_comments(
    comments: Sequence[ContextComment], caps: Sequence[int], budget: int
) -> tuple[list[str], bool, list[bool]]:
    """Each comment as a ``### @login (time)`` section, its body cut to its own cap and then to what is
    left of ``budget`` (UTF-16 units); none after the budget is spent. Returns the lines, whether the budget
    cut a body, and for each comment included whether its own cap cut it."""
    lines: list[str] = []
    remaining = budget
    budget_hit = False
    capped_flags: list[bool] = []
    for comment, cap in zip(comments, caps, strict=True):
        if remaining <= 0:
            break
        capped, truncated = truncate_for_context(_comment_body(comment), cap)
        capped_flags.append(truncated)
        budgeted, _ = truncate_for_context(capped, remaining)
        if utf16_len(budgeted) < utf16_len(capped):
            budget_hit = True
        lines += [f"### @{comment.login or 'unknown'} ({comment.created_at})", budgeted, ""]
        remaining -= utf16_len(budgeted)
    return lines, budget_hit, capped_flags


def _render_conversation(
    scan: ConversationScan, trigger: str | None, limits: MentionContextLimits, notes: list[str]
) -> list[str]:
    """Steps 1 (notes), 2 and 3."""
    if scan.page_cap_hit:
        notes.append(
            f"Conversation history scan capped at {limits.max_api_pages} page(s) of issue comments "
            "(pagination guardrail)."
        )
    if scan.trigger_time_cap_hit:
        notes.append(
            "Conversation history may include comments after trigger time because scan did not reach "
            f"older pages before {trigger}."
        )
    eligible = _chronological(eligible_comments(scan.comments, trigger))
    if len(eligible) > limits.max_comments:
        notes.append(f"Only the last {limits.max_comments} comment(s) were included (comment count cap).")
    included = eligible[-limits.max_comments :] if limits.max_comments > 0 else []
    if not included:
        return []
    filtered = f" (filtered to trigger time: {trigger})" if trigger else ""
    sections, budget_hit, capped = _budgeted_comments(
        included, [limits.max_chars_per_comment] * len(included), limits.max_conversation_chars
    )
    lines = ["## Conversation History", f"Included: {len(included)} comment(s){filtered}", "", *sections]
    if budget_hit:
        notes.append(
            f"Conversation history truncated due to {limits.max_conversation_chars} character cap "
            "across included comments."
        )
    if any(capped):
        notes.append(
            f"One or more individual comments were truncated to {limits.max_chars_per_comment} characters."
        )
    return lines


def _render_pull(pull: PullSummary, limits: MentionContextLimits, notes: list[str]) -> list[str]:
    """Step 4."""
    lines = [
        "## Pull Request Context",
        f"Title: {sanitize_content(pull.title)}",
        f"Author: {pull.author or 'unknown'}",
        f"Branches: {pull.head_ref} -> {pull.base_ref}",
    ]
    if pull.body:
        body, truncated = truncate_for_context(sanitize_content(pull.body), limits.max_pr_body_chars)
        if truncated:
            notes.append(f"PR description truncated to {limits.max_pr_body_chars} characters.")
        lines += ["", "Description:", body]
    lines.append("")
    return lines


def _render_inline(surface: MentionSurface) -> list[str]:
    """Step 5."""
    lines = ["## Inline Review Comment Context"]
    if surface.file_path:
        lines.append(f"File: {surface.file_path}")
    if surface.file_line is not None:
        lines.append(f"Line: {surface.file_line}")
    lines.append("")
    if surface.diff_hunk:
        lines += ["Diff hunk:", "```diff", sanitize_content(surface.diff_hunk), "```", ""]
    return lines


def _finding_lines(finding: ReviewFinding) -> list[str]:
    """The stored finding's fields as quoted data (issue 23): a stored title cannot open a section."""
    lines = [
        f"Original finding: [{data_token(finding.severity.upper())}] {data_token(finding.category)}",
        f"File: {quote_data(finding.file_path)}",
    ]
    if finding.start_line is not None:
        lines.append(f"Line: {finding.start_line}")
    return [*lines, f"Title: {quote_data(finding.title)}", ""]


def _render_thread(
    surface: MentionSurface, thread: ThreadInputs, limits: MentionContextLimits, notes: list[str]
) -> list[str]:
    """Step 6: the thread's earlier turns (not TOCTOU-filtered, E3.21.8); older turns cut shorter."""
    lines = ["## Review Comment Thread Context"]
    if thread.finding is not None:
        lines += _finding_lines(thread.finding)
    root = (
        thread.parent.in_reply_to_id if thread.parent.in_reply_to_id is not None else surface.in_reply_to_id
    )
    turns = _chronological(
        [
            c
            for c in thread.comments
            if (c.id == root or c.in_reply_to_id == root) and c.id != surface.comment_id
        ]
    )
    if not turns:
        return [*lines, "No earlier comments found in this thread.", ""]
    older = min(max(len(turns) - limits.recent_thread_turns, 0), len(turns))  # the first turns, cut shorter
    caps = [limits.older_turn_cap] * older + [limits.max_chars_per_comment] * (len(turns) - older)
    sections, budget_hit, capped = _budgeted_comments(turns, caps, limits.thread_budget)
    lines += sections
    if budget_hit:
        notes.append(f"Review thread context truncated due to {limits.thread_budget} character cap.")
    if any(capped[:older]):
        notes.append(
            f"Older review thread turns were truncated to {limits.older_turn_cap} characters to preserve "
            "recent context."
        )
    return lines


def render_mention_context(
    surface: MentionSurface, inputs: MentionContextInputs, limits: MentionContextLimits | None = None
) -> str:
    """Sections in order (conversation, PR, inline, thread) with the scale notes prepended; trimmed, one
    trailing newline."""
    limits = limits or MentionContextLimits()
    notes: list[str] = []
    lines = _render_conversation(inputs.conversation, surface.created_at, limits, notes)
    if inputs.pull is not None:
        lines += _render_pull(inputs.pull, limits, notes)
    if surface.is_inline:
        lines += _render_inline(surface)
    if inputs.thread is not None:
        lines += _render_thread(surface, inputs.thread, limits, notes)
    if notes:
        header = ["## Scale Notes", "Some context was omitted due to scale guardrails:"]
        lines = [*header, *(f"- {note}" for note in notes), "", *lines]
    return js_trim("\n".join(lines)) + "\n"


async def build_mention_context(
    rest: RestApi,
    surface: MentionSurface,
    *,
    finding_lookup: FindingLookup | None = None,
    limits: MentionContextLimits | None = None,
    log: Logger | None = None,
) -> str:
    """Fetch and render; non-fatal: any failure is logged and yields ``""`` (cancellation propagates)."""
    logger = log or get_logger("kodiai.mention")
    try:
        inputs = await fetch_mention_context_inputs(
            rest, surface, finding_lookup=finding_lookup, limits=limits, log=logger
        )
        return render_mention_context(surface, inputs, limits)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        logger.warning(
            "Failed to build mention context; proceeding with empty context",
            err=redact(f"{type(exc).__name__}: {exc}"),
        )
        return ""
