"""Payload builders and an in-memory GitHub REST fake for the mention building blocks.

GitHub is an outside service: the fake answers ``get``/``post`` per repository-relative suffix and
records every call with its parameters, so tests can assert what was asked, not only what came back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kodiai.github.rest import GitHubApiError

OWNER, REPO = "acme", "repo"


def repository() -> dict[str, Any]:
    return {"name": REPO, "full_name": f"{OWNER}/{REPO}", "owner": {"login": OWNER}, "default_branch": "main"}


def pull(number: int = 101, *, head_repo: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "number": number,
        "title": "Add feature",
        "body": "PR body",
        "user": {"login": "author"},
        "head": {
            "ref": "feature",
            "sha": "h" * 40,
            "repo": head_repo if head_repo is not None else repository(),
        },
        "base": {"ref": "main", "sha": "b" * 40, "repo": repository()},
        "updated_at": "2025-01-02T00:00:00Z",
        **extra,
    }


def issue_comment_payload(
    body: str | None, *, on_pr: bool = False, author: str = "alice", **comment: Any
) -> dict[str, Any]:
    issue: dict[str, Any] = {"number": 7, "title": "Bug", "user": {"login": "reporter"}}
    if on_pr:
        issue["pull_request"] = {"url": "https://api.github.com/repos/acme/repo/pulls/7"}
    return {
        "action": "created",
        "installation": {"id": 42},
        "repository": repository(),
        "issue": issue,
        "comment": {
            "id": 555,
            "body": body,
            "user": {"login": author},
            "created_at": "2025-01-01T10:00:00Z",
            **comment,
        },
    }


def review_comment_payload(body: str, *, author: str = "alice", **comment: Any) -> dict[str, Any]:
    return {
        "action": "created",
        "installation": {"id": 42},
        "repository": repository(),
        "pull_request": pull(),
        "comment": {
            "id": 900,
            "body": body,
            "user": {"login": author},
            "created_at": "2025-01-01T10:00:00Z",
            "path": "src/app.ts",
            "line": 42,
            "original_line": 40,
            "diff_hunk": "@@ -1,2 +1,2 @@\n-old\n+new",
            **comment,
        },
    }


def review_payload(body: str | None, *, author: str = "alice", **review: Any) -> dict[str, Any]:
    return {
        "action": "submitted",
        "installation": {"id": 42},
        "repository": repository(),
        "pull_request": pull(),
        "review": {
            "id": 777,
            "body": body,
            "state": "commented",
            "user": {"login": author},
            "submitted_at": "2025-01-01T11:00:00Z",
            **review,
        },
    }


Handler = Callable[[dict[str, Any]], Any]


class FakeRest:
    """``RestApi`` over canned answers: a value, a callable of the params, or an exception to raise."""

    def __init__(self, answers: dict[str, Any] | None = None) -> None:
        self.answers: dict[str, Any] = dict(answers or {})
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.posted: list[tuple[str, dict[str, Any]]] = []
        self.post_failures: dict[str, Exception] = {}

    def gets(self, suffix: str) -> list[dict[str, Any]]:
        return [params for method, s, params in self.calls if method == "GET" and s == suffix]

    async def get(self, suffix: str, **params: Any) -> Any:
        self.calls.append(("GET", suffix, params))
        if suffix not in self.answers:
            raise GitHubApiError(f"Not Found - {suffix}", 404)
        answer = self.answers[suffix]
        if isinstance(answer, Exception):
            raise answer
        return answer(params) if callable(answer) else answer

    async def paginate(
        self, suffix: str, *, max_items: int = 2000, per_page: int = 100, **params: Any
    ) -> list[dict[str, Any]]:
        raise AssertionError("the mention context pages by hand")

    async def post(
        self, suffix: str, body: dict[str, Any], on_success: Callable[[], None] | None = None
    ) -> Any:
        self.calls.append(("POST", suffix, body))
        if suffix in self.post_failures:
            raise self.post_failures[suffix]
        self.posted.append((suffix, body))
        return {"id": len(self.posted), "body": body["body"]}

    async def patch(
        self, suffix: str, body: dict[str, Any], on_success: Callable[[], None] | None = None
    ) -> Any:
        raise AssertionError("mention replies never edit")


def paged(items: list[dict[str, Any]]) -> Callable[[dict[str, Any]], list[dict[str, Any]]]:
    """A list endpoint answering ``page``/``per_page`` slices in the given order."""

    def answer(params: dict[str, Any]) -> list[dict[str, Any]]:
        per_page, page = int(params.get("per_page", 30)), int(params.get("page", 1))
        return items[(page - 1) * per_page : page * per_page]

    return answer
