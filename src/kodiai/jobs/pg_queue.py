"""The queue on PostgreSQL: the worker that runs journalled deliveries (procrastinate's schema is
:mod:`kodiai.jobs.pg_schema`).

Intake (:mod:`kodiai.jobs.pg_journal`) defers one ``kodiai.run_delivery`` job per delivery with work, locked
on its installation. A worker (:class:`PgWorker`, a procrastinate ``App`` on ``DATABASE_URL``) runs up to
``WORKER_CONCURRENCY`` of them at once, never two of one installation, in delivery order. The task loads
the delivery, counts the attempt, runs the handlers not yet done (the same dispatch as the in-process
dispatcher: :func:`kodiai.jobs.dispatcher.dispatch_and_settle`) and records the outcome.

A worker that dies stops sending heartbeats; a periodic task (procrastinate defers each period's run once,
whichever worker takes it) finds its jobs and puts them back in line, or moves a delivery whose job was
running ``MAX_ATTEMPTS`` times when its worker died to ``dead``. A graceful stop (SIGTERM) waits
``SHUTDOWN_GRACE_SECONDS`` for running jobs, then cancels them: their attempt is given back and the job is
back in ``todo`` for another worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from procrastinate import App, PsycopgConnector
from procrastinate.exceptions import JobAborted
from procrastinate.jobs import Job, Status
from procrastinate.retry import BaseRetryStrategy, RetryDecision
from structlog.contextvars import bind_contextvars, reset_contextvars

from kodiai.jobs.dispatcher import MAX_ATTEMPTS, dispatch_and_settle, log_dead_letter
from kodiai.jobs.journal import JournalStatus
from kodiai.jobs.lanes import CURRENT_DELIVERY
from kodiai.jobs.pg_journal import QUEUE, TASK, PgJobJournal, StalledJob
from kodiai.log import CachedLogger, get_logger
from kodiai.metrics import Metrics
from kodiai.webhook.events import WebhookEvent
from kodiai.webhook.router import EventRouter

MAINTENANCE_QUEUE = "kodiai-maintenance"
STALLED_TASK = "kodiai.retry_stalled"
COMPACTION_TASK = "kodiai.compact_memory"
COMPACTION_MODULE = "kodiai.learning.memory_compaction"
INFRA_RETRIES = 10  # a job whose own journal writes fail (PostgreSQL away) is tried again this often
class _ToStructlog(logging.Handler):
    """procrastinate logs through the standard library; its warnings and errors (a failed side task, a job
    that raised) go to Kodiai's log as JSON lines like every other, not as bare text on stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        log = get_logger(record.name)
        fields: dict[str, Any] = {"action": getattr(record, "action", None)}
        if record.exc_info and record.exc_info[1] is not None:
            fields["err"] = f"{type(record.exc_info[1]).__name__}: {record.exc_info[1]}"
        (log.error if record.levelno >= logging.ERROR else log.warning)(record.getMessage()[:500], **fields)


def bridge_procrastinate_logs() -> None:
    logger = logging.getLogger("procrastinate")
    if not any(isinstance(h, _ToStructlog) for h in logger.handlers):
        handler = _ToStructlog(logging.WARNING)
        logger.addHandler(handler)
        logger.propagate = False


class _Retry(BaseRetryStrategy):
    """A job cut by a graceful stop goes back to ``todo`` at once (another worker takes it); a job whose
    journal writes failed is tried again with a growing pause. Handler failures never get here: the task
    records them as the delivery's ``failed`` status and ends normally."""

    def get_retry_decision(self, *, exception: BaseException, job: Job) -> RetryDecision | None:
        if isinstance(exception, asyncio.CancelledError | JobAborted):
            return RetryDecision(retry_in={"seconds": 0})
        if isinstance(exception, Exception) and job.attempts < INFRA_RETRIES:
            return RetryDecision(retry_in={"seconds": min(60, 2 * (job.attempts + 1))})
        return None


@dataclass
class WorkerOptions:
    """``WORKER_CONCURRENCY``, ``WORKER_HEARTBEAT_SECONDS`` (also the stalled check's period),
    ``WORKER_STALLED_SECONDS``, ``SHUTDOWN_GRACE_SECONDS`` and ``WORKER_POLL_SECONDS``."""

    concurrency: int = 4
    heartbeat_seconds: float = 10.0
    stalled_seconds: float = 30.0
    shutdown_grace_seconds: float = 30.0
    poll_seconds: float = 5.0
    max_attempts: int = MAX_ATTEMPTS


