"""Typed views of the GitHub REST answers that feature code reads (pull requests, comments, reactions,
collaborator permissions).

Only the fields a feature reads are declared; anything else in the answer is ignored. Every field is
*lenient*: a value of the wrong type (or a missing one) reads as ``None`` (an empty list for lists) instead
of failing validation, because the callers have always treated a malformed answer field by field (a
reaction without an id is skipped, a PR without a title has the title ""), never as an error of the
whole answer. Webhook payloads have their own, stricter models in :mod:`kodiai.webhook.payloads`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict

__all__ = [
    "CollaboratorPermission",
    "GitHubUser",
    "GitRef",
    "IssueComment",
    "Label",
    "PullRequest",
    "PullRequestFile",
    "Reaction",
    "ReviewComment",
    "parse_list",
    "parse_object",
]


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _mapping_or_none(value: object) -> object:
    return value if isinstance(value, Mapping) else None


def _mappings(value: object) -> list[object]:
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


Text = Annotated[str | None, BeforeValidator(_str_or_none)]
Int = Annotated[int | None, BeforeValidator(_int_or_none)]


class _View(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class GitHubUser(_View):
    login: Text = None
    type: Text = None


User = Annotated[GitHubUser | None, BeforeValidator(_mapping_or_none)]


class GitRef(_View):
    """A PR's ``head`` or ``base``."""

    ref: Text = None
    sha: Text = None


Ref = Annotated[GitRef | None, BeforeValidator(_mapping_or_none)]


class Label(_View):
    name: Text = None


class PullRequest(_View):
    """``GET /repos/{o}/{r}/pulls/{n}``."""

    number: Int = None
    title: Text = None
    body: Text = None
    user: User = None
    author_association: Text = None
    head: Ref = None
    base: Ref = None
    labels: Annotated[list[Label], BeforeValidator(_mappings)] = []
    additions: Int = None
    deletions: Int = None
    commits: Int = None
    changed_files: Int = None

    @property
    def head_sha(self) -> str | None:
        return self.head.sha if self.head is not None else None


class PullRequestFile(_View):
    """One entry of ``GET /repos/{o}/{r}/pulls/{n}/files``."""

    filename: Text = None


class ReviewComment(_View):
    """An inline (pull-request review) comment: ``GET /repos/{o}/{r}/pulls/{n}/comments``."""

    id: Int = None
    path: Text = None
    body: Text = None
    line: Int = None
    start_line: Int = None
    in_reply_to_id: Int = None
    user: User = None
    created_at: Text = None


class IssueComment(_View):
    """``GET /repos/{o}/{r}/issues/{n}/comments``."""

    id: Int = None
    body: Text = None
    user: User = None
    created_at: Text = None
    updated_at: Text = None


class Reaction(_View):
    """``GET /repos/{o}/{r}/pulls/comments/{id}/reactions``."""

    id: Int = None
    content: Text = None
    user: User = None
    created_at: Text = None


class CollaboratorPermission(_View):
    """``GET /repos/{o}/{r}/collaborators/{u}/permission`` (its legacy ``permission`` field)."""

    permission: Text = None


ViewT = TypeVar("ViewT", bound=_View)


def parse_list(model: type[ViewT], data: Any) -> list[ViewT]:
    """The objects of a list answer as ``model`` views; anything that is not an object is dropped, and an
    answer that is not a list reads as empty."""
    return [model.model_validate(item) for item in _mappings(data)]


def parse_object(model: type[ViewT], data: Any) -> ViewT:
    """An object answer as a ``model`` view; an answer that is not an object reads as all-``None``."""
    return model.model_validate(data if isinstance(data, Mapping) else {})
