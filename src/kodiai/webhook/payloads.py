"""Typed views of the webhook payloads the bot handles (pydantic; unknown fields are kept, not rejected).

Handlers call :func:`parse_payload` (or a model's ``model_validate``) on ``WebhookEvent.payload``. Only
the fields the handlers read are declared; everything else stays available through ``model_extra``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Account(_Model):
    login: str
    id: int | None = None
    type: str | None = None


class Installation(_Model):
    id: int
    account: Account | None = None


class Repository(_Model):
    id: int | None = None
    name: str
    full_name: str
    owner: Account
    private: bool = False
    default_branch: str | None = None
    fork: bool = False


class Label(_Model):
    name: str


class Team(_Model):
    name: str | None = None
    slug: str | None = None


class GitRef(_Model):
    ref: str
    sha: str
    repo: Repository | None = None


class PullRequest(_Model):
    number: int
    title: str = ""
    body: str | None = None
    draft: bool = False
    state: str | None = None
    merged: bool | None = None
    user: Account | None = None
    head: GitRef
    base: GitRef
    labels: list[Label] = []
    html_url: str | None = None
    updated_at: str | None = None
    author_association: str | None = None
    additions: int | float = 0
    deletions: int | float = 0
    commits: int | None = None


class IssuePullRequestLink(_Model):
    url: str | None = None


class Issue(_Model):
    number: int
    title: str = ""
    body: str | None = None
    user: Account | None = None
    pull_request: IssuePullRequestLink | None = None


class Comment(_Model):
    id: int
    body: str | None = None
    user: Account | None = None
    created_at: str | None = None
    path: str | None = None
    line: int | None = None
    original_line: int | None = None
    diff_hunk: str | None = None
    in_reply_to_id: int | None = None


class Review(_Model):
    id: int
    body: str | None = None
    state: str | None = None
    user: Account | None = None
    submitted_at: str | None = None


class EventPayload(_Model):
    action: str | None = None
    sender: Account | None = None
    installation: Installation | None = None
    repository: Repository | None = None


class PullRequestEvent(EventPayload):
    number: int
    pull_request: PullRequest
    repository: Repository
    requested_reviewer: Any = None
    requested_team: Team | None = None
    label: Label | None = None


class IssueCommentEvent(EventPayload):
    issue: Issue
    comment: Comment
    repository: Repository


class PullRequestReviewCommentEvent(EventPayload):
    comment: Comment
    pull_request: PullRequest
    repository: Repository


class PullRequestReviewEvent(EventPayload):
    review: Review
    pull_request: PullRequest
    repository: Repository


class InstallationEvent(EventPayload):
    installation: Installation
    repositories: list[dict[str, Any]] | None = None


PAYLOAD_MODELS: dict[str, type[EventPayload]] = {
    "pull_request": PullRequestEvent,
    "issue_comment": IssueCommentEvent,
    "pull_request_review_comment": PullRequestReviewCommentEvent,
    "pull_request_review": PullRequestReviewEvent,
    "installation": InstallationEvent,
}


def parse_payload(event_name: str, payload: dict[str, Any]) -> EventPayload:
    """Validate ``payload`` with the model for ``event_name`` (a generic one for other events).

    Raises ``pydantic.ValidationError`` when a field a handler relies on is missing or mistyped.
    """
    return PAYLOAD_MODELS.get(event_name, EventPayload).model_validate(payload)
