"""Background dispatch of accepted deliveries, bound to the job journal.

The webhook route acknowledges at once and hands the event here. Each dispatch runs as a tracked
task: the journal records every handler that finishes and the final status, unfinished deliveries
are replayed at start-up, and :meth:`DeliveryDispatcher.drain` lets in-flight work finish for a grace
period on shutdown (what it cannot finish stays pending and is replayed by the next process).

Attempts are counted when a job of the delivery starts in its lane (the lanes' ``on_job_start`` hook), once
per dispatch, and given back when a graceful shutdown cuts the job: only a process that died under a
running job uses one up. So a backlog waiting in a lane survives any number of restarts, while a job that
kills the process (a poison delivery) stops after ``MAX_ATTEMPTS`` and is moved to ``dead`` with its body,
for ``kodiai jobs list``/``retry``. A running server picks up what ``kodiai jobs retry`` requeued every
``REQUEUE_POLL_SECONDS``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from structlog.contextvars import bind_contextvars, reset_contextvars

from kodiai.jobs.journal import JobJournal, JournalEntry, JournalStatus
from kodiai.jobs.lanes import CURRENT_DELIVERY
from kodiai.log import CachedLogger
from kodiai.metrics import Metrics
from kodiai.webhook.events import WebhookEvent
from kodiai.webhook.router import EventRouter

MAX_ATTEMPTS = 3  # job starts cut short by the process dying, before the delivery is dead-lettered
REQUEUE_POLL_SECONDS = 2.0


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass
class _Active:
    """One dispatch in flight: whether this dispatch already counted its attempt."""

    counted: bool = False


class DispatchProgress(Protocol):
    """Where a dispatch records its progress: each handler that finished, then the final status."""

    def handler_done(self, delivery_id: str, handler: str) -> None: ...

    async def settle(self, delivery_id: str, status: JournalStatus, error: str | None) -> None: ...


class _JournalProgress:
    """The SQLite journal's progress writes: queued behind intake on its writer, never awaited."""

    __slots__ = ("_clock", "_journal")

    def __init__(self, journal: JobJournal, clock: Callable[[], datetime]) -> None:
        self._journal = journal
        self._clock = clock

    def handler_done(self, delivery_id: str, handler: str) -> None:
        self._journal.mark_handler_done_later(delivery_id, handler)

    async def settle(self, delivery_id: str, status: JournalStatus, error: str | None) -> None:
        self._journal.finish_later(delivery_id, now=self._clock(), status=status, error=error)


async def dispatch_and_settle(
    router: EventRouter,
    event: WebhookEvent,
    *,
    skip: frozenset[str],
    progress: DispatchProgress | None,
    metrics: Metrics | None,
    log: CachedLogger,
) -> None:
    """Run the delivery's handlers (those in ``skip`` already finished) and record the outcome: ``done``,
    or ``failed`` with each failing handler's error. Shared by the in-process dispatcher (SQLite) and the
    PostgreSQL queue's worker task; a cancellation (shutdown) propagates to the caller, which knows
    whether the attempt is given back."""
    # Per-handler progress matters only when several handlers share the delivery; with one, the final
    # status written right after it says the same thing in one write.
    several = len([r for r in router.handlers_for(event) if r.name not in skip]) > 1
    try:
        outcome = await router.dispatch(
            event,
            skip=skip,
            on_handler_done=(lambda name: progress.handler_done(event.id, name))
            if progress is not None and several
            else None,
        )
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.error("Event dispatch failed", deliveryId=event.id, err=f"{type(exc).__name__}: {exc}")
        if progress is not None:
            await progress.settle(event.id, "failed", str(exc)[:2000])
        return
    if metrics:
        for name in outcome.failures:
            metrics.handler_failures.labels(name).inc()
    if progress is not None:
        error = "; ".join(f"{k}: {v}" for k, v in outcome.failures.items()) or None
        await progress.settle(event.id, "failed" if outcome.failed else "done", error if outcome.failed else None)


def dead_letter_error(attempts: int, earlier: str | None) -> str:
    """The error a dead-lettered delivery keeps (``kodiai jobs list`` shows it)."""
    error = (
        f"gave up after {attempts} attempts: the process stopped while a job of this delivery was"
        " running, each time"
    )
    if earlier:
        error += f"; earlier error: {earlier}"
    return error[:2000]


def log_dead_letter(log: CachedLogger, delivery_id: str, event_name: str, attempts: int) -> None:
    log.error(
        "Delivery moved to the dead-letter state",
        deliveryId=delivery_id,
        eventName=event_name,
        attempts=attempts,
        hint=f"kodiai jobs list --state dead; kodiai jobs retry {delivery_id}",
    )


