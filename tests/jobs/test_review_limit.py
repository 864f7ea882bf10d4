"""The global review cap (``kodiai.jobs.limit``): at most N bodies at once, the rest wait in order, and
the waiting/running gauges say so."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry, Gauge

from kodiai.jobs.limit import ConcurrencyLimit, default_review_concurrency


def gauges() -> tuple[Gauge, Gauge]:
    registry = CollectorRegistry()
    return Gauge("waiting", "w", registry=registry), Gauge("running", "r", registry=registry)


async def test_at_most_limit_run_and_the_rest_wait_in_arrival_order() -> None:
    waiting, running = gauges()
    limit = ConcurrencyLimit(2, waiting=waiting, running=running)
    release = asyncio.Event()
    started: list[int] = []
    peak = 0

    async def job(i: int) -> None:
        nonlocal peak
        async with limit.slot():
            started.append(i)
            peak = max(peak, int(running._value.get()))
            await release.wait()

    tasks = [asyncio.create_task(job(i)) for i in range(5)]
    while len(started) < 2:
        await asyncio.sleep(0)
    await asyncio.sleep(0.01)
    assert started == [0, 1]
    assert running._value.get() == 2 and waiting._value.get() == 3
    release.set()
    await asyncio.gather(*tasks)
    assert started == [0, 1, 2, 3, 4] and peak == 2
    assert running._value.get() == 0 and waiting._value.get() == 0


async def test_a_failing_body_frees_its_slot() -> None:
    limit = ConcurrencyLimit(1)

    async def boom() -> None:
        async with limit.slot():
            raise RuntimeError("x")

    with pytest.raises(RuntimeError):
        await boom()
    async with asyncio.timeout(1):
        async with limit.slot():
            pass


def test_default_and_bounds() -> None:
    assert 2 <= default_review_concurrency() <= 16
    with pytest.raises(ValueError):
        ConcurrencyLimit(0)
