"""Per-installation job lanes: one job at a time per installation, installations in parallel.

The original's queue (behaviour P4.1) plus three production guards: a per-job timeout, a bound
on how many jobs may wait in one lane (beyond it new jobs are shed with a clear log), and idle lanes
pruned as soon as they have nothing waiting or running. The log messages are the original's, which
operators' runbooks grep for.

Each job runs in the context (log bindings included) of the code that enqueued it, not in the lane
worker's: a worker is started by the first job of a burst, so every queued job would otherwise log that
first job's ``delivery_id``. Before a job of a delivery starts, ``on_job_start`` is awaited with its
delivery id: the dispatcher counts the journal's attempt there, when work really starts.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from prometheus_client import Gauge, Histogram
from pydantic import BaseModel

from kodiai.log import CachedLogger
from kodiai.metrics import Metrics

T = TypeVar("T")
JobStartHook = Callable[[str], Awaitable[None]]

#: The delivery a dispatch is running for (set by the dispatcher): the delivery of a job whose context
#: does not name one.
CURRENT_DELIVERY: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "kodiai_current_delivery", default=None
)


class JobContext(BaseModel):
    """What a job is about, for logs and metrics (the original's enqueue context)."""

    delivery_id: str | None = None
    event_name: str | None = None
    action: str | None = None
    job_type: str | None = None
    pr_number: int | None = None

    def log_fields(self) -> dict[str, Any]:
        fields = {
            "deliveryId": self.delivery_id,
            "eventName": self.event_name,
            "action": self.action,
            "jobType": self.job_type,
            "prNumber": self.pr_number,
        }
        return {k: v for k, v in fields.items() if v is not None}


class LaneFullError(RuntimeError):
    """The installation's lane already holds ``max_lane_length`` waiting jobs; this one was shed."""


class JobTimeoutError(TimeoutError):
    """The job ran longer than the per-job timeout and was cancelled."""


@dataclass
class _Job:
    job_id: str
    fn: Callable[[], Awaitable[Any]]
    context: JobContext
    future: asyncio.Future[Any]
    enqueued_at: float
    delivery_id: str | None = None
    context_vars: contextvars.Context | None = None


@dataclass
class _Lane:
    waiting: deque[_Job] = field(default_factory=deque)
    running: int = 0
    worker: asyncio.Task[None] | None = None


class JobQueue:
    """Installation-keyed FIFO lanes with concurrency 1 each. Events without an installation use lane 0."""

    def __init__(
        self,
        *,
        job_timeout: float | None = 3600.0,
        max_lane_length: int = 100,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_job_start: JobStartHook | None = None,
    ) -> None:
        self.on_job_start = on_job_start
        self._lanes: dict[int, _Lane] = {}
        self._timeout = job_timeout if job_timeout and job_timeout > 0 else None
        self._max = max_lane_length
        self._metrics = metrics
        self._clock = clock
        self._ids = itertools.count(1)
        self._depth_gauges: dict[int, Gauge] = {}  # installation → its queue-depth child (labels() is costly)
        self._durations: dict[tuple[str, str], Histogram] = {}
        self._log = CachedLogger("kodiai.jobs")

    # ------------------------------------------------------------------ introspection
    def queue_size(self, installation_id: int) -> int:
        lane = self._lanes.get(installation_id)
        return len(lane.waiting) if lane else 0

    def pending_count(self, installation_id: int) -> int:
        lane = self._lanes.get(installation_id)
        return lane.running if lane else 0

    def lane_ids(self) -> list[int]:
        return list(self._lanes)

    def busy(self) -> bool:
        return any(lane.waiting or lane.running for lane in self._lanes.values())

    async def cancel_all(self) -> int:
        """Shutdown: cancel every lane worker (running jobs included); returns how many lanes were cut."""
        workers = [lane.worker for lane in self._lanes.values() if lane.worker is not None]
        for lane in self._lanes.values():
            for job in lane.waiting:
                job.future.cancel()
            lane.waiting.clear()
        for worker in workers:
            worker.cancel()
        if workers:
            await asyncio.gather(*workers, return_exceptions=True)
        return len(workers)

    # ------------------------------------------------------------------ enqueue
    async def enqueue(
        self, installation_id: int, fn: Callable[[], Awaitable[T]], context: JobContext | None = None
    ) -> T:
        """Run ``fn`` in the installation's lane and return its result (its exception is re-raised)."""
        ctx = context or JobContext()
        lane = self._lanes.get(installation_id)
        if lane is None:
            lane = self._lanes[installation_id] = _Lane()
        if len(lane.waiting) >= self._max:
            self._log.warning(
                "Job shed: installation lane is full",
                installationId=installation_id,
                maxLaneLength=self._max,
                queueSize=len(lane.waiting),
                **ctx.log_fields(),
            )
            if self._metrics:
                self._metrics.jobs_shed.inc()
            raise LaneFullError(
                f"Job shed: lane for installation {installation_id} already has {self._max} waiting jobs"
            )
        job = _Job(
            job_id=f"{installation_id}-{next(self._ids)}",
            fn=fn,
            context=ctx,
            future=asyncio.get_running_loop().create_future(),
            enqueued_at=self._clock(),
            delivery_id=ctx.delivery_id or CURRENT_DELIVERY.get(),
            context_vars=contextvars.copy_context(),
        )
        lane.waiting.append(job)
        self._set_depth(installation_id, lane)
        self._log.info(
            "Enqueuing job for installation",
            installationId=installation_id,
            jobId=job.job_id,
            queueSize=len(lane.waiting),
            pendingCount=lane.running,
            **ctx.log_fields(),
        )
        if lane.worker is None:  # in a fresh context: the worker outlives this caller's bindings
            lane.worker = asyncio.create_task(
                self._work(installation_id, lane), context=contextvars.Context()
            )
        result: T = await job.future
        return result

    # ------------------------------------------------------------------ worker
    async def _work(self, installation_id: int, lane: _Lane) -> None:
        try:
            while lane.waiting:
                job = lane.waiting.popleft()
                if job.future.cancelled():  # the caller gave up while it waited
                    self._set_depth(installation_id, lane)
                    continue
                lane.running = 1
                self._set_depth(installation_id, lane)
                await asyncio.create_task(self._run(installation_id, lane, job), context=job.context_vars)
                lane.running = 0
        finally:
            lane.running = 0
            lane.worker = None
            if not lane.waiting and self._lanes.get(installation_id) is lane:
                del self._lanes[installation_id]
                if self._metrics and self._depth_gauges.pop(installation_id, None) is not None:
                    self._metrics.queue_depth.remove(str(installation_id))
                self._log.debug("Pruned idle job queue for installation", installationId=installation_id)

    async def _run(self, installation_id: int, lane: _Lane, job: _Job) -> None:
        started = self._clock()
        fields = {"installationId": installation_id, "jobId": job.job_id, **job.context.log_fields()}
        self._log.info(
            "Job execution started",
            waitMs=round((started - job.enqueued_at) * 1000),
            queueSize=len(lane.waiting),
            pendingCount=lane.running,
            **fields,
        )
        if self._metrics:
            self._metrics.jobs_running.inc()
        outcome = "ok"
        try:
            await self._starting(job)
            async with asyncio.timeout(self._timeout):
                result = await job.fn()
        except TimeoutError:
            outcome = "timeout"
            error: BaseException = JobTimeoutError(
                f"Job {job.job_id} exceeded the job timeout of {self._timeout:g} s and was cancelled"
            )
            self._fail(job, error, started, fields)
        except asyncio.CancelledError:
            outcome = "cancelled"
            if not job.future.done():
                job.future.cancel()
            raise
        except Exception as exc:
            outcome = "error"
            self._fail(job, exc, started, fields)
        else:
            self._log.info(
                "Job execution completed", durationMs=round((self._clock() - started) * 1000), **fields
            )
            if not job.future.done():
                job.future.set_result(result)
        finally:
            if self._metrics:
                self._metrics.jobs_running.dec()
                key = (job.context.job_type or "unknown", outcome)
                histogram = self._durations.get(key)
                if histogram is None:
                    histogram = self._durations[key] = self._metrics.job_duration.labels(*key)
                histogram.observe(self._clock() - started)

    async def _starting(self, job: _Job) -> None:
        """Tell ``on_job_start`` (the journal's attempt count); its failure never stops the job."""
        if self.on_job_start is None or job.delivery_id is None:
            return
        try:
            await self.on_job_start(job.delivery_id)
        except Exception as exc:
            self._log.warning(
                "Job start not recorded", deliveryId=job.delivery_id, err=f"{type(exc).__name__}: {exc}"
            )

    def _fail(self, job: _Job, exc: BaseException, started: float, fields: dict[str, Any]) -> None:
        self._log.error(
            "Job execution failed",
            err=f"{type(exc).__name__}: {exc}",
            durationMs=round((self._clock() - started) * 1000),
            **fields,
        )
        if not job.future.done():
            job.future.set_exception(exc)

    def _set_depth(self, installation_id: int, lane: _Lane) -> None:
        if self._metrics:
            gauge = self._depth_gauges.get(installation_id)
            if gauge is None:
                gauge = self._depth_gauges[installation_id] = self._metrics.queue_depth.labels(
                    str(installation_id)
                )
            gauge.set(len(lane.waiting))
