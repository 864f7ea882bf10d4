"""The queue on PostgreSQL through real ``kodiai serve`` processes.

- ``--role web`` and ``--role worker``, two processes on one database: a signed delivery sent to the web
  replica is acknowledged there and run by the worker (the web replica runs no job; the worker serves only
  ``/health`` and ``/metrics``); SIGTERM to the worker under a running job gives the attempt back and puts
  the job back in the queue.
- Worker processes killed (``kill -9``) under a running job: the stalled-job check puts it back in line for
  the next worker; a delivery whose job was running when its worker died three times is ``dead``
  (journal) and ``failed`` (queue), and the installation's next delivery then runs.
"""

from __future__ import annotations

import json
import signal
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import psycopg

from kodiai.jobs.journal_rows import Intake
from kodiai.jobs.pg_journal import PgJobJournal
from support.fake_github import FakeGitHub
from support.kodiai_process import KodiaiServe, wait_until

QUEUE_ENV = {
    "WORKER_HEARTBEAT_SECONDS": "0.5",
    "WORKER_STALLED_SECONDS": "2",
    "WORKER_POLL_SECONDS": "0.2",
    "SHUTDOWN_GRACE_SECONDS": "0.5",
}


def _serve(
    tmp: Path, name: str, fake: FakeGitHub, url: str, role: str, record: Path, **env: str
) -> KodiaiServe:
    home = tmp / name
    home.mkdir()
    return KodiaiServe(
        home,
        fake,
        handlers="crash_handlers:register",
        args=("--role", role),
        DATABASE_URL=url,
        KODIAI_TEST_RECORD_FILE=str(record),
        **QUEUE_ENV,
        **env,
    )


def _row(url: str, delivery: str) -> tuple[Any, ...] | None:
    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT status, attempts FROM delivery_journal WHERE delivery_id = %s", (delivery,)
        ).fetchone()


def _job(url: str, delivery: str) -> str | None:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT status::text FROM procrastinate_jobs WHERE args->>'delivery_id' = %s ORDER BY id DESC LIMIT 1",
            (delivery,),
        ).fetchone()
    return str(row[0]) if row else None


def _recorded(record: Path) -> list[str]:
    return record.read_text().split() if record.exists() else []


def test_web_and_worker_replicas_complete_a_signed_delivery(
    tmp_path: Path, fake: FakeGitHub, postgres_url: str
) -> None:
    record = tmp_path / "record.txt"
    memory = tmp_path / "web-memory.lance"
    web = (
        _serve(  # learned memory configured: a web replica runs no job, so it opens neither it nor the model
            tmp_path,
            "web",
            fake,
            postgres_url,
            "web",
            record,
            EMBEDDING_PROVIDER="local",
            LEARNING_MEMORY_URI=str(memory),
        )
    )
    worker = _serve(tmp_path, "worker", fake, postgres_url, "worker", record, KODIAI_TEST_BLOCK="1")
    web.start()
    try:
        body = json.dumps({"action": "opened", "installation": {"id": 1}, "issue": {"number": 1}}).encode()
        assert web.deliver(body, "split-1").status_code == 200
        assert web.get("/readiness").status_code == 200
        wait_until(lambda: _job(postgres_url, "split-1") == "todo", 10, "the job queued by the web replica")
        assert _recorded(record) == []  # a web replica runs no job
        worker.start()
        wait_until(lambda: _recorded(record) == ["split-1"], 60, "the worker to run the job", worker)
        wait_until(lambda: _row(postgres_url, "split-1") == ("done", 1), 30, "done in the journal", worker)
        metrics = web.get("/metrics").text
        assert 'kodiai_journal_deliveries{status="pending"} 0.0' in metrics
        assert 'kodiai_queue_jobs{state="todo"} 0.0' in metrics
        assert worker.get("/health").status_code == 200
        assert "kodiai_queue_jobs" in worker.get("/metrics").text
        assert worker.get("/readiness").status_code == 404  # a worker takes no webhooks
        assert httpx.post(f"{worker.url}/webhooks/github", content=body, timeout=10).status_code == 404

        blocked = json.dumps({"action": "opened", "installation": {"id": 1}, "block": True}).encode()
        assert web.deliver(blocked, "blocked-1").status_code == 200
        wait_until(lambda: _row(postgres_url, "blocked-1") == ("running", 1), 30, "the blocked job", worker)
        assert worker.stop(signal.SIGTERM) == 0  # graceful: the attempt is given back, the job queued again
        assert _row(postgres_url, "blocked-1") == ("pending", 0)
        assert _job(postgres_url, "blocked-1") == "todo"
    finally:
        web.stop()
        worker.stop()
    assert "Job journal and queue on PostgreSQL" in web.log_text()
    assert not memory.exists() and "Embedding provider initialized" not in web.log_text()
    assert "Queue worker started" in worker.log_text()
    assert "Review path warmed up" in worker.log_text()  # a web replica only routes: nothing to warm
    assert "Review path warmed up" not in web.log_text() and "Queue worker started" not in web.log_text()
    assert "Job interrupted by shutdown; back in the queue for another worker" in worker.log_text()


