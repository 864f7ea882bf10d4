"""Background dispatch of accepted deliveries, bound to the job journal.

The webhook route acknowledges at once and hands the event here. Each dispatch runs as a tracked
task: the journal records every handler that finishes and the final status, unfinished deliveries
are replayed once at start-up, and :meth:`DeliveryDispatcher.drain` lets in-flight work finish for a
grace period on shutdown (what it cannot finish stays pending and is replayed by the next process).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime

from structlog.contextvars import bind_contextvars, reset_contextvars

from kodiai.jobs.journal import JobJournal
from kodiai.log import CachedLogger
from kodiai.metrics import Metrics
from kodiai.webhook.events import WebhookEvent
from kodiai.webhook.router import EventRouter

MAX_ATTEMPTS = 2  # the first run plus one replay


def utcnow() -> datetime:
    return datetime.now(UTC)


class DeliveryDispatcher:
    """Runs router dispatches in the background and keeps the journal in step."""

    def __init__(
        self,
        router: EventRouter,
        journal: JobJournal,
        *,
        metrics: Metrics | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.router = router
        self.journal = journal
        self._metrics = metrics
        self._clock = clock
        self._tasks: set[asyncio.Task[None]] = set()
        self._log = CachedLogger("kodiai.jobs.dispatcher")

    @property
    def in_flight(self) -> int:
        return len(self._tasks)

    def submit(
        self,
        event: WebhookEvent,
        *,
        journaled: bool = True,
        skip: frozenset[str] = frozenset(),
        attempt_recorded: bool = False,
    ) -> None:
        """Schedule the dispatch (fire and forget; failures are logged, never raised).

        ``attempt_recorded``: the journal already counted this attempt (set at intake).
        """
        count = journaled and not attempt_recorded
        task = asyncio.create_task(
            self._run(event, journaled=journaled, skip=skip, count_attempt=count), name=f"dispatch-{event.id}"
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(
        self, event: WebhookEvent, *, journaled: bool, skip: frozenset[str], count_attempt: bool
    ) -> None:
        # Every log line of the dispatch carries the delivery (what kodiai.log.bind_delivery does, without
        # its generator context manager: measurable on the hot path).
        tokens = bind_contextvars(delivery_id=event.id, eventName=event.name)
        try:
            if count_attempt:
                self.journal.start_attempt(event.id, now=self._clock())
            try:
                # Per-handler progress matters only when several handlers share the delivery; with one,
                # the final status written right after it says the same thing in one write.
                several = len([r for r in self.router.handlers_for(event) if r.name not in skip]) > 1
                outcome = await self.router.dispatch(
                    event,
                    skip=skip,
                    on_handler_done=(lambda name: self.journal.mark_handler_done_later(event.id, name))
                    if journaled and several
                    else None,
                )
            except asyncio.CancelledError:
                self._log.warning(
                    "Dispatch interrupted by shutdown; left pending for replay", deliveryId=event.id
                )
                raise
            except Exception as exc:
                self._log.error(
                    "Event dispatch failed", deliveryId=event.id, err=f"{type(exc).__name__}: {exc}"
                )
                if journaled:
                    self.journal.finish_later(
                        event.id, now=self._clock(), status="failed", error=str(exc)[:2000]
                    )
                return
            if self._metrics:
                for name in outcome.failures:
                    self._metrics.handler_failures.labels(name).inc()
            if journaled:
                error = "; ".join(f"{k}: {v}" for k, v in outcome.failures.items()) or None
                if outcome.failed:
                    self.journal.finish_later(event.id, now=self._clock(), status="failed", error=error)
                else:
                    self.journal.finish_later(event.id, now=self._clock(), status="done")
        finally:
            reset_contextvars(**tokens)

    async def replay_unfinished(self) -> int:
        """Re-dispatch journal rows left pending by the previous process (each at most once more)."""
        replayed = 0
        for entry in self.journal.unfinished():
            if entry.attempts >= MAX_ATTEMPTS:
                self._log.error(
                    "Abandoning delivery after a replay did not finish",
                    deliveryId=entry.delivery_id,
                    eventName=entry.event_name,
                    attempts=entry.attempts,
                )
                self.journal.finish(entry.delivery_id, now=self._clock(), status="abandoned")
                continue
            self._log.info(
                "Replaying unfinished delivery from job journal",
                deliveryId=entry.delivery_id,
                eventName=entry.event_name,
                attempts=entry.attempts,
                handlersDone=entry.handlers_done,
            )
            event = WebhookEvent(
                id=entry.delivery_id,
                name=entry.event_name,
                payload=entry.payload,
                installation_id=entry.installation_id,
            )
            self.submit(event, skip=frozenset(entry.handlers_done))
            replayed += 1
        if self._metrics and replayed:
            self._metrics.journal_replayed.inc(replayed)
        return replayed

    async def drain(self, grace_seconds: float) -> int:
        """Wait up to ``grace_seconds`` for in-flight dispatches; cancel the rest. Returns how many were cut."""
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
