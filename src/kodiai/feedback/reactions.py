"""The pure half of feedback sync (behaviour R1 step 55): which events target a PR, which findings
are recent enough to ask GitHub about, and which reactions count as a human's verdict on a finding.

Kept free of I/O so the filter that decides what the bot learns from can be read and tested on its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from kodiai.github.logins import normalize_login
from kodiai.github.models import Reaction
from kodiai.storage.knowledge_models import FeedbackReactionRecord, FindingCommentCandidate

MAX_CANDIDATES = 100
RECENT_WINDOW_DAYS = 30
THUMBS = frozenset({"+1", "-1"})
#: Events whose payload is always about a pull request (``issue_comment`` is checked per payload).
PR_EVENTS = frozenset({"pull_request", "pull_request_review_comment", "pull_request_review"})


def targets_pull_request(event_name: str, payload: Mapping[str, Any]) -> bool:
    """A PR event, or an ``issue_comment`` whose issue is a PR (``issue.pull_request`` truthy)."""
    if event_name in PR_EVENTS:
        return True
    if event_name != "issue_comment":
        return False
    issue = payload.get("issue")
    return isinstance(issue, dict) and bool(issue.get("pull_request"))


def repository_of(payload: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(owner, name)`` from ``repository.owner.login`` and ``repository.name``; None when either is
    missing or empty."""
    repository = payload.get("repository")
    if not isinstance(repository, dict):
        return None
    owner = repository.get("owner")
    login = owner.get("login") if isinstance(owner, dict) else None
    name = repository.get("name")
    if isinstance(login, str) and login and isinstance(name, str) and name:
        return login, name
    return None


def parse_timestamp(text: str) -> datetime | None:
    """ISO 8601 or SQLite's ``YYYY-MM-DD HH:MM:SS``; a time without a zone is UTC (SQLite's
    ``datetime('now')``). Unparseable → None (the candidate is dropped)."""
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def recent_candidates(
    candidates: Iterable[FindingCommentCandidate], now: datetime, window_days: int = RECENT_WINDOW_DAYS
) -> list[FindingCommentCandidate]:
    """Candidates created at or after ``now - window_days``, in the given order."""
    cutoff = now - timedelta(days=window_days)
    kept = []
    for candidate in candidates:
        created = parse_timestamp(candidate.created_at)
        if created is not None and created >= cutoff:
            kept.append(candidate)
    return kept


def unique_by_comment(candidates: Iterable[FindingCommentCandidate]) -> list[FindingCommentCandidate]:
    """One candidate per comment id (the first, i.e. the newest, wins): each comment is fetched once."""
    seen: dict[int, FindingCommentCandidate] = {}
    for candidate in candidates:
        seen.setdefault(candidate.comment_id, candidate)
    return list(seen.values())


def is_human_thumb(reaction: Reaction, app_slug: str) -> bool:
    """``+1``/``-1`` by someone who is neither a bot account nor the app itself."""
    if reaction.content not in THUMBS:
        return False
    user_type = reaction.user.type if reaction.user is not None else None
    if user_type is not None and user_type.lower() == "bot":
        return False
    login = reaction.user.login if reaction.user is not None else None
    normalised = normalize_login(login) if login is not None else ""
    return bool(normalised) and normalised != normalize_login(app_slug)


def reaction_records(
    candidate: FindingCommentCandidate, reactions: Sequence[Reaction], app_slug: str
) -> list[FeedbackReactionRecord]:
    """The human thumbs among ``reactions``, each carrying the finding's metadata."""
    records = []
    for reaction in reactions:
        reaction_id = reaction.id
        if reaction_id is None or not is_human_thumb(reaction, app_slug):
            continue
        login = reaction.user.login if reaction.user is not None else None
        reacted_at = reaction.created_at
        records.append(
            FeedbackReactionRecord(
                repo=candidate.repo,
                review_id=candidate.review_id,
                finding_id=candidate.finding_id,
                comment_id=candidate.comment_id,
                comment_surface=candidate.comment_surface,
                reaction_id=reaction_id,
                reaction_content=str(reaction.content),
                reactor_login=login or "unknown",
                reacted_at=reacted_at,
                severity=candidate.severity,
                category=candidate.category,
                file_path=candidate.file_path,
                title=candidate.title,
            )
        )
    return records
