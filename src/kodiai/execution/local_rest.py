"""An in-memory stand-in for one pull request's GitHub API, used by ``kodiai review``.

The MCP tools run unchanged (validators, markers, mention sanitising, pacing) but their writes land
here instead of on GitHub, so an operator sees exactly what the bot would have posted.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from kodiai.github.rest import GitHubApiError


class RecordingGitHub:
    """One local PR: its head SHA and everything the tools posted, in order."""

    def __init__(self, pr_number: int, head_sha: str, bot_login: str = "kodiai[bot]") -> None:
        self.pr_number = pr_number
        self.head_sha = head_sha
        #: every recorded comment is the bot's (the comment tool updates only its own, on this PR)
        self.bot_login = bot_login
        self.issue_comments: list[dict[str, Any]] = []
        self.review_comments: list[dict[str, Any]] = []
        self.reviews: list[dict[str, Any]] = []
        self._next_id = 1

    def _new(self, **fields: Any) -> dict[str, Any]:
        item = {"id": self._next_id, "html_url": f"local://comment/{self._next_id}", **fields}
        self._next_id += 1
        return item

    def rest(self) -> RecordingRest:
        return RecordingRest(self)


def _not_found(suffix: str) -> GitHubApiError:
    return GitHubApiError(f"Not Found - local review has no {suffix}", 404)


class RecordingRest:
    """:class:`~kodiai.github.rest.RestApi` over a :class:`RecordingGitHub`."""

    def __init__(self, state: RecordingGitHub) -> None:
        self.state = state

    def _lists(self, suffix: str) -> list[dict[str, Any]] | None:
        n = self.state.pr_number
        return {
            f"/issues/{n}/comments": self.state.issue_comments,
            f"/pulls/{n}/comments": self.state.review_comments,
            f"/pulls/{n}/reviews": self.state.reviews,
        }.get(suffix)

    async def get(self, suffix: str, **params: Any) -> Any:
        if suffix == f"/pulls/{self.state.pr_number}":
            return {"number": self.state.pr_number, "head": {"sha": self.state.head_sha}}
        if suffix == "/actions/runs":
            return {"total_count": 0, "workflow_runs": []}
        comment = re.fullmatch(r"/issues/comments/(\d+)", suffix)
        if comment:
            found = next((c for c in self.state.issue_comments if c["id"] == int(comment.group(1))), None)
            if found is None:
                raise _not_found(suffix)
            return {
                **found,
                "issue_url": f"local://issues/{self.state.pr_number}",
                "user": {"login": self.state.bot_login, "type": "Bot"},
            }
        items = self._lists(suffix)
        if items is None:
            raise _not_found(suffix)
        per_page, page = int(params.get("per_page", 30)), int(params.get("page", 1))
        return items[(page - 1) * per_page : page * per_page]

    async def paginate(
        self, suffix: str, *, max_items: int = 2000, per_page: int = 100, **params: Any
    ) -> list[dict[str, Any]]:
        items = self._lists(suffix)
        if items is None:
            raise _not_found(suffix)
        return list(items[:max_items])

    async def post(
        self, suffix: str, body: dict[str, Any], on_success: Callable[[], None] | None = None
    ) -> Any:
        n = self.state.pr_number
        reply = re.fullmatch(rf"/pulls/{n}/comments/(\d+)/replies", suffix)
        if suffix == f"/issues/{n}/comments":
            item = self.state._new(body=body["body"])
            self.state.issue_comments.append(item)
        elif suffix == f"/pulls/{n}/reviews":
            item = self.state._new(
                body=body.get("body", ""), state="APPROVED" if body.get("event") == "APPROVE" else "COMMENTED"
            )
            self.state.reviews.append(item)
        elif suffix == f"/pulls/{n}/comments":
            item = self.state._new(**body)
            self.state.review_comments.append(item)
        elif reply:
            item = self.state._new(body=body["body"], in_reply_to_id=int(reply.group(1)))
            self.state.review_comments.append(item)
        else:
            raise _not_found(suffix)
        if on_success is not None:
            on_success()
        return item

    async def patch(
        self, suffix: str, body: dict[str, Any], on_success: Callable[[], None] | None = None
    ) -> Any:
        match = re.fullmatch(r"/issues/comments/(\d+)", suffix)
        target = next(
            (c for c in self.state.issue_comments if match and c["id"] == int(match.group(1))), None
        )
        if target is None:
            raise _not_found(suffix)
        target["body"] = body["body"]
        if on_success is not None:
            on_success()
        return target