def test_killed_workers_lose_attempts_until_dead(tmp_path: Path, fake: FakeGitHub, postgres_url: str) -> None:
    record = tmp_path / "record.txt"
    journal = PgJobJournal.open(postgres_url)
    try:
        blocked = json.dumps({"action": "opened", "installation": {"id": 1}, "block": True}).encode()
        after = json.dumps({"action": "opened", "installation": {"id": 1}, "n": 2}).encode()
        now = datetime.now(UTC)
        assert journal.intake(Intake("poison", "issues", "opened", 1, blocked), now=now) is True
        assert journal.intake(Intake("after", "issues", "opened", 1, after), now=now) is True
    finally:
        journal.close()

    workers = [
        _serve(tmp_path, f"w{i}", fake, postgres_url, "worker", record, KODIAI_TEST_BLOCK="1")
        for i in range(4)
    ]
    _start_together(workers)  # they boot side by side; whichever is free takes the job
    try:
        for attempt in (1, 2, 3):
            holder = _holder(workers, attempt)
            wait_until(
                lambda a=attempt: _row(postgres_url, "poison") == ("running", a), 30, f"attempt {attempt}"
            )
            holder.stop(signal.SIGKILL)  # the worker dies under the job
        last = next(w for w in workers if w.alive())
        wait_until(lambda: _row(postgres_url, "poison") == ("dead", 3), 30, "dead after 3", last)
        assert _job(postgres_url, "poison") == "failed"
        wait_until(lambda: _recorded(record) == ["after"], 30, "the installation's next delivery", last)
        wait_until(lambda: _row(postgres_url, "after") == ("done", 1), 30, "done", last)
    finally:
        for worker in workers:
            worker.stop(signal.SIGKILL)
    logs = "".join(w.log_text() for w in workers)
    assert logs.count("Job of a stopped worker put back in the queue") == 2  # after kills 1 and 2
    dead = [
        json.loads(line) for line in logs.splitlines() if "Delivery moved to the dead-letter state" in line
    ]
    assert len(dead) == 1 and dead[0]["deliveryId"] == "poison" and dead[0]["attempts"] == 3


def _start_together(workers: list[KodiaiServe], timeout: float = 120) -> None:
    for worker in workers:
        worker.ready = (200,)  # started once /health is 200
        worker.spawn()

    def ready() -> bool:
        return all([w.port != 0 or w.started() for w in workers])  # a list: each one looked at every time

    wait_until(ready, timeout, "the workers to start")


def _dispatches(worker: KodiaiServe) -> int:
    """How often this worker started the poison delivery's handlers."""
    return sum(
        1
        for line in worker.log_lines()
        if line.get("msg") == "Router evaluated dispatch keys" and line.get("deliveryId") == "poison"
    )


def _holder(workers: list[KodiaiServe], total: int) -> KodiaiServe:
    """The live worker running the poison delivery once it has been dispatched ``total`` times in all."""
    found: list[KodiaiServe] = []

    def seen() -> bool:
        counts = [(w, _dispatches(w)) for w in workers]
        found[:] = [w for w, n in counts if n and w.alive()]
        return sum(n for _, n in counts) >= total and len(found) == 1

    wait_until(seen, 60, f"dispatch {total} of the poison delivery")
    return found[0]