class _PgProgress:
    """The worker's journal writes: handler marks off the loop (awaited before the final status)."""

    def __init__(self, journal: PgJobJournal, clock: Callable[[], datetime]) -> None:
        self._journal = journal
        self._clock = clock
        self._marks: list[asyncio.Future[None]] = []

    def handler_done(self, delivery_id: str, handler: str) -> None:
        self._marks.append(
            asyncio.ensure_future(
                self._journal.off_loop(self._journal.mark_handler_done, delivery_id, handler)
            )
        )

    async def settle(self, delivery_id: str, status: JournalStatus, error: str | None) -> None:
        if self._marks:
            await asyncio.gather(*self._marks)
        await self._journal.off_loop(
            self._journal.finish, delivery_id, now=self._clock(), status=status, error=error
        )


def utcnow() -> datetime:
    return datetime.now(UTC)


class PgWorker:
    """A procrastinate worker for the deliveries queue, run inside ``kodiai serve`` (roles worker and all)."""

    def __init__(
        self,
        url: str,
        journal: PgJobJournal,
        router: EventRouter,
        *,
        options: WorkerOptions | None = None,
        metrics: Metrics | None = None,
        memory_store: object | None = None,
        governance: Callable[[], object] | None = None,
        clock: Callable[[], datetime] = utcnow,
        name: str = "kodiai-worker",
    ) -> None:
        self.journal = journal
        self.router = router
        self.options = options or WorkerOptions()
        self._metrics = metrics
        self._clock = clock
        self._name = name
        self._log = CachedLogger("kodiai.jobs.worker")
        self._tasks: list[asyncio.Task[None]] = []
        bridge_procrastinate_logs()
        self.app = App(
            connector=PsycopgConnector(conninfo=url, min_size=1, max_size=self.options.concurrency + 6),
            periodic_defaults={"max_delay": max(60.0, 3 * self.options.stalled_seconds)},
        )
        self.app.task(name=TASK, queue=QUEUE, retry=_Retry())(self._run_delivery)
        every = max(1, min(59, round(self.options.heartbeat_seconds)))
        self.app.periodic(cron=f"*/{every} * * * * *")(
            self.app.task(name=STALLED_TASK, queue=MAINTENANCE_QUEUE)(self._retry_stalled)
        )
        self.compaction = self._register_compaction(memory_store, governance)

    def _register_compaction(self, store: object | None, governance: Callable[[], object] | None) -> bool:
        """The learned memory's compaction, every 10 minutes on one worker, when the memory store is on and
        the compaction module exists; first, ``governance`` applies the forgets/restores a ``web`` replica's
        dashboard recorded (a failure there is logged and compaction goes on)."""
        if store is None or importlib.util.find_spec(COMPACTION_MODULE) is None:
            return False
        module = importlib.import_module(COMPACTION_MODULE)
        compact = getattr(module, "compact_memory", None)
        if not callable(compact):
            return False

        async def compact_memory(timestamp: int) -> None:
            if governance is not None:
                try:
                    await asyncio.to_thread(governance)
                except Exception as exc:
                    self._log.warning("Recorded memory forgets/restores not applied", err=str(exc))
            await asyncio.to_thread(compact, store)

        self.app.periodic(cron="*/10 * * * *")(
            self.app.task(name=COMPACTION_TASK, queue=MAINTENANCE_QUEUE)(compact_memory)
        )
        return True

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Queue a job for any open delivery without one, open the queue's pool and start the worker loop
        (returns at once)."""
        orphans = await self.journal.off_loop(self.journal.requeue_orphans)
        if orphans:
            self._log.info(
                "Open deliveries without a queued job were queued",
                deliveries=orphans[:50],
                count=len(orphans),
            )
        await self.app.open_async()
        # Two loops on one App: the deliveries' slots, and one slot of its own for the stalled-job check and
        # compaction, so a worker whose slots are all busy with long reviews still hands a dead worker's
        # jobs back in time (procrastinate defers each periodic run once, whichever loop defers it).
        self._tasks = [
            asyncio.create_task(
                self.app.run_worker_async(
                    queues=[QUEUE],
                    name=self._name,
                    concurrency=self.options.concurrency,
                    install_signal_handlers=False,
                    update_heartbeat_interval=self.options.heartbeat_seconds,
                    stalled_worker_timeout=self.options.stalled_seconds,
                    shutdown_graceful_timeout=self.options.shutdown_grace_seconds,
                    fetch_job_polling_interval=self.options.poll_seconds,
                    delete_jobs="successful",
                ),
                name="procrastinate-worker",
            ),
            asyncio.create_task(
                self.app.run_worker_async(
                    queues=[MAINTENANCE_QUEUE],
                    name=f"{self._name}-maintenance",
                    concurrency=1,
                    install_signal_handlers=False,
                    update_heartbeat_interval=self.options.heartbeat_seconds,
                    stalled_worker_timeout=self.options.stalled_seconds,
                    shutdown_graceful_timeout=self.options.shutdown_grace_seconds,
                    fetch_job_polling_interval=self.options.poll_seconds,
                    delete_jobs="always",
                ),
                name="procrastinate-maintenance",
            ),
        ]
        self._log.info(
            "Queue worker started",
            concurrency=self.options.concurrency,
            queues=[QUEUE, MAINTENANCE_QUEUE],
            memoryCompaction=self.compaction,
        )

    @property
    def stopped(self) -> bool:
        """Started, and one of its loops has ended without :meth:`stop` (e.g. a failed side task)."""
        return any(task.done() for task in self._tasks)

    async def stop(self) -> None:
        """Graceful: running jobs get ``shutdown_grace_seconds``, then are cancelled and go back in line."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.app.close_async()

    # ------------------------------------------------------------------ tasks
    async def _run_delivery(self, delivery_id: str) -> None:
        entry = await self.journal.off_loop(self.journal.begin, delivery_id, now=self._clock())
        if entry is None:
            self._log.info("Delivery no longer open; its job ends", deliveryId=delivery_id)
            return
        event = WebhookEvent(
            id=entry.delivery_id,
            name=entry.event_name,
            payload=entry.payload,
            installation_id=entry.installation_id,
        )
        tokens = bind_contextvars(delivery_id=event.id, eventName=event.name)
        current = CURRENT_DELIVERY.set(event.id)
        try:
            await dispatch_and_settle(
                self.router,
                event,
                skip=frozenset(entry.handlers_done),
                progress=_PgProgress(self.journal, self._clock),
                metrics=self._metrics,
                log=self._log,
            )
        except asyncio.CancelledError:
            self._log.warning(
                "Job interrupted by shutdown; back in the queue for another worker",
                deliveryId=event.id,
                attempts=entry.attempts,
            )
            # not the job's fault: no attempt used (shielded: the task is being cancelled)
            await asyncio.shield(self.journal.off_loop(self.journal.release, event.id))
            raise
        finally:
            CURRENT_DELIVERY.reset(current)
            reset_contextvars(**tokens)

    async def _retry_stalled(self, timestamp: int) -> None:
        """Jobs of workers without a heartbeat for ``stalled_seconds``: back in line, or dead."""
        stalled = await self.app.job_manager.get_stalled_jobs(
            task_name=TASK, seconds_since_heartbeat=self.options.stalled_seconds
        )
        jobs = [
            StalledJob(int(job.id), str(job.task_kwargs.get("delivery_id")))
            for job in stalled
            if job.id is not None
        ]
        if jobs:
            report = await self.journal.off_loop(
                self.journal.settle_stalled,
                jobs,
                max_attempts=self.options.max_attempts,
                now=self._clock(),
                stalled_seconds=self.options.stalled_seconds,
            )
            for delivery in report.retried:
                self._log.warning("Job of a stopped worker put back in the queue", deliveryId=delivery)
            for delivery, event_name, attempts in report.dead:
                log_dead_letter(self._log, delivery, event_name, attempts)
                if self._metrics:
                    self._metrics.jobs_dead.inc()
        await self._drop_stalled_maintenance()
        await self.app.job_manager.prune_stalled_workers(self.options.stalled_seconds)

    async def _drop_stalled_maintenance(self) -> None:
        """A dead worker's stalled-check or compaction run is not retried (the next period runs anyway): it
        is finished as failed, instead of counting as ``doing`` in the queue's metrics for ever."""
        stalled = await self.app.job_manager.get_stalled_jobs(
            queue=MAINTENANCE_QUEUE, seconds_since_heartbeat=self.options.stalled_seconds
        )
        for job in stalled:
            if job.id is None:
                continue
            try:
                await self.app.job_manager.finish_job_by_id_async(job.id, Status.FAILED, delete_job=True)
            except Exception as exc:  # another check finished it first
                self._log.debug("Stalled maintenance job already settled", jobId=job.id, err=str(exc))


async def refresh_queue_metrics(journal: PgJobJournal, metrics: Metrics) -> None:
    """Read the queue's and the journal's counts into the gauges (at each /metrics scrape)."""
    queue, journal_counts = await journal.off_loop(lambda: (journal.queue_counts(), journal.open_counts()))
    for state in ("todo", "doing", "succeeded", "failed", "cancelled", "aborted"):
        metrics.queue_jobs.labels(state).set(queue.get(state, 0))
    for status in ("pending", "running", "requeued", "dead"):
        metrics.journal_deliveries.labels(status).set(journal_counts.get(status, 0))
