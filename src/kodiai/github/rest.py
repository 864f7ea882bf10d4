"""A thin façade over PyGithub's requester for the endpoints the MCP tools and the handlers use.

PyGithub is synchronous; every request runs in a worker thread so the agent's event loop keeps
serving the CLI while GitHub answers. Failures are re-raised as :class:`GitHubApiError`, whose
``str()`` follows Octokit's shape (``<message>[: <errors>] - <documentation_url>``) because the
inline tool's hints and error classification (behaviour E3.22, E4) read that text.

Every POST/PATCH/PUT body is scanned for secrets in :meth:`GitHubRest.call` before it is sent.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import anyio.to_thread
from github.Requester import Requester

from github import Github, GithubException
from kodiai.outbound import guard_body

#: Builds a fresh authenticated installation client; the tools call it once per tool call.
GitHubClientFactory = Callable[[], Github]


class RestApi(Protocol):
    """What the tools need from GitHub: repository-relative JSON calls (``suffix`` = ``/pulls/7``...)."""

    async def get(self, suffix: str, **params: Any) -> Any: ...

    async def post(
        self, suffix: str, body: dict[str, Any], on_success: Callable[[], None] | None = None
    ) -> Any: ...

    async def patch(
        self, suffix: str, body: dict[str, Any], on_success: Callable[[], None] | None = None
    ) -> Any: ...

    async def paginate(
        self, suffix: str, *, max_items: int = 2000, per_page: int = 100, **params: Any
    ) -> list[dict[str, Any]]: ...


class GitHubApiError(Exception):
    """A GitHub REST failure: HTTP status, response headers and an Octokit-style message."""

    def __init__(self, message: str, status: int, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.headers = {k.lower(): v for k, v in (headers or {}).items()}


def octokit_message(status: int, data: Any) -> str:
    """``<GitHub message>[: <errors JSON list>] - <documentation_url>``, as Octokit formats it."""
    if not isinstance(data, dict):
        return f"HTTP {status}" if data in (None, "") else str(data)
    message = str(data.get("message") or f"HTTP {status}")
    errors = data.get("errors")
    if isinstance(errors, list) and errors:
        message += ": " + ", ".join(json.dumps(e, separators=(",", ":")) for e in errors)
    doc = data.get("documentation_url")
    if doc:
        message += f" - {doc}"
    return message


class GitHubRest:
    """Async JSON calls against one repository's REST API through a PyGithub client."""

    def __init__(self, client: Github, owner: str, repo: str) -> None:
        self._client = client
        self.owner = owner
        self.repo = repo

    def _write_requester(self) -> Requester:
        """The client's requester without transport-level retries or write throttling.

        A client's urllib3 retry (PyGithub's, or the platform's ``GitHubRetry``) re-sends a POST after a
        5xx even though GitHub may already have created the comment; writes are retried by
        :class:`~kodiai.execution.pacing.WritePacer` instead, which probes before re-posting.
        """
        kwargs = dict(self._client.requester.kwargs)
        kwargs.update(retry=None, seconds_between_writes=None)
        return Requester(**kwargs)

    def repo_path(self, suffix: str) -> str:
        return f"/repos/{self.owner}/{self.repo}{suffix}"

    def call(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
        on_success: Callable[[], None] | None = None,
    ) -> Any:
        """Send one request (blocking); return the decoded JSON or raise :class:`GitHubApiError`.

        ``on_success`` runs as soon as GitHub accepted the request, so a write that completes while the
        run is being cancelled (a timeout) is still reported as published.

        Every write's body passes the secret scanner first (:func:`kodiai.outbound.guard_body`): this is
        the one door all of the server's comments, reviews, replies and PRs go out through.
        """
        requester = self._client.requester if method == "GET" else self._write_requester()
        body = guard_body(method, path, body)
        try:
            _headers, data = requester.requestJsonAndCheck(method, path, parameters=params, input=body)
        except GithubException as exc:
            raise GitHubApiError(
                octokit_message(exc.status, exc.data), exc.status, exc.headers or {}
            ) from None
        if on_success is not None:
            on_success()
        return data

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
        on_success: Callable[[], None] | None = None,
    ) -> Any:
        """:meth:`call` in a worker thread, so the event loop keeps serving while GitHub answers."""
        return await anyio.to_thread.run_sync(
            lambda: self.call(method, path, params=params, body=body, on_success=on_success)
        )

    async def delete(self, suffix: str) -> Any:
        return await self.request("DELETE", self.repo_path(suffix))

    async def get(self, suffix: str, **params: Any) -> Any:
        return await self.request("GET", self.repo_path(suffix), params=params or None)

    async def post(
        self, suffix: str, body: dict[str, Any], on_success: Callable[[], None] | None = None
    ) -> Any:
        return await self.request("POST", self.repo_path(suffix), body=body, on_success=on_success)

    async def patch(
        self, suffix: str, body: dict[str, Any], on_success: Callable[[], None] | None = None
    ) -> Any:
        return await self.request("PATCH", self.repo_path(suffix), body=body, on_success=on_success)

    async def paginate(
        self, suffix: str, *, max_items: int = 2000, per_page: int = 100, **params: Any
    ) -> list[dict[str, Any]]:
        """Collect pages of a list endpoint until a short page or ``max_items`` items."""
        items: list[dict[str, Any]] = []
        page = 1
        while len(items) < max_items:
            batch = await self.get(suffix, per_page=per_page, page=page, **params)
            if not isinstance(batch, list):
                break
            items.extend(batch)
            if len(batch) < per_page:
                break
            page += 1
        return items[:max_items]