class DeliveryDispatcher:
    """Runs router dispatches in the background and keeps the journal in step."""

    def __init__(
        self,
        router: EventRouter,
        journal: JobJournal,
        *,
        metrics: Metrics | None = None,
        clock: Callable[[], datetime] = utcnow,
        max_attempts: int = MAX_ATTEMPTS,
        requeue_poll_seconds: float = REQUEUE_POLL_SECONDS,
    ) -> None:
        self.router = router
        self.journal = journal
        self._metrics = metrics
        self._clock = clock
        self._max_attempts = max_attempts
        self._poll = requeue_poll_seconds
        self._tasks: set[asyncio.Task[None]] = set()
        self._active: dict[str, _Active] = {}
        self._prepared: list[JournalEntry] | None = None
        self._poller: asyncio.Task[None] | None = None
        self._log = CachedLogger("kodiai.jobs.dispatcher")

    @property
    def in_flight(self) -> int:
        return len(self._tasks)

    def submit(
        self, event: WebhookEvent, *, journaled: bool = True, skip: frozenset[str] = frozenset()
    ) -> None:
        """Schedule the dispatch (fire and forget; failures are logged, never raised)."""
        if journaled:
            self._active[event.id] = _Active()
        task = asyncio.create_task(
            self._run(event, journaled=journaled, skip=skip), name=f"dispatch-{event.id}"
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def job_starting(self, delivery_id: str) -> None:
        """Lanes' ``on_job_start``: the first job of a dispatch to start counts the delivery's attempt."""
        active = self._active.get(delivery_id)
        if active is None or active.counted:
            return
        active.counted = True
        await self.journal.start_attempt_async(delivery_id, now=self._clock())

    async def _run(self, event: WebhookEvent, *, journaled: bool, skip: frozenset[str]) -> None:
        # Every log line of the dispatch carries the delivery (what kodiai.log.bind_delivery does, without
        # its generator context manager: measurable on the hot path).
        tokens = bind_contextvars(delivery_id=event.id, eventName=event.name)
        current = CURRENT_DELIVERY.set(event.id)
        try:
            try:
                await dispatch_and_settle(
                    self.router,
                    event,
                    skip=skip,
                    progress=_JournalProgress(self.journal, self._clock) if journaled else None,
                    metrics=self._metrics,
                    log=self._log,
                )
            except asyncio.CancelledError:
                self._log.warning(
                    "Dispatch interrupted by shutdown; left pending for replay", deliveryId=event.id
                )
                active = self._active.get(event.id)
                if journaled and active is not None and active.counted:
                    self.journal.release_attempt_later(event.id)  # not the job's fault: no attempt used
                raise
        finally:
            if journaled:
                self._active.pop(event.id, None)
            CURRENT_DELIVERY.reset(current)
            reset_contextvars(**tokens)

    # ------------------------------------------------------------------ start-up replay
    def prepare_replay(self) -> int:
        """Read what the previous process left open, before the server starts (a journal that cannot be
        read then fails start-up with one FATAL line, not a traceback in the lifespan). Deliveries whose
        attempts are used up move to ``dead``. Returns how many will be replayed."""
        entries: list[JournalEntry] = []
        self.journal.reopen_requeued()
        for entry in self.journal.unfinished():
            if entry.status == "running" and entry.attempts >= self._max_attempts:
                self._dead_letter(entry)
            else:
                entries.append(entry)
        self._prepared = entries
        return len(entries)

    def _dead_letter(self, entry: JournalEntry) -> None:
        error = dead_letter_error(entry.attempts, entry.error)
        log_dead_letter(self._log, entry.delivery_id, entry.event_name, entry.attempts)
        self.journal.finish(entry.delivery_id, now=self._clock(), status="dead", error=error)
        if self._metrics:
            self._metrics.jobs_dead.inc()

    async def replay_unfinished(self) -> int:
        """Re-dispatch journal rows left open by the previous process (see :meth:`prepare_replay`), then
        start watching for deliveries ``kodiai jobs retry`` requeues."""
        if self._prepared is None:
            self.prepare_replay()
        entries, self._prepared = self._prepared or [], []
        for entry in entries:
            self._log.info(
                "Replaying unfinished delivery from job journal",
                deliveryId=entry.delivery_id,
                eventName=entry.event_name,
                attempts=entry.attempts,
                handlersDone=entry.handlers_done,
            )
            self._resubmit(entry)
        if self._metrics and entries:
            self._metrics.journal_replayed.inc(len(entries))
        if self._poller is None and self._poll > 0:
            self._poller = asyncio.create_task(self._watch_requeued(), name="journal-requeued")
        return len(entries)

    def _resubmit(self, entry: JournalEntry) -> None:
        event = WebhookEvent(
            id=entry.delivery_id,
            name=entry.event_name,
            payload=entry.payload,
            installation_id=entry.installation_id,
        )
        self.submit(event, skip=frozenset(entry.handlers_done))

    async def _watch_requeued(self) -> None:
        while True:
            await asyncio.sleep(self._poll)
            try:
                entries = await self.journal.claim_requeued_async()
            except Exception as exc:  # a failing journal is reported by /readiness; try again later
                self._log.warning("Requeued deliveries not read", err=f"{type(exc).__name__}: {exc}")
                continue
            for entry in entries:
                if entry.delivery_id in self._active:
                    continue
                self._log.info(
                    "Retrying requeued delivery (kodiai jobs retry)",
                    deliveryId=entry.delivery_id,
                    eventName=entry.event_name,
                )
                self._resubmit(entry)

    async def drain(self, grace_seconds: float) -> int:
        """Wait up to ``grace_seconds`` for in-flight dispatches; cancel the rest. Returns how many were cut."""
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poller
            self._poller = None
        pending = set(self._tasks)
        if not pending:
            return 0
        self._log.info(
            "Draining in-flight jobs before shutdown", inFlight=len(pending), graceSeconds=grace_seconds
        )
        _done, still = await asyncio.wait(pending, timeout=max(grace_seconds, 0))
        for task in still:
            task.cancel()
        if still:
            await asyncio.gather(*still, return_exceptions=True)
            self._log.warning(
                "Shutdown grace period over; unfinished jobs stay in the journal for replay",
                cancelled=len(still),
            )
        return len(still)
