"""UI re-review team helpers (behaviour R2.2).

``build_rereview_team_candidates`` is pure. ``request_rereview_team_best_effort`` holds the decision
logic (already requested? which candidate next? fall back to the app user?) over a small client
protocol; the handler passes an adapter over its GitHub client. It never raises.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel

from kodiai.compat.js import js_trim
from kodiai.log import Logger, get_logger

_ALIASES = {"ai-review": "aireview", "aireview": "ai-review"}


def build_rereview_team_candidates(team: str | None) -> list[str]:
    """Trim, lowercase, keep the part after the last ``/``; add the ``ai-review``↔``aireview`` alias."""
    primary = js_trim(team or "").lower()
    primary = js_trim(primary.rsplit("/", 1)[-1])
    if not primary:
        return []
    alias = _ALIASES.get(primary)
    return [primary, alias] if alias else [primary]


class RequestedTeam(BaseModel):
    slug: str | None = None
    name: str | None = None


class TeamLike(Protocol):
    """A requested team as any client reports it."""

    @property
    def slug(self) -> str | None: ...

    @property
    def name(self) -> str | None: ...


class ReviewerRequestClient(Protocol):
    """The three GitHub calls the helper needs; errors carry an optional ``status`` attribute."""

    def list_requested_teams(self) -> Sequence[TeamLike]: ...

    def request_team(self, team_slug: str) -> None: ...

    def request_reviewer(self, login: str) -> None: ...


class RereviewTeamResult(BaseModel):
    already_requested: bool
    requested_team: str | None = None


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status", None)
    return status if isinstance(status, int) else None


def request_rereview_team_best_effort(
    client: ReviewerRequestClient,
    configured_team: str | None,
    fallback_reviewer: str | None = None,
    logger: Logger | None = None,
) -> RereviewTeamResult:
    """Request the configured team (or its alias), else the fallback user. Never raises."""
    log = logger if logger is not None else get_logger(__name__)
    candidates = build_rereview_team_candidates(configured_team)
    if not candidates:
        return RereviewTeamResult(already_requested=False)
    try:
        for team in client.list_requested_teams():
            names = {js_trim(team.slug or "").lower(), js_trim(team.name or "").lower()}
            if names & set(candidates):
                return RereviewTeamResult(already_requested=True)
    except Exception as exc:
        log.warning("Failed to list requested reviewers; continuing", error=str(exc))
    for index, candidate in enumerate(candidates):
        try:
            client.request_team(candidate)
            return RereviewTeamResult(already_requested=False, requested_team=candidate)
        except Exception as exc:
            log.warning(
                "Failed to request rereview team", team=candidate, status=_status(exc), error=str(exc)
            )
            if _status(exc) == 422 and index < len(candidates) - 1:
                continue
            break
    fallback = js_trim(fallback_reviewer or "")
    if fallback:
        try:
            client.request_reviewer(fallback)
        except Exception as exc:
            log.warning("Failed to request fallback reviewer", reviewer=fallback, error=str(exc))
    return RereviewTeamResult(already_requested=False)
