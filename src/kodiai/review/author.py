"""Author tier classification from the PR's author association and PR count (behaviour R2.7)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

__all__ = ["AuthorClassification", "AuthorTier", "classify_author"]

AuthorTier = Literal["first-time", "regular", "core"]

CORE_ASSOCIATIONS = frozenset({"MEMBER", "OWNER"})
FIRST_TIME_ASSOCIATIONS = frozenset({"FIRST_TIMER", "FIRST_TIME_CONTRIBUTOR"})
REGULAR_ASSOCIATIONS = frozenset({"COLLABORATOR", "CONTRIBUTOR"})


class AuthorClassification(BaseModel):
    tier: AuthorTier
    author_association: str
    pr_count: int | float | None
    cached_at: str | None = None


def _is_js_number(value: Any) -> bool:
    """``typeof value === "number"``; Python's ``bool`` is an ``int`` and must not count."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def classify_author(author_association: str, pr_count: Any = None) -> AuthorClassification:
    """Tier an author: MEMBER/OWNER core, first-timers first-time, else by PR count, else by association.

    The association is uppercased the JS way (``straße`` → ``STRASSE``) and not trimmed.
    """
    association = author_association.upper()
    count = pr_count if _is_js_number(pr_count) else None
    tier: AuthorTier
    if association in CORE_ASSOCIATIONS:
        tier = "core"
    elif association in FIRST_TIME_ASSOCIATIONS:
        tier = "first-time"
    elif count is not None:
        tier = "first-time" if count <= 1 else "regular" if count <= 9 else "core"
    elif association in REGULAR_ASSOCIATIONS:
        tier = "regular"
    else:
        tier = "first-time"
    return AuthorClassification(tier=tier, author_association=association, pr_count=count, cached_at=None)
