"""Phase A of the review (behaviour R1 steps 1–6), pure: which events start a review, and what
to clone for them. A gate answers with a named skip reason; the handler logs it and stops."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from kodiai.compat.js import js_trim
from kodiai.github.logins import normalize_login

REVIEW_ACTIONS = ("opened", "ready_for_review", "review_requested", "synchronize")
REREVIEW_TEAM_NAMES = frozenset({"ai-review", "aireview"})

SkipReason = Literal[
    "draft",
    "non-kodiai-reviewer",
    "team-only-request",
    "missing-or-malformed-reviewer-payload",
]


def review_requested_skip(payload: dict[str, Any], app_slug: str) -> SkipReason | None:
    """Step 5: a ``review_requested`` counts only for the app itself or the ``ai-review`` team."""
    reviewer = payload.get("requested_reviewer")
    login = reviewer.get("login") if isinstance(reviewer, dict) else None
    if isinstance(login, str):
        return None if normalize_login(login) == normalize_login(app_slug) else "non-kodiai-reviewer"
    team = payload.get("requested_team")
    name = team.get("name") if isinstance(team, dict) else None
    if isinstance(name, str):
        slug = team.get("slug") if isinstance(team, dict) else None
        names = {js_trim(name).lower(), js_trim(slug).lower() if isinstance(slug, str) else ""}
        return None if names & REREVIEW_TEAM_NAMES else "team-only-request"
    return "missing-or-malformed-reviewer-payload"


def phase_a_skip(action: str, payload: dict[str, Any], app_slug: str) -> SkipReason | None:
    """Steps 3 and 5 in order: drafts, then reviewer requests for someone else."""
    pull = payload.get("pull_request")
    if isinstance(pull, dict) and pull.get("draft") is True:
        return "draft"
    if action == "review_requested":
        return review_requested_skip(payload, app_slug)
    return None


class ClonePlan(BaseModel):
    """Step 6: the API target is the base repo; forks clone the base branch and fetch ``pull/<n>/head``."""

    model_config = ConfigDict(frozen=True)

    owner: str
    repo: str
    ref: str
    use_pr_ref: bool
    is_fork: bool
    is_deleted_fork: bool


def clone_plan(payload: dict[str, Any]) -> ClonePlan:
    """Where to clone from. Raises ``KeyError``/``TypeError`` on a payload without the PR refs."""
    repository = payload["repository"]
    pull = payload["pull_request"]
    head = pull["head"]
    base_full = repository["full_name"]
    head_repo = head.get("repo")
    is_deleted_fork = "repo" in head and head_repo is None
    is_fork = isinstance(head_repo, dict) and head_repo.get("full_name") != base_full
    if is_fork or is_deleted_fork:
        return ClonePlan(
            owner=repository["owner"]["login"],
            repo=repository["name"],
            ref=pull["base"]["ref"],
            use_pr_ref=True,
            is_fork=is_fork,
            is_deleted_fork=is_deleted_fork,
        )
    source = head_repo if isinstance(head_repo, dict) and head_repo else repository
    return ClonePlan(
        owner=source["owner"]["login"],
        repo=source["name"],
        ref=head["ref"],
        use_pr_ref=False,
        is_fork=False,
        is_deleted_fork=False,
    )
