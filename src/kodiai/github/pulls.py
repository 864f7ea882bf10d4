"""The pull-request calls a review makes, on top of the REST façade (behaviour R1, R2.1, R3).

Each method is one GitHub endpoint with the paging the spec names; errors are the façade's
:class:`~kodiai.github.rest.GitHubApiError` and propagate: whether a step is fail-open is the
handler's decision, not this layer's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from kodiai.github.models import IssueComment, ReviewComment, parse_list
from kodiai.github.rest import GitHubRest, RestApi

#: Where a review-output marker was found (behaviour R2.1), in scan order.
MarkerSurface = Literal["review-comment", "issue-comment", "review"]
SCAN_PAGE_SIZE = 100
SCAN_ITEM_CAP = 2000


async def find_marker(rest: RestApi, pr_number: int, marker: str) -> MarkerSurface | None:
    """The first surface whose item bodies contain ``marker``: PR review comments (newest first), issue
    comments, then reviews; 100 a page, at most 2000 items each, a short page ends a surface."""
    sources: tuple[tuple[MarkerSurface, str, dict[str, str]], ...] = (
        ("review-comment", f"/pulls/{pr_number}/comments", {"sort": "created", "direction": "desc"}),
        ("issue-comment", f"/issues/{pr_number}/comments", {"sort": "created", "direction": "desc"}),
        ("review", f"/pulls/{pr_number}/reviews", {}),
    )
    for surface, suffix, params in sources:
        seen, page = 0, 1
        while seen < SCAN_ITEM_CAP:
            batch = await rest.get(suffix, per_page=SCAN_PAGE_SIZE, page=page, **params)
            if not isinstance(batch, list):
                break
            for item in batch[: SCAN_ITEM_CAP - seen]:
                body = item.get("body") if isinstance(item, dict) else None
                if isinstance(body, str) and marker in body:
                    return surface
            seen += len(batch)
            if len(batch) < SCAN_PAGE_SIZE:
                break
            page += 1
    return None


@dataclass(frozen=True)
class TeamRef:
    slug: str | None
    name: str | None


class RequestedTeams:
    """The re-review team calls (``ReviewerRequestClient`` of :mod:`kodiai.review.rereview_team`),
    blocking: the helper is synchronous and runs in a worker thread."""

    def __init__(self, rest: GitHubRest, pr_number: int) -> None:
        self._rest = rest
        self._path = rest.repo_path(f"/pulls/{pr_number}/requested_reviewers")

    def list_requested_teams(self) -> list[TeamRef]:
        data = self._rest.call("GET", self._path)
        teams = data.get("teams") if isinstance(data, dict) else None
        return [
            TeamRef(_text(t.get("slug")), _text(t.get("name"))) for t in teams or [] if isinstance(t, dict)
        ]

    def request_team(self, team_slug: str) -> None:
        self._rest.call("POST", self._path, body={"team_reviewers": [team_slug]})

    def request_reviewer(self, login: str) -> None:
        self._rest.call("POST", self._path, body={"reviewers": [login], "team_reviewers": []})


class PullRequestApi:
    """One pull request of one repository, as the installation sees it."""

    def __init__(self, rest: GitHubRest, number: int) -> None:
        self.rest = rest
        self.number = number

    # -- reads ------------------------------------------------------------------------------------
    async def commits(self, count: int) -> list[tuple[str, str]]:
        """``(sha, full message)`` of the PR's commits: one page of ``min(count, 100)``."""
        if count <= 0:
            return []
        data = await self.rest.get(f"/pulls/{self.number}/commits", per_page=min(count, 100))
        out: list[tuple[str, str]] = []
        for item in data if isinstance(data, list) else []:
            commit = item.get("commit") if isinstance(item, dict) else None
            message = commit.get("message") if isinstance(commit, dict) else None
            out.append((str(item.get("sha") or ""), message if isinstance(message, str) else ""))
        return out

    async def merged_pr_count(self, owner: str, repo: str, login: str) -> int | None:
        """How many merged PRs ``login`` authored in the repo (issue search, one result per page)."""
        query = f"repo:{owner}/{repo} type:pr author:{login} is:merged"
        data = await self.rest.request("GET", "/search/issues", params={"q": query, "per_page": 1})
        total = data.get("total_count") if isinstance(data, dict) else None
        return total if isinstance(total, int) else None

    async def review_comments_page(self) -> list[ReviewComment]:
        """The first page (100) of the PR's review comments, as the original's extraction reads them."""
        data = await self.rest.get(f"/pulls/{self.number}/comments", per_page=100)
        return parse_list(ReviewComment, data)

    async def issue_comments(self) -> list[IssueComment]:
        """Every issue comment of the PR, all pages (the original read only the first 100: Q15)."""
        data = await self.rest.paginate(f"/issues/{self.number}/comments", max_items=10_000)
        return parse_list(IssueComment, data)

    async def find_marker(self, marker: str) -> MarkerSurface | None:
        return await find_marker(self.rest, self.number, marker)

    def requested_teams(self) -> RequestedTeams:
        return RequestedTeams(self.rest, self.number)

    # -- writes -----------------------------------------------------------------------------------
    async def add_reaction(self, content: str) -> None:
        await self.rest.post(f"/issues/{self.number}/reactions", {"content": content})

    async def create_issue_comment(self, body: str) -> dict[str, Any]:
        created = await self.rest.post(f"/issues/{self.number}/comments", {"body": body})
        return created if isinstance(created, dict) else {}

    async def update_issue_comment(self, comment_id: int, body: str) -> None:
        await self.rest.patch(f"/issues/comments/{comment_id}", {"body": body})

    async def delete_review_comment(self, comment_id: int) -> None:
        await self.rest.delete(f"/pulls/comments/{comment_id}")

    async def approve(self, body: str, *, counts: bool = True) -> None:
        """An APPROVE review; with ``counts=False`` the same body as a COMMENT review, which no branch
        protection rule counts as an approval."""
        event = "APPROVE" if counts else "COMMENT"
        await self.rest.post(f"/pulls/{self.number}/reviews", {"event": event, "body": body})


def bodies(items: Sequence[IssueComment | ReviewComment]) -> list[object]:
    """The ``body`` of each item (None when missing or not a string), for the pure marker helpers."""
    return [item.body for item in items]


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None
