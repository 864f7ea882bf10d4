"""Where a mention came from (behaviour E3.2) and the pre-queue filters (E3.3), all pure.

Three webhook events can carry an ``@kodiai`` mention; :func:`normalize_mention` turns each into one
:class:`MentionSurface`, so the rest of the flow never looks at a raw payload again. The pre-queue
filters run on the dispatcher's task before any I/O and answer with a named skip reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from kodiai.compat.js import js_trim
from kodiai.webhook.payloads import (
    IssueCommentEvent,
    PullRequest,
    PullRequestReviewCommentEvent,
    PullRequestReviewEvent,
    Repository,
)

SurfaceKind = Literal["issue_comment", "pr_comment", "pr_review_comment", "pr_review_body"]

#: ``<event>.<action>`` keys the mention handler registers for (E3.1).
MENTION_EVENT_KEYS = (
    "issue_comment.created",
    "pull_request_review_comment.created",
    "pull_request_review.submitted",
)

#: The alias answered besides the app slug unless ``mention.acceptClaudeAlias`` is false.
CLAUDE_HANDLE = "claude"

PreQueueSkip = Literal["unsupported-event", "empty-review-body", "no-mention", "self-or-bot-author"]


class MentionSurface(BaseModel):
    """One mention, whatever event carried it.

    ``comment_id`` is the review id for ``pr_review_body`` (review ids are not comment ids: no reaction
    and no thread reply on that surface). ``created_at`` is the trigger time of the TOCTOU filter.
    Head/base refs are unknown for ``pr_comment`` until the handler reads the PR (:func:`with_pull_refs`).
    """

    model_config = ConfigDict(frozen=True)

    surface: SurfaceKind
    installation_id: int | None = None
    owner: str
    repo: str
    default_branch: str | None = None
    issue_number: int
    pr_number: int | None = None
    comment_id: int
    body: str
    author: str
    created_at: str | None = None
    head_ref: str | None = None
    base_ref: str | None = None
    head_repo_owner: str | None = None
    head_repo_name: str | None = None
    pr_author: str | None = None
    """The PR's author (its permission decides whose ``.kodiai.yml`` governs the run)."""
    diff_hunk: str | None = None
    file_path: str | None = None
    file_line: int | None = None
    in_reply_to_id: int | None = None

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.repo}"

    @property
    def is_inline(self) -> bool:
        """An inline review comment: replies go into its thread, reactions to the review-comment endpoint."""
        return self.surface == "pr_review_comment"

    @property
    def is_pr(self) -> bool:
        return self.pr_number is not None

    @property
    def is_same_repo_pr(self) -> bool:
        """A PR whose named head branch lives in this repository: not a fork, not a deleted head repo.
        Anything else is treated as a fork (its content is not this repository's to push)."""

        def norm(value: str | None) -> str:
            return (value or "").strip().lower()

        return (
            self.pr_number is not None
            and bool(norm(self.head_ref))
            and norm(self.head_repo_owner) == norm(self.owner)
            and norm(self.head_repo_name) == norm(self.repo)
        )


def _base(repository: Repository, installation_id: int | None) -> dict[str, Any]:
    return {
        "installation_id": installation_id,
        "owner": repository.owner.login,
        "repo": repository.name,
        "default_branch": repository.default_branch,
    }


def _pull_refs(pull: PullRequest) -> dict[str, Any]:
    head_repo = pull.head.repo
    return {
        "head_ref": pull.head.ref,
        "base_ref": pull.base.ref,
        "head_repo_owner": head_repo.owner.login if head_repo else None,
        "head_repo_name": head_repo.name if head_repo else None,
        "pr_author": pull.user.login if pull.user is not None else None,
    }


def _login(user: Any) -> str:
    return user.login if user is not None else ""


def normalize_issue_comment(payload: Mapping[str, Any]) -> MentionSurface:
    """``issue_comment``: a PR when ``issue.pull_request`` is present (refs filled later), else an issue."""
    event = IssueCommentEvent.model_validate(payload)
    issue, comment = event.issue, event.comment
    is_pr = issue.pull_request is not None
    return MentionSurface(
        **_base(event.repository, event.installation.id if event.installation else None),
        surface="pr_comment" if is_pr else "issue_comment",
        issue_number=issue.number,
        pr_number=issue.number if is_pr else None,
        comment_id=comment.id,
        body=comment.body or "",
        author=_login(comment.user),
        created_at=comment.created_at,
    )


def normalize_review_comment(payload: Mapping[str, Any]) -> MentionSurface:
    """``pull_request_review_comment``: the only surface with a hunk, a file line and ``in_reply_to_id``."""
    event = PullRequestReviewCommentEvent.model_validate(payload)
    pull, comment = event.pull_request, event.comment
    return MentionSurface(
        **_base(event.repository, event.installation.id if event.installation else None),
        **_pull_refs(pull),
        surface="pr_review_comment",
        issue_number=pull.number,
        pr_number=pull.number,
        comment_id=comment.id,
        body=comment.body or "",
        author=_login(comment.user),
        created_at=comment.created_at,
        diff_hunk=comment.diff_hunk,
        file_path=comment.path,
        file_line=comment.line if comment.line is not None else comment.original_line,
        in_reply_to_id=comment.in_reply_to_id,
    )


