"""The job journal's storage behaviour on both databases: the SQLite journal (the default) and the PostgreSQL
one (``DATABASE_URL``) keep the same rows for the same calls — dedup by id and by body, statuses and
attempts, eviction, and the operators' list/retry — checked through a second connection. PostgreSQL only:
intake defers the delivery's procrastinate job in the same transaction (and a failure leaves neither)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from kodiai.jobs import journal_admin
from kodiai.jobs.journal import JobJournal
from kodiai.jobs.journal_rows import Duplicate, Intake
from kodiai.jobs.pg_journal import QUEUE, TASK, PgJobJournal
from kodiai.storage.connection import connect
from support.db_backends import DbBackend, db_backend  # noqa: F401

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class Journal:
    """The calls the server, the worker and the CLI make, on either journal."""

    backend: DbBackend
    sqlite: JobJournal | None = None
    pg: PgJobJournal | None = None

    def intake(
        self, delivery: str, body: bytes, *, inst: int = 7, work: bool = True, now: datetime = T0
    ) -> Any:
        intake = Intake(delivery, "issues", "opened", inst, body, _digest(body))
        target = self.pg or self.sqlite
        assert target is not None
        return asyncio.run(target.intake_async(intake, now=now, journal=work))

    def start(self, delivery: str) -> int:
        if self.pg is not None:
            entry = self.pg.begin(delivery, now=T0)
            return entry.attempts if entry is not None else 0
        assert self.sqlite is not None
        return self.sqlite.start_attempt(delivery, now=T0)

    def release(self, delivery: str) -> None:
        if self.pg is not None:
            self.pg.release(delivery)
        else:
            assert self.sqlite is not None
            self.sqlite.release_attempt_later(delivery)

    @property
    def j(self) -> Any:
        return self.pg or self.sqlite

    def retry(self, ids: list[str], *, all_dead: bool = False) -> journal_admin.RetryResult:
        if self.pg is not None:
            return self.pg.retry(ids, all_dead=all_dead)
        conn = connect(self.backend.target("jobs"))
        try:
            return journal_admin.retry(conn, ids, all_dead=all_dead)
        finally:
            conn.close()

    def listed(self, states: tuple[str, ...]) -> list[str]:
        if self.pg is not None:
            rows = self.pg.list_deliveries(states, limit=100)
        else:
            conn = connect(self.backend.target("jobs"), read_only=True)
            try:
                rows = journal_admin.list_deliveries(conn, states, limit=100)
            finally:
                conn.close()
        return [r["delivery_id"] for r in rows]

    def row(self, delivery: str) -> dict[str, Any]:
        rows = self.backend.rows(
            "jobs",
            "SELECT status, attempts, handlers_done, error, (SELECT COUNT(*) FROM delivery_payloads p"
            " WHERE p.seq = j.seq) AS bodies FROM delivery_journal j WHERE delivery_id = ?",
            (delivery,),
        )
        assert len(rows) == 1, rows
        out = rows[0]
        out["handlers_done"] = json.loads(out["handlers_done"])
        return out


def _digest(body: bytes) -> str:
    import hashlib

    return hashlib.sha256(body).hexdigest()


@pytest.fixture
def journal(db_backend: DbBackend) -> Iterator[Journal]:  # noqa: F811
    if db_backend.name == "postgres":
        pg = PgJobJournal.open(db_backend.target("jobs"))
        try:
            yield Journal(db_backend, pg=pg)
        finally:
            pg.close()
    else:
        sqlite = JobJournal.open(db_backend.target("jobs"))
        try:
            yield Journal(db_backend, sqlite=sqlite)
        finally:
            sqlite.close()


def test_dedup_by_delivery_id_and_by_body_within_the_window(journal: Journal) -> None:
    assert journal.intake("d-1", b'{"n":1}') is True
    again = journal.intake("d-1", b'{"n":1}')
    assert again == Duplicate(of="d-1", by="id")
    replay = journal.intake("d-2", b'{"n":1}')  # the same body under a new id
    assert replay == Duplicate(of="d-1", by="body")
    later = journal.intake("d-3", b'{"n":1}', now=T0 + timedelta(hours=25))  # past the 24 h window
    assert later is True
    assert journal.intake("d-4", b'{"n":4}', work=False) is True  # no work: remembered, not journalled
    assert journal.intake("d-4", b'{"n":4}', work=False) == Duplicate(of="d-4", by="id")
    rows = journal.backend.rows("jobs", "SELECT delivery_id, status FROM delivery_journal ORDER BY seq")
    assert rows == [
        {"delivery_id": "d-1", "status": "pending"},
        {"delivery_id": "d-3", "status": "pending"},
        {"delivery_id": "d-4", "status": "ignored"},
    ]
    assert journal.j.get("d-4") is None and journal.j.seen("d-4")


def test_statuses_attempts_handlers_and_bodies(journal: Journal) -> None:
    journal.intake("d-1", b'{"n":1}')
    assert journal.start("d-1") == 1
    assert journal.row("d-1")["status"] == "running"
    journal.release("d-1")  # a graceful shutdown cut it: the attempt is given back
    assert journal.row("d-1") | {"handlers_done": []} == {
        "status": "pending", "attempts": 0, "handlers_done": [], "error": None, "bodies": 1
    }  # fmt: skip
    assert journal.start("d-1") == 1
    journal.j.mark_handler_done("d-1", "review")
    journal.j.mark_handler_done("d-1", "review")  # twice: recorded once
    journal.j.mark_handler_done("d-1", "mention")
    assert journal.row("d-1")["handlers_done"] == ["review", "mention"]
    journal.j.finish("d-1", now=T0)
    assert journal.row("d-1")["status"] == "done" and journal.row("d-1")["bodies"] == 0  # body dropped
    journal.intake("d-2", b'{"n":2}')
    journal.start("d-2")
    journal.j.finish("d-2", now=T0, status="dead", error="gave up")
    assert journal.row("d-2") == {
        "status": "dead", "attempts": 1, "handlers_done": [], "error": "gave up", "bodies": 1
    }  # fmt: skip
    assert journal.j.counts() == {"done": 1, "dead": 1}


def test_evict_forgets_old_ids_and_finished_rows(journal: Journal) -> None:
    journal.intake("old-ignored", b'{"n":1}', work=False)
    journal.intake("old-done", b'{"n":2}')
    journal.j.finish("old-done", now=T0)
    journal.intake("old-dead", b'{"n":3}')
    journal.j.finish("old-dead", now=T0, status="dead", error="x")
    journal.intake("fresh", b'{"n":4}', now=T0 + timedelta(days=8))
    removed = journal.j.evict(now=T0 + timedelta(days=8))
    assert removed == 2
    left = journal.backend.rows("jobs", "SELECT delivery_id FROM delivery_journal ORDER BY seq")
    assert [r["delivery_id"] for r in left] == ["old-dead", "fresh"]  # a dead row stays with its body
    assert journal.row("old-dead")["bodies"] == 1


def test_list_and_retry_dead_deliveries(journal: Journal) -> None:
    for name in ("dead-1", "dead-2", "done-1"):
        journal.intake(name, json.dumps({"n": name}).encode())
    for name in ("dead-1", "dead-2"):
        journal.start(name)
        journal.j.finish(name, now=T0, status="dead", error="gave up")
    journal.j.finish("done-1", now=T0)
    assert journal.listed(("dead",)) == ["dead-2", "dead-1"]  # newest first
    result = journal.retry(["dead-1", "done-1", "nope"])
    assert result.requeued == ["dead-1"]
    assert set(result.refused) == {"done-1", "nope"}
    assert journal.row("dead-1") | {"error": None} == {
        "status": "requeued", "attempts": 0, "handlers_done": [], "error": None, "bodies": 1
    }  # fmt: skip
    assert journal.retry([], all_dead=True).requeued == ["dead-2"]
    assert journal.listed(("dead",)) == []


# ---------------------------------------------------------------------- PostgreSQL: intake defers the job


def _jobs(url: str) -> list[dict[str, Any]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT queue_name, task_name, lock, args, status::text FROM procrastinate_jobs ORDER BY id"
        ).fetchall()
    return [dict(zip(("queue", "task", "lock", "args", "status"), r, strict=True)) for r in rows]


def test_intake_defers_one_locked_job_per_delivery_with_work(postgres_url: str) -> None:
    pg = PgJobJournal.open(postgres_url)
    try:
        now = T0
        for delivery, inst, work in (("a", 11, True), ("b", 12, True), ("c", 11, False), ("a", 11, True)):
            asyncio.run(
                pg.intake_async(Intake(delivery, "issues", "opened", inst, b"{}"), now=now, journal=work)
            )
        retry = pg.retry(["a"])  # not dead: refused, nothing deferred
        assert retry.requeued == []
    finally:
        pg.close()
    assert _jobs(postgres_url) == [
        {
            "queue": QUEUE,
            "task": TASK,
            "lock": "installation:11",
            "args": {"delivery_id": "a"},
            "status": "todo",
        },
        {
            "queue": QUEUE,
            "task": TASK,
            "lock": "installation:12",
            "args": {"delivery_id": "b"},
            "status": "todo",
        },
    ]


def test_a_failed_defer_leaves_no_journal_row(postgres_url: str) -> None:
    """The job insert fails (a trigger refuses it, inside PostgreSQL): the delivery is neither journalled
    nor queued, and the caller gets the error (so the webhook is not acknowledged)."""
    pg = PgJobJournal.open(postgres_url)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            "CREATE FUNCTION refuse_boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
            " IF NEW.args->>'delivery_id' = 'boom' THEN RAISE EXCEPTION 'queue refused'; END IF;"
            " RETURN NEW; END $$;"
            " CREATE TRIGGER refuse_boom BEFORE INSERT ON procrastinate_jobs FOR EACH ROW EXECUTE FUNCTION refuse_boom()"
        )
    try:
        with pytest.raises(psycopg.errors.RaiseException, match="queue refused"):
            pg.intake(Intake("boom", "issues", "opened", 3, b'{"x":1}', "d" * 64), now=T0)
        assert pg.intake(Intake("fine", "issues", "opened", 3, b'{"x":2}'), now=T0) is True
    finally:
        pg.close()
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute("DROP TRIGGER refuse_boom ON procrastinate_jobs; DROP FUNCTION refuse_boom()")
    backend = DbBackend("postgres", None, postgres_url)
    assert backend.rows("jobs", "SELECT delivery_id FROM delivery_journal") == [{"delivery_id": "fine"}]
    assert backend.scalar("jobs", "SELECT COUNT(*) FROM delivery_payloads") == 1
    assert [j["args"] for j in _jobs(postgres_url)] == [{"delivery_id": "fine"}]


def test_open_deliveries_without_a_job_are_queued_once(postgres_url: str) -> None:
    """Rows copied from a SQLite journal (``kodiai db migrate-to-postgres``) have no job: a worker's start
    queues one for each open row, in journal order, and only once."""
    pg = PgJobJournal.open(postgres_url)
    try:
        for delivery, status in (
            ("m-1", "pending"),
            ("m-2", "done"),
            ("m-3", "requeued"),
            ("m-4", "running"),
        ):
            with psycopg.connect(postgres_url, autocommit=True) as conn:
                conn.execute(
                    "INSERT INTO delivery_journal (delivery_id, event_name, installation_id, status, received_at)"
                    " VALUES (%s, 'issues', 5, %s, '2026-01-01T00:00:00+00:00')",
                    (delivery, status),
                )
        assert pg.intake(Intake("fresh", "issues", "opened", 5, b"{}"), now=T0) is True  # has its job
        assert pg.requeue_orphans() == ["m-1", "m-3", "m-4"]
        assert pg.requeue_orphans() == []
    finally:
        pg.close()
    assert [(j["lock"], j["args"]["delivery_id"]) for j in _jobs(postgres_url)] == [
        ("installation:5", d) for d in ("fresh", "m-1", "m-3", "m-4")
    ]


def test_job_ids_of_one_installation_follow_commit_order(postgres_url: str) -> None:
    """A delivery whose transaction is slow after its job got an id (a trigger sleeps in PostgreSQL) holds
    back a later delivery of the same installation until it commits, so the later one is acknowledged
    after it and runs after it; another installation's delivery does not wait."""
    pg = PgJobJournal.open(postgres_url)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            "CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
            " IF NEW.args->>'delivery_id' = 'slow' THEN PERFORM pg_sleep(0.6); END IF; RETURN NEW; END $$;"
            " CREATE TRIGGER slow_commit AFTER INSERT ON procrastinate_jobs FOR EACH ROW EXECUTE FUNCTION slow_commit()"
        )
    acked: list[str] = []

    def deliver(delivery: str, inst: int) -> None:
        assert pg.intake(Intake(delivery, "issues", "opened", inst, delivery.encode()), now=T0) is True
        acked.append(delivery)

    try:
        slow = threading.Thread(target=deliver, args=("slow", 8))
        slow.start()
        time.sleep(0.2)  # "slow" has its job id and sleeps before its commit
        others = [threading.Thread(target=deliver, args=args) for args in (("later", 8), ("elsewhere", 9))]
        for thread in others:
            thread.start()
        for thread in (slow, *others):
            thread.join()
    finally:
        pg.close()
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute("DROP TRIGGER slow_commit ON procrastinate_jobs; DROP FUNCTION slow_commit()")
    assert acked == ["elsewhere", "slow", "later"]
    ids = [j["args"]["delivery_id"] for j in _jobs(postgres_url) if j["lock"] == "installation:8"]
    assert ids == ["slow", "later"]


def test_an_error_quoting_nul_still_finishes_the_delivery(postgres_url: str) -> None:
    """A handler's error may quote payload text holding NUL (valid JSON); PostgreSQL's text refuses it, and
    the delivery must still end ``failed`` (not retried for ever): the journal keeps U+FFFD instead."""
    pg = PgJobJournal.open(postgres_url)
    try:
        assert pg.intake(Intake("nul", "issues", "opened", 1, b"{}"), now=T0) is True
        pg.begin("nul", now=T0)
        pg.finish("nul", now=T0, status="failed", error="review: bad ref 'main\x00'")
        row = pg.get("nul")
    finally:
        pg.close()
    assert row is not None and (row["status"], row["error"]) == ("failed", "review: bad ref 'main\ufffd'")
