"""P4.1 job lanes: per-installation FIFO with concurrency 1, parallel lanes, pruning, shedding, timeouts."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
import structlog

from kodiai.jobs.lanes import JobContext, JobQueue, JobTimeoutError, LaneFullError
from kodiai.metrics import Metrics


async def until(predicate: Callable[[], bool], steps: int = 1000) -> None:
    """Yield to the loop until ``predicate`` holds (lane state changes on the next loop turns)."""
    for _ in range(steps):
        if predicate():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition not reached")


async def test_4_1_one_job_at_a_time_per_installation_in_fifo_order() -> None:
    """P4.1: an installation's jobs run strictly one after another, in enqueue order."""
    queue = JobQueue()
    running = 0
    peak = 0
    order: list[int] = []

    def job(i: int):  # type: ignore[no-untyped-def]
        async def run() -> int:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0)
            order.append(i)
            running -= 1
            return i * 10

        return run

    results = await asyncio.gather(*(queue.enqueue(1, job(i)) for i in range(5)))
    assert results == [0, 10, 20, 30, 40]
    assert order == [0, 1, 2, 3, 4]
    assert peak == 1


async def test_4_1_installations_run_in_parallel() -> None:
    """P4.1: different installations run at the same time (no global cap)."""
    queue = JobQueue()
    barrier = asyncio.Barrier(3)

    async def meet() -> str:
        async with asyncio.timeout(2):
            await barrier.wait()
        return "met"

    assert await asyncio.gather(*(queue.enqueue(i, meet) for i in (1, 2, 3))) == ["met"] * 3


async def test_4_1_sizes_and_idle_lane_pruned() -> None:
    """P4.1: queue_size = waiting, pending_count = running; the lane is deleted once idle."""
    queue = JobQueue()
    gate = asyncio.Event()

    async def blocked() -> None:
        await gate.wait()

    tasks = [asyncio.create_task(queue.enqueue(7, blocked)) for _ in range(3)]
    await until(lambda: queue.pending_count(7) == 1)
    assert queue.pending_count(7) == 1 and queue.queue_size(7) == 2
    assert queue.queue_size(99) == 0 and queue.pending_count(99) == 0
    gate.set()
    await asyncio.gather(*tasks)
    await until(lambda: queue.lane_ids() == [])


async def test_4_1_error_is_rethrown_and_the_lane_continues() -> None:
    """P4.1: a failing job re-raises to its caller; the next job still runs."""
    queue = JobQueue()

    async def bad() -> None:
        raise ValueError("nope")

    async def good() -> str:
        return "ok"

    first = asyncio.create_task(queue.enqueue(1, bad))
    second = asyncio.create_task(queue.enqueue(1, good))
    with pytest.raises(ValueError, match="nope"):
        await first
    assert await second == "ok"


async def test_job_timeout_cancels_the_job() -> None:
    """Per-job timeout: the job is cancelled and the caller gets JobTimeoutError; the lane moves on."""
    queue = JobQueue(job_timeout=0.05)
    cancelled = asyncio.Event()

    async def hang() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def quick() -> int:
        return 1

    with pytest.raises(JobTimeoutError, match="exceeded the job timeout"):
        await queue.enqueue(1, hang)
    assert cancelled.is_set()
    assert await queue.enqueue(1, quick) == 1


async def test_lane_length_bound_sheds_with_a_clear_log() -> None:
    """Bounded lane: beyond max_lane_length waiting jobs, new ones are refused and logged."""
    metrics = Metrics()
    queue = JobQueue(max_lane_length=2, metrics=metrics)
    gate = asyncio.Event()

    async def blocked() -> None:
        await gate.wait()

    tasks = [asyncio.create_task(queue.enqueue(5, blocked))]
    await until(lambda: queue.pending_count(5) == 1)
    tasks += [asyncio.create_task(queue.enqueue(5, blocked)) for _ in range(2)]  # 1 running + 2 waiting
    await until(lambda: queue.queue_size(5) == 2)
    with (
        structlog.testing.capture_logs() as logs,
        pytest.raises(LaneFullError, match="already has 2 waiting jobs"),
    ):
        await queue.enqueue(5, blocked, JobContext(delivery_id="d-shed", job_type="mention"))
    shed = [e for e in logs if e["event"] == "Job shed: installation lane is full"]
    assert shed and shed[0]["deliveryId"] == "d-shed" and shed[0]["maxLaneLength"] == 2
    assert metrics.jobs_shed._value.get() == 1
    gate.set()
    await asyncio.gather(*tasks)


async def test_4_1_log_messages_kept() -> None:
    """P1.3: the runbook strings for the queue are emitted with their fields."""
    queue = JobQueue()

    async def ok() -> None:
        return None

    async def bad() -> None:
        raise RuntimeError("x")

    with structlog.testing.capture_logs() as logs:
        await queue.enqueue(3, ok, JobContext(delivery_id="d1", job_type="pull-request-review", pr_number=4))
        with pytest.raises(RuntimeError):
            await queue.enqueue(3, bad)
    events = [e["event"] for e in logs]
    assert events.count("Enqueuing job for installation") == 2
    assert "Job execution started" in events and "Job execution completed" in events
    assert "Job execution failed" in events
    enq = next(e for e in logs if e["event"] == "Enqueuing job for installation")
    assert enq["queueSize"] == 1 and enq["pendingCount"] == 0 and enq["jobType"] == "pull-request-review"
    assert enq["prNumber"] == 4
    started = next(e for e in logs if e["event"] == "Job execution started")
    assert "waitMs" in started


async def test_cancel_all_stops_running_and_waiting_jobs() -> None:
    """Shutdown past the grace period: lane workers are cancelled; callers see CancelledError."""
    queue = JobQueue()
    started = asyncio.Event()

    async def hang() -> None:
        started.set()
        await asyncio.Event().wait()

    running = asyncio.create_task(queue.enqueue(1, hang))
    waiting = asyncio.create_task(queue.enqueue(1, hang))
    await started.wait()
    assert await queue.cancel_all() == 1
    with pytest.raises(asyncio.CancelledError):
        await running
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert queue.lane_ids() == []
