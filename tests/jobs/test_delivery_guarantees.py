"""Delivery guarantees inside one process: attempts counted when a job starts, given back on a graceful cut;
deferred journal writes held back (in order) until they land; the lane's log binding per job; body-digest
dedup; ``kodiai jobs retry`` picked up by a running dispatcher. Real SQLite files, the real lanes, router and
dispatcher; a write failure is SQLite refusing writes (``PRAGMA query_only``), not a stub."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import structlog
from structlog.contextvars import bind_contextvars, get_contextvars, merge_contextvars
from structlog.testing import LogCapture

from kodiai.jobs import journal_admin
from kodiai.jobs.dispatcher import MAX_ATTEMPTS, DeliveryDispatcher
from kodiai.jobs.journal import Duplicate, Intake, JobJournal
from kodiai.jobs.lanes import JobContext, JobQueue
from kodiai.webhook.bot_filter import BotFilter
from kodiai.webhook.events import WebhookEvent
from kodiai.webhook.router import EventRouter

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def intake(delivery: str, body: bytes | None = None, digest: str | None = None) -> Intake:
    return Intake(
        delivery, "issues", "opened", 1, body or b'{"action":"opened","n":"%s"}' % delivery.encode(), digest
    )


def event(delivery: str) -> WebhookEvent:
    return WebhookEvent(id=delivery, name="issues", payload={"action": "opened"}, installation_id=1)


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[JobJournal]:
    opened = JobJournal.open(tmp_path / "jobs.db")
    opened.start_writer()
    try:
        yield opened
    finally:
        opened.close()


def lane_router(queue: JobQueue, ran: list[str], gate: asyncio.Event | None = None) -> EventRouter:
    """One handler whose job runs on the real lanes (and waits for ``gate``)."""
    router = EventRouter(BotFilter("kodiai"))

    async def handler(ev: WebhookEvent) -> None:
        async def job() -> None:
            if gate is not None:
                await gate.wait()
            ran.append(ev.id)

        await queue.enqueue(ev.installation_id, job, JobContext(delivery_id=ev.id, job_type="t"))

    router.register("issues.opened", handler, name="lane")
    return router


def row(journal: JobJournal, delivery: str) -> tuple[str, int]:
    found = journal.get(delivery)
    assert found is not None
    return found["status"], found["attempts"]


async def until(predicate, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.01)


async def test_an_attempt_is_counted_when_its_job_starts_and_given_back_on_a_graceful_cut(
    journal: JobJournal,
) -> None:
    """Three deliveries queue in one lane: only the one whose job runs has an attempt (status running).
    A graceful shutdown gives it back, so a backlog survives any number of restarts."""
    queue = JobQueue()
    gate = asyncio.Event()
    ran: list[str] = []
    dispatcher = DeliveryDispatcher(lane_router(queue, ran, gate), journal)
    queue.on_job_start = dispatcher.job_starting
    for d in ("a", "b", "c"):
        assert await journal.accept_async(intake(d), now=T0)
        assert row(journal, d) == ("pending", 0)  # nothing counted at intake
        dispatcher.submit(event(d))
    await until(lambda: journal.get("a")["status"] == "running")  # type: ignore[index]
    assert [row(journal, d) for d in "abc"] == [("running", 1), ("pending", 0), ("pending", 0)]

    assert await dispatcher.drain(0) == 3  # SIGTERM past the grace period
    await queue.cancel_all()
    await until(lambda: journal.get("a")["status"] == "pending")  # type: ignore[index]
    assert [row(journal, d) for d in "abc"] == [("pending", 0)] * 3

    queue2 = JobQueue()
    again = DeliveryDispatcher(lane_router(queue2, ran), journal)
    queue2.on_job_start = again.job_starting
    assert await again.replay_unfinished() == 3  # replay submission counts nothing either
    await again.drain(10)
    assert ran == ["a", "b", "c"]
    await until(lambda: [row(journal, d) for d in "abc"] == [("done", 1)] * 3)  # "done" is a deferred write


async def test_failed_deferred_writes_are_held_back_in_order_and_land_when_writes_work_again(
    journal: JobJournal,
) -> None:
    """A write refused by SQLite is not dropped: the attempt and the final status are applied, in their
    order, once writes work again; meanwhile the journal reports it cannot write, and intake fails."""
    assert await journal.accept_async(intake("d"), now=T0)
    journal._db.execute("PRAGMA query_only=ON")  # every write now fails (SQLITE_READONLY)
    with pytest.raises(sqlite3.OperationalError):
        await journal.start_attempt_async("d", now=T0)
    journal.finish_later("d", now=T0, status="done")
    with pytest.raises(sqlite3.OperationalError):
        await journal.accept_async(intake("new"), now=T0)  # the webhook answers 500
    await until(lambda: journal.health().held_back == 2)
    health = journal.health()
    assert health.state == "failing" and "readonly" in (health.reason or "")

    journal._db.execute("PRAGMA query_only=OFF")
    await until(lambda: journal.health().state == "ok")
    assert row(journal, "d") == ("done", 1)  # attempt first, then done: order kept
    assert not journal.seen("new")


async def test_writes_failing_with_nothing_to_retry_are_probed_until_they_work(journal: JobJournal) -> None:
    """Readiness must come back once writes work even if no deferred write is waiting (only intake failed)."""
    journal._db.execute("PRAGMA query_only=ON")
    with pytest.raises(sqlite3.OperationalError):
        await journal.accept_async(intake("x"), now=T0)
    assert journal.health().state == "failing"
    journal._db.execute("PRAGMA query_only=OFF")
    await until(lambda: journal.health().state == "ok")


async def test_the_same_body_under_a_new_delivery_id_is_a_duplicate_inside_the_window(
    journal: JobJournal,
) -> None:
    body = b'{"action":"opened","installation":{"id":1}}'
    assert await journal.intake_async(intake("first", body, "d1g"), now=T0) is True
    replay = await journal.intake_async(intake("replayed", body, "d1g"), now=T0 + timedelta(hours=1))
    assert replay == Duplicate(of="first", by="body") and not replay
    again = await journal.intake_async(intake("first", body, "d1g"), now=T0 + timedelta(hours=1))
    assert again == Duplicate(of="first", by="id")
    later = await journal.intake_async(intake("much-later", body, "d1g"), now=T0 + timedelta(hours=25))
    assert later is True  # outside the 24 h window the digest no longer counts
    assert not journal.seen("replayed")


async def test_a_dead_delivery_retried_from_the_cli_is_run_by_the_running_dispatcher(
    tmp_path: Path, journal: JobJournal
) -> None:
    assert await journal.accept_async(intake("poison"), now=T0)
    for _ in range(MAX_ATTEMPTS):
        journal.start_attempt("poison", now=T0)  # every start cut by the process dying
    queue = JobQueue()
    ran: list[str] = []
    dispatcher = DeliveryDispatcher(lane_router(queue, ran), journal, requeue_poll_seconds=0.05)
    queue.on_job_start = dispatcher.job_starting
    assert await dispatcher.replay_unfinished() == 0
    assert row(journal, "poison")[0] == "dead"

    cli = sqlite3.connect(tmp_path / "jobs.db", isolation_level=None)  # what `kodiai jobs retry` does
    try:
        assert journal_admin.retry(cli, ["poison"]).requeued == ["poison"]
        assert journal_admin.retry(cli, ["poison"]).refused == {
            "poison": "not dead (status requeued); only dead deliveries are retried"
        }
    finally:
        cli.close()
    await until(lambda: ran == ["poison"])
    await until(lambda: row(journal, "poison") == ("done", 1))
    await dispatcher.drain(5)


async def test_queued_jobs_run_and_log_with_their_own_delivery_id() -> None:
    """The lane worker is started by the first job: later jobs must not inherit its log binding."""
    capture = LogCapture()
    saved = structlog.get_config()
    structlog.configure(processors=[merge_contextvars, capture])
    queue = JobQueue()
    release = asyncio.Event()
    seen: dict[str, object] = {}

    async def dispatch(delivery: str) -> None:  # what the dispatcher does for each delivery
        bind_contextvars(delivery_id=delivery)

        async def job() -> None:
            if delivery == "first":
                await release.wait()
            seen[delivery] = get_contextvars().get("delivery_id")

        await queue.enqueue(7, job, JobContext(delivery_id=delivery))

    try:
        first = asyncio.create_task(dispatch("first"))
        await until(lambda: queue.pending_count(7) == 1)
        second = asyncio.create_task(dispatch("second"))
        await until(lambda: queue.queue_size(7) == 1)
        release.set()
        await asyncio.gather(first, second)
    finally:
        structlog.configure(**saved)
    assert seen == {"first": "first", "second": "second"}
    started = {
        e["deliveryId"]: e.get("delivery_id")
        for e in capture.entries
        if e["event"] == "Job execution started"
    }
    assert started == {"first": "first", "second": "second"}


async def test_every_waiting_write_gets_its_answer_even_when_the_writer_is_faster_than_submit(
    journal: JobJournal,
) -> None:
    """The writer may commit and settle an op before ``submit`` returns: the caller still gets its future
    (found by the soak: 14 of 364 deliveries answered 500 under a loaded machine)."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # let the writer thread run between any two bytecodes of submit()
    try:
        results = []
        for round_ in range(6):
            results += await asyncio.gather(
                *(journal.accept_async(intake(f"race-{round_}-{i}"), now=T0) for i in range(1000)),
                return_exceptions=True,
            )
    finally:
        sys.setswitchinterval(previous)
    assert [r for r in results if r is not True] == []
