"""The review finding a thread reply is about (behaviour E3.9 step 6, E3.10).

The knowledge store answers ``(owner/repo, comment id)`` with the newest finding posted as that
comment. A lookup failure never fails a mention: the reply is simply answered without the finding.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from kodiai.log import Logger, get_logger, redact

from .surface import MentionSurface


class FindingLike(Protocol):
    """What the lookup returns (``kodiai.storage.knowledge_models.FindingByComment`` fits)."""

    @property
    def severity(self) -> str: ...
    @property
    def category(self) -> str: ...
    @property
    def file_path(self) -> str: ...
    @property
    def start_line(self) -> int | None: ...
    @property
    def title(self) -> str: ...


#: ``(owner/repo, comment id) -> finding | None``, e.g. ``KnowledgeStore.get_finding_by_comment_id``.
FindingLookup = Callable[[str, int], FindingLike | None]


class ReviewFinding(BaseModel):
    """A frozen copy of the looked-up finding, as the context and the prompt render it."""

    model_config = ConfigDict(frozen=True, from_attributes=True)

    severity: str
    category: str
    file_path: str
    start_line: int | None = None
    title: str


def call_finding_lookup(lookup: FindingLookup, repo: str, comment_id: int) -> ReviewFinding | None:
    """Call the lookup and freeze its answer; exceptions propagate (callers decide how to swallow them)."""
    found = lookup(repo, comment_id)
    return ReviewFinding.model_validate(found, from_attributes=True) if found is not None else None


def lookup_reply_finding(
    surface: MentionSurface, lookup: FindingLookup | None, log: Logger | None = None
) -> ReviewFinding | None:
    """E3.10: for a thread reply, the finding behind the parent comment (marker or not); errors → warning."""
    if lookup is None or surface.in_reply_to_id is None:
        return None
    try:
        return call_finding_lookup(lookup, surface.full_name, surface.in_reply_to_id)
    except Exception as exc:
        (log or get_logger("kodiai.mention")).warning(
            "Failed to look up finding for mention reply; continuing without finding context",
            inReplyToId=surface.in_reply_to_id,
            err=redact(f"{type(exc).__name__}: {exc}"),
        )
        return None
