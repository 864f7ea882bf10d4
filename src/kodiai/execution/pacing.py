"""Pacing and retry of GitHub writes, without duplicates (secondary rate limits).

GitHub asks integrations to space content-creating requests (at least one second apart) and to honour
``Retry-After`` / ``X-RateLimit-Reset`` when a 403 or 429 says a rate limit was hit. A 5xx on a write is
ambiguous: the comment may exist already. Before every retry the caller's ``find_existing`` probe looks
for the write's result (the same body, or the review marker), and a hit is returned instead of posting
again — so a retry never duplicates a comment.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import anyio

from kodiai.github.rest import GitHubApiError
from kodiai.log import get_logger

T = TypeVar("T")

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class PacingPolicy:
    """Knobs of :class:`WritePacer` (seconds)."""

    min_write_interval: float = 1.0
    max_attempts: int = 4
    max_wait: float = 120.0
    secondary_default_wait: float = 60.0
    server_error_backoff: float = 2.0


def advised_wait(error: GitHubApiError, policy: PacingPolicy, now_epoch: float, attempt: int) -> float | None:
    """Seconds to wait before retrying ``error``, or ``None`` when it must not be retried.

    ``Retry-After`` wins; then a primary-limit reset (``X-RateLimit-Remaining: 0`` + ``X-RateLimit-Reset``);
    then GitHub's advice of one minute for a secondary limit; 5xx get an exponential backoff.
    """
    headers = error.headers
    if error.status in (403, 429):
        retry_after = headers.get("retry-after")
        if retry_after is not None:
            try:
                return max(0.0, float(retry_after))
            except ValueError:
                return policy.secondary_default_wait
        if headers.get("x-ratelimit-remaining") == "0" and headers.get("x-ratelimit-reset"):
            try:
                return max(0.0, float(headers["x-ratelimit-reset"]) - now_epoch)
            except ValueError:
                return policy.secondary_default_wait
        if error.status == 429 or "rate limit" in str(error).lower():
            return policy.secondary_default_wait
        return None
    if error.status >= 500:
        return policy.server_error_backoff * (2.0 ** (attempt - 1))
    return None


class WritePacer:
    """Serialises a run's GitHub writes, spaces them, and retries rate-limited ones once safe."""

    def __init__(
        self,
        policy: PacingPolicy | None = None,
        *,
        sleep: Sleep = anyio.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.policy = policy or PacingPolicy()
        self._sleep = sleep
        self._monotonic = monotonic
        self._wall_clock = wall_clock
        self._lock = anyio.Lock()
        self._last_write: float | None = None
        self._log = get_logger("kodiai.execution.pacing")

    async def _space(self) -> None:
        if self._last_write is None:
            return
        remaining = self._last_write + self.policy.min_write_interval - self._monotonic()
        if remaining > 0:
            await self._sleep(remaining)

    async def write(
        self,
        do_write: Callable[[], Awaitable[T]],
        find_existing: Callable[[], Awaitable[T | None]] | None = None,
    ) -> T:
        """Run ``do_write``; on a retryable failure wait as advised, then probe before writing again.

        A failing probe (itself rate-limited) counts as an attempt and is retried the same way, so a
        write is only ever repeated after a probe has confirmed it is not there.
        """
        async with self._lock:
            attempt = 0
            probe_first = False
            while True:
                attempt += 1
                await self._space()
                try:
                    if probe_first and find_existing is not None:
                        existing = await find_existing()
                        if existing is not None:
                            self._log.info("GitHub write already applied; not re-posting")
                            return existing
                    return await do_write()
                except GitHubApiError as error:
                    wait = advised_wait(error, self.policy, self._wall_clock(), attempt)
                    if wait is None or attempt >= self.policy.max_attempts or wait > self.policy.max_wait:
                        raise
                    self._log.warning(
                        "GitHub write rate-limited or failed; retrying",
                        status=error.status,
                        wait_seconds=wait,
                        attempt=attempt,
                    )
                    await self._sleep(wait)
                    probe_first = True
                finally:
                    self._last_write = self._monotonic()
