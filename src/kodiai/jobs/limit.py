"""A global cap on how many jobs of one kind run at once, on top of the per-installation lanes.

Lanes keep one job per installation; with many installations active at once, reviews (each a Claude
Code process, a clone and an embedder) would all run together. The cap makes the rest wait their turn,
and the waiting and running counts are exported as gauges.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from prometheus_client import Gauge


def default_review_concurrency() -> int:
    """Two reviews per CPU (they mostly wait on the model), at least 2 and at most 16."""
    return max(2, min(16, 2 * (os.cpu_count() or 1)))


class ConcurrencyLimit:
    """``async with limit.slot(): ...`` runs at most ``limit`` bodies at once, first come first served."""

    def __init__(self, limit: int, *, waiting: Gauge | None = None, running: Gauge | None = None) -> None:
        if limit < 1:
            raise ValueError(f"concurrency limit must be at least 1, got {limit}")
        self.limit = limit
        self._semaphore = asyncio.Semaphore(limit)
        self._waiting = waiting
        self._running = running

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        if self._waiting is not None:
            self._waiting.inc()
        try:
            await self._semaphore.acquire()
        finally:
            if self._waiting is not None:
                self._waiting.dec()
        if self._running is not None:
            self._running.inc()
        try:
            yield
        finally:
            if self._running is not None:
                self._running.dec()
            self._semaphore.release()
