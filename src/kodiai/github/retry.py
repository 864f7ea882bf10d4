"""Retries for GitHub REST calls: 5xx with backoff, primary and secondary rate limits honoured.

PyGithub's :class:`~github.GithubRetry` already retries 5xx and a 403 that carries ``Retry-After`` or a
rate-limit message. It misses two cases GitHub documents: a **429** (only retried when it carries
``Retry-After``), and a primary limit signalled by ``X-RateLimit-Remaining: 0`` +
``X-RateLimit-Reset`` without the usual message. :class:`GitHubRetry` adds both, and caps every
wait at ``max_wait`` seconds (beyond it the error is raised instead of sleeping for an hour).

It also removes a duplicate-write hazard: ``GithubRetry`` re-sends a POST after a 5xx or a read error,
although GitHub may already have created the comment or review whose response was lost. Here a
non-idempotent request (POST, PATCH) is retried only on a rate-limit answer (403/429), where GitHub says it
did not process the request, and on connection errors (the request never reached GitHub).
"""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any

from github.GithubException import RateLimitExceededExceedsMaxWait
from urllib3 import Retry
from urllib3.connectionpool import ConnectionPool
from urllib3.response import BaseHTTPResponse

from github import GithubRetry

DEFAULT_TOTAL = 5
DEFAULT_BACKOFF = 0.5
DEFAULT_MAX_WAIT = 120.0
DEFAULT_SECONDARY_WAIT = 60.0
#: Requests that change state when repeated; never re-sent after a 5xx or a read error.
NON_IDEMPOTENT_METHODS = frozenset({"POST", "PATCH"})
#: Statuses with which GitHub refuses a request without processing it (rate limits).
RATE_LIMIT_STATUSES = frozenset({403, 429})


class GitHubRetry(GithubRetry):
    """``GithubRetry`` + 429 + header-only primary rate limits, every wait capped."""

    def __init__(
        self,
        *,
        total: int = DEFAULT_TOTAL,
        backoff_factor: float = DEFAULT_BACKOFF,
        max_wait: float = DEFAULT_MAX_WAIT,
        secondary_rate_wait: float = DEFAULT_SECONDARY_WAIT,
        **kwargs: Any,
    ) -> None:
        kwargs.pop("max_rate_limit_wait", None)  # passed back by GithubRetry.new; max_wait wins
        kwargs.setdefault("status_forcelist", [*range(500, 600), 429])
        # Idempotent methods only for read errors and 5xx; see is_retry for POST/PATCH on rate limits.
        kwargs.setdefault("allowed_methods", Retry.DEFAULT_ALLOWED_METHODS)
        kwargs.setdefault("raise_on_status", False)  # the last response reaches PyGithub → GithubException
        kwargs.setdefault("backoff_max", max_wait)
        kwargs.setdefault("respect_retry_after_header", True)
        kwargs.setdefault(
            "connect", 2
        )  # an unreachable host fails in about a second, not after the full budget
        super().__init__(
            secondary_rate_wait=secondary_rate_wait,
            max_rate_limit_wait=max_wait,
            total=total,
            backoff_factor=backoff_factor,
            **kwargs,
        )
        self.max_wait = max_wait

    def new(self, **kw: Any) -> GitHubRetry:
        kw.setdefault("max_wait", self.max_wait)
        retry: GitHubRetry = super().new(**kw)
        return retry

    def is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
        """Rate-limit answers are retried for every method; anything else only for idempotent ones."""
        if method.upper() in NON_IDEMPOTENT_METHODS:
            if status_code not in RATE_LIMIT_STATUSES:
                return False
            return bool(self.total) and (
                status_code in (self.status_forcelist or ()) or (has_retry_after and status_code == 429)
            )
        return super().is_retry(method, status_code, has_retry_after)

    def increment(  # type: ignore[override]
        self,
        method: str | None = None,
        url: str | None = None,
        response: BaseHTTPResponse | None = None,
        error: Exception | None = None,
        _pool: ConnectionPool | None = None,
        _stacktrace: TracebackType | None = None,
    ) -> Retry:
        if response is not None and response.status in (403, 429):
            headers = response.headers
            if "Retry-After" not in headers and headers.get("X-RateLimit-Remaining") == "0":
                return self._primary_limit(method, url, response, error, _pool, _stacktrace)
            if response.status == 429 and "Retry-After" not in headers:
                wait = min(self.secondary_rate_wait, self.max_wait)
                return self._with_backoff(wait, method, url, response, error, _pool, _stacktrace)
            if "Retry-After" in headers:
                wait = self.parse_retry_after(str(headers["Retry-After"]))
                if wait > self.max_wait:
                    raise RateLimitExceededExceedsMaxWait(response.status, None, dict(headers), wait=wait)
        return super().increment(method, url, response, error, _pool, _stacktrace)  # type: ignore[arg-type]

    def _primary_limit(
        self,
        method: str | None,
        url: str | None,
        response: BaseHTTPResponse,
        error: Exception | None,
        pool: ConnectionPool | None,
        stacktrace: TracebackType | None,
    ) -> Retry:
        reset = response.headers.get("X-RateLimit-Reset", "")
        wait = max(0.0, float(reset) - time.time()) + 1.0 if reset.isdigit() else self.secondary_rate_wait
        if wait > self.max_wait:
            raise RateLimitExceededExceedsMaxWait(response.status, None, dict(response.headers), wait=wait)
        return self._with_backoff(wait, method, url, response, error, pool, stacktrace)

    def _with_backoff(
        self,
        wait: float,
        method: str | None,
        url: str | None,
        response: BaseHTTPResponse,
        error: Exception | None,
        pool: ConnectionPool | None,
        stacktrace: TracebackType | None,
    ) -> Retry:
        retry = Retry.increment(self, method, url, response, error, pool, stacktrace)
        backoff = max(wait, Retry.get_backoff_time(retry))
        retry.get_backoff_time = lambda: backoff  # type: ignore[method-assign]
        return retry
