"""The queue's worker on a real PostgreSQL: two worker apps (each its own procrastinate worker and pool) run
deliveries journalled by intake; per installation the jobs run one at a time, in acknowledgement order,
whichever worker takes them; a handler's failure is the delivery's ``failed`` status, as in-process."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import time
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from structlog.testing import capture_logs

from kodiai.jobs.journal_rows import Intake
from kodiai.jobs.pg_journal import PgJobJournal
from kodiai.jobs.pg_queue import PgWorker, WorkerOptions
from kodiai.learning.setup import open_store_for_provider
from kodiai.webhook.bot_filter import BotFilter
from kodiai.webhook.events import WebhookEvent
from kodiai.webhook.router import EventRouter

FAST = WorkerOptions(
    concurrency=3, heartbeat_seconds=0.5, stalled_seconds=3, shutdown_grace_seconds=1, poll_seconds=0.2
)


def _router(
    name: str,
    runs: list[tuple[str, int, str, float, float]],
    running: dict[str, asyncio.Event] | None = None,
) -> EventRouter:
    router = EventRouter(BotFilter("kodiai"))

    async def record(event: WebhookEvent) -> None:
        if event.payload.get("fail"):
            raise RuntimeError("handler broke")
        begun = time.monotonic()
        if running is not None:  # a worker's job waits until every worker has a job running
            running[name].set()
            await asyncio.gather(*(e.wait() for e in running.values()))
        await asyncio.sleep(0.05)
        runs.append((event.id, event.installation_id, name, begun, time.monotonic()))

    router.register("issues.opened", record, name="record")
    return router


async def _wait_finished(url: str, n: int, timeout: float = 60) -> dict[str, tuple[str, str | None]]:
    deadline = time.monotonic() + timeout
    while True:
        with psycopg.connect(url) as conn:
            rows = conn.execute("SELECT delivery_id, status, error FROM delivery_journal").fetchall()
        finished = {d: (s, e) for d, s, e in rows if s in ("done", "failed", "dead")}
        if len(finished) >= n or time.monotonic() > deadline:
            return finished
        await asyncio.sleep(0.1)


def test_two_workers_keep_each_installation_in_order_and_never_overlap(postgres_url: str) -> None:
    journal = PgJobJournal.open(postgres_url)
    runs: list[tuple[str, int, str, float, float]] = []
    order: dict[int, list[str]] = {1: [], 2: [], 3: []}
    now = datetime(2026, 1, 1, tzinfo=UTC)
    for i in range(15):
        inst, delivery = i % 3 + 1, f"d-{i:02d}"
        body = json.dumps({"action": "opened", "installation": {"id": inst}, "n": i}).encode()
        assert journal.intake(Intake(delivery, "issues", "opened", inst, body), now=now) is True
        order[inst].append(delivery)
    journal.intake(Intake("broken", "issues", "opened", 4, b'{"action": "opened", "fail": true}'), now=now)
    with psycopg.connect(
        postgres_url, autocommit=True
    ) as conn:  # a job no worker knows: procrastinate's error
        conn.execute(
            "INSERT INTO procrastinate_jobs (queue_name, task_name, args) VALUES ('deliveries', 'nope', '{}')"
        )

    async def scenario() -> dict[str, tuple[str, str | None]]:
        # One slot each, and a worker's job ends only once both workers run one: the first worker's job
        # holds its only slot until the other takes a job of another installation (those are free), so
        # both workers take jobs whatever the host's load.
        running = {"w1": asyncio.Event(), "w2": asyncio.Event()}
        one_slot = dataclasses.replace(FAST, concurrency=1)
        workers = [
            PgWorker(postgres_url, journal, _router(name, runs, running), options=one_slot, name=name)
            for name in ("w1", "w2")
        ]
        for worker in workers:
            await worker.start()
        try:
            finished = await _wait_finished(postgres_url, 16)
            while _queued(postgres_url):
                await asyncio.sleep(0.1)
            return finished
        finally:
            for worker in workers:
                await worker.stop()

    try:
        with capture_logs() as logs:
            finished = asyncio.run(scenario())
    finally:
        journal.close()
    unknown = [e for e in logs if e["event"] == "Task was not found"]
    assert unknown and unknown[0]["log_level"] == "error"  # procrastinate's log, as a Kodiai log line
    assert finished.pop("broken") == ("failed", "record: RuntimeError: handler broke")
    assert set(finished.values()) == {("done", None)} and len(finished) == 15
    for inst, expected in order.items():
        mine = [r for r in runs if r[1] == inst]
        assert [r[0] for r in mine] == expected  # acknowledgement order
        for earlier, later in itertools.pairwise(mine):
            assert later[3] >= earlier[4], (
                f"installation {inst}: {later[0]} started before {earlier[0]} ended"
            )
    assert {r[2] for r in runs} == {"w1", "w2"}  # both workers took jobs
    with psycopg.connect(postgres_url) as conn:  # succeeded jobs are deleted; nothing left to run
        left = conn.execute(
            "SELECT task_name, status::text FROM procrastinate_jobs WHERE queue_name = 'deliveries'"
        )
        assert left.fetchall() == [("nope", "failed")]


def _queued(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT COUNT(*) FROM procrastinate_jobs WHERE queue_name = 'deliveries'"
            " AND status IN ('todo', 'doing')"
        ).fetchone()
    return int(row[0]) if row else 0


def test_learned_memory_compaction_is_a_periodic_task_of_the_worker(
    postgres_url: str, tmp_path: Path
) -> None:
    """With the learned memory on, the worker app runs its compaction every 10 minutes (procrastinate
    defers each period's run once, for one worker); without it there is no such task."""

    class Provider:
        dimensions = 16
        model = "m"

    store = open_store_for_provider(str(tmp_path / "memory.lance"), Provider())  # type: ignore[arg-type]
    assert store is not None
    journal = PgJobJournal.open(postgres_url)
    try:
        worker = PgWorker(postgres_url, journal, EventRouter(BotFilter("kodiai")), memory_store=store)
        assert worker.compaction
        periodic = {t.task.name: t.cron for t in worker.app.periodic_registry.periodic_tasks.values()}
        assert periodic == {"kodiai.retry_stalled": "*/10 * * * * *", "kodiai.compact_memory": "*/10 * * * *"}
        with capture_logs() as logs:
            asyncio.run(worker.app.tasks["kodiai.compact_memory"](timestamp=0))
        assert [e["event"] for e in logs] == ["Learning memory compacted"]
        bare = PgWorker(postgres_url, journal, EventRouter(BotFilter("kodiai")))
        assert not bare.compaction and "kodiai.compact_memory" not in bare.app.tasks
    finally:
        journal.close()
        store.close()


def test_a_worker_with_every_slot_busy_still_hands_back_a_dead_workers_job(postgres_url: str) -> None:
    """The stalled-job check has a slot of its own: a worker whose only delivery slot is held by a long
    review still puts a dead worker's job back in line (one slot shared by both queues would hold the check,
    and the dead worker's installation, until the review ended), and a dead worker's own maintenance run is
    finished instead of counting as ``doing`` for ever."""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    journal = PgJobJournal.open(postgres_url)
    runs: list[tuple[str, int, str, float, float]] = []
    for delivery, inst in (("stalled", 1), ("long", 2)):
        body = json.dumps({"action": "opened", "installation": {"id": inst}}).encode()
        assert journal.intake(Intake(delivery, "issues", "opened", inst, body), now=now) is True
    with psycopg.connect(postgres_url, autocommit=True) as conn:  # a worker takes "stalled", then dies
        row = conn.execute("SELECT worker_id FROM procrastinate_register_worker_v1()").fetchone()
        assert row is not None
        dead = int(row[0])
        job = conn.execute(
            "SELECT id FROM procrastinate_fetch_job_v2(ARRAY['deliveries']::varchar[], %s)", (dead,)
        ).fetchone()
        assert job is not None and job[0] is not None
        assert journal.begin("stalled", now=now) is not None
        conn.execute(
            "INSERT INTO procrastinate_jobs (queue_name, task_name, args, status, worker_id)"
            " VALUES ('kodiai-maintenance', 'kodiai.retry_stalled', '{}', 'doing', %s)",
            (dead,),
        )
        conn.execute(
            "UPDATE procrastinate_workers SET last_heartbeat = now() - interval '1 hour' WHERE id = %s",
            (dead,),
        )

    async def scenario() -> list[dict[str, object]]:
        release = asyncio.Event()
        router = EventRouter(BotFilter("kodiai"))

        async def record(event: WebhookEvent) -> None:
            begun = time.monotonic()
            if event.id == "long":
                await release.wait()  # the review that holds the worker's only slot
            runs.append((event.id, event.installation_id, "w", begun, time.monotonic()))

        router.register("issues.opened", record, name="record")
        worker = PgWorker(
            postgres_url, journal, router, options=dataclasses.replace(FAST, concurrency=1), name="w"
        )
        with capture_logs() as logs:
            await worker.start()
            try:
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline and not any(
                    e["event"] == "Job of a stopped worker put back in the queue" for e in logs
                ):
                    await asyncio.sleep(0.1)
                assert [r[0] for r in runs] == []  # the long review still holds the slot
                release.set()
                await _wait_finished(postgres_url, 2)
            finally:
                await worker.stop()
        return logs

    try:
        logs = asyncio.run(scenario())
    finally:
        journal.close()
    handed_back = [e for e in logs if e["event"] == "Job of a stopped worker put back in the queue"]
    assert [e["deliveryId"] for e in handed_back] == ["stalled"]
    assert sorted(r[0] for r in runs) == ["long", "stalled"]
    with psycopg.connect(postgres_url) as conn:
        left = conn.execute(
            "SELECT COUNT(*) FROM procrastinate_jobs WHERE worker_id = %s OR (queue_name ="
            " 'kodiai-maintenance' AND status = 'doing' AND worker_id IS NULL)",
            (dead,),
        ).fetchone()
    assert left == (0,)


def test_the_next_job_of_an_installation_starts_when_the_previous_ends_not_at_the_next_poll(
    postgres_url: str,
) -> None:
    """procrastinate wakes workers when a job is inserted, not when a locked job ends: a worker whose queued
    jobs all wait on one installation slept until its next poll, so a burst on one repository drained one job
    per ``WORKER_POLL_SECONDS``. With the poll at 30 s, six jobs of one installation finish in seconds."""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    journal = PgJobJournal.open(postgres_url)
    runs: list[tuple[str, int, str, float, float]] = []
    for i in range(6):
        body = json.dumps({"action": "opened", "installation": {"id": 9}, "n": i}).encode()
        assert journal.intake(Intake(f"burst-{i}", "issues", "opened", 9, body), now=now) is True
    slow_poll = dataclasses.replace(FAST, poll_seconds=30.0)

    async def scenario() -> float:
        worker = PgWorker(postgres_url, journal, _router("w", runs), options=slow_poll, name="w")
        await worker.start()
        try:
            began = time.monotonic()
            finished = await _wait_finished(postgres_url, 6, timeout=20)
            assert len(finished) == 6, f"{len(finished)} of 6 jobs done after 20 s"
            return time.monotonic() - began
        finally:
            await worker.stop()

    try:
        took = asyncio.run(scenario())
    finally:
        journal.close()
    assert [r[0] for r in runs] == [f"burst-{i}" for i in range(6)]
    assert took < 10