def normalize_review_body(payload: Mapping[str, Any]) -> MentionSurface | None:
    """``pull_request_review``: None for an empty or null body; trigger time ``submitted_at`` ?? PR ``updated_at``."""
    event = PullRequestReviewEvent.model_validate(payload)
    pull, review = event.pull_request, event.review
    if not review.body:
        return None
    return MentionSurface(
        **_base(event.repository, event.installation.id if event.installation else None),
        **_pull_refs(pull),
        surface="pr_review_body",
        issue_number=pull.number,
        pr_number=pull.number,
        comment_id=review.id,
        body=review.body,
        author=_login(review.user),
        created_at=review.submitted_at if review.submitted_at is not None else pull.updated_at,
    )


def normalize_mention(event_name: str, payload: Mapping[str, Any]) -> MentionSurface | None:
    """The surface of a mention event; None for other events and for reviews without a body.

    Raises ``pydantic.ValidationError`` when the payload lacks a field the surface needs.
    """
    if event_name == "issue_comment":
        return normalize_issue_comment(payload)
    if event_name == "pull_request_review_comment":
        return normalize_review_comment(payload)
    if event_name == "pull_request_review":
        return normalize_review_body(payload)
    return None


def with_pull_refs(surface: MentionSurface, pull: Mapping[str, Any]) -> MentionSurface:
    """Fill head/base refs and the head repo from a ``GET pulls/{n}`` answer (``pr_comment``, E3.4 step 2)."""
    return surface.model_copy(update=_pull_refs(PullRequest.model_validate(pull)))


def _handle_names(handles: Iterable[str]) -> list[str]:
    """Handles without a leading ``@``; blank ones dropped."""
    names = (h[1:] if h.startswith("@") else h for h in handles)
    return [name for name in names if js_trim(name)]


def _mention_patterns(handles: Iterable[str]) -> list[re.Pattern[str]]:
    # The original's escaping helper escapes nothing; app slugs and "claude" contain no regex
    # metacharacters, so escaping properly changes nothing for real handles and cannot raise.
    return [re.compile(rf"@{re.escape(name)}\b", re.IGNORECASE | re.ASCII) for name in _handle_names(handles)]


def contains_mention(body: str | None, handles: Iterable[str]) -> bool:
    """Whether ``body`` has ``@handle`` followed by an ASCII word boundary (``@kodiai123`` does not count)."""
    if not body:
        return False
    return any(pattern.search(body) for pattern in _mention_patterns(handles))


def strip_mention(body: str, handles: Iterable[str]) -> str:
    """Remove every ``@handle`` (case-insensitive, word-bounded, handle by handle) and trim; partial handles stay."""
    for pattern in _mention_patterns(handles):
        body = pattern.sub("", body)
    return js_trim(body)


def _trigger_text(event_name: str, payload: Mapping[str, Any]) -> tuple[Any, Any]:
    """``(body, author login)`` of the comment or review that triggered the event."""
    holder = payload.get("review" if event_name == "pull_request_review" else "comment")
    if not isinstance(holder, Mapping):
        return None, None
    user = holder.get("user")
    return holder.get("body"), user.get("login") if isinstance(user, Mapping) else None


def has_fast_mention(body: str | None, app_slug: str) -> bool:
    """The cheap substring filter: ``@<slug>`` or ``@claude`` anywhere (so ``@kodiai123`` passes, E3.21.1)."""
    text = (body or "").lower()
    return f"@{app_slug.lower()}" in text or f"@{CLAUDE_HANDLE}" in text


def is_self_or_bot_author(login: str | None, app_slug: str) -> bool:
    """The app itself or any ``[bot]`` account: never answered, whatever the router let through."""
    name = (login or "").lower()
    return name == app_slug.lower() or name.endswith("[bot]")


def pre_queue_skip(
    event_name: str, action: str | None, payload: Mapping[str, Any], app_slug: str
) -> PreQueueSkip | None:
    """E3.3 in order: event/action, empty review body, fast mention filter, self/bot author; None = enqueue."""
    if f"{event_name}.{action or ''}" not in MENTION_EVENT_KEYS:
        return "unsupported-event"
    body, author = _trigger_text(event_name, payload)
    if event_name == "pull_request_review" and not body:
        return "empty-review-body"
    if not has_fast_mention(body if isinstance(body, str) else None, app_slug):
        return "no-mention"
    if is_self_or_bot_author(author if isinstance(author, str) else None, app_slug):
        return "self-or-bot-author"
    return None
