"""The job journal and dedup on PostgreSQL (``DATABASE_URL``), feeding the procrastinate queue.

The same tables, columns and statuses as the SQLite journal (:mod:`kodiai.jobs.journal`): one
``delivery_journal`` row per delivery (its id and its body's sha256 are the dedup keys inside the window),
the body zstd-compressed in ``delivery_payloads``. What differs is who runs the work: intake writes the
journal row, the body *and* a procrastinate job (task ``kodiai.run_delivery``, lock
``installation:<id>``) in one transaction, before the webhook is acknowledged; any worker process then runs
it (:mod:`kodiai.jobs.pg_queue`). The job is deferred by calling procrastinate's own SQL function
``procrastinate_defer_jobs_v1`` on the journal's connection, so a delivery is either journalled and queued
or neither.

Order: the transaction first takes ``pg_advisory_xact_lock`` on the installation, so the job ids of one
installation follow commit (acknowledgement) order across every web replica; procrastinate runs the jobs of
one lock strictly in id order, one at a time, across every worker.

Every method is synchronous on a pooled connection (the CLI uses them as they are); the ``*_async`` forms
run them on the journal's own threads, so the event loop never waits on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, Literal, TypeVar

import psycopg
import zstandard
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from kodiai.jobs.journal import DEDUP_WINDOW, EVICT_EVERY, FINISHED_RETENTION, JournalEntry, JournalStatus
from kodiai.jobs.journal_admin import (
    DeliveryRow,
    JournalRecord,
    RetryResult,
    delivery_row,
    journal_record,
    retry_targets,
)
from kodiai.jobs.journal_rows import FINAL_STATUSES, Acceptance, Duplicate, Intake, PayloadCodec, iso
from kodiai.log import get_logger
from kodiai.storage.database import safe_url, to_pyformat

TASK = "kodiai.run_delivery"
QUEUE = "deliveries"
OPEN_STATUSES = ("pending", "running", "requeued")
POOL_MAX = 8
POOL_TIMEOUT = 30.0

T = TypeVar("T")

StalledOutcome = Literal["retried", "dead", "skipped"]


def installation_lock(installation_id: int) -> str:
    """The procrastinate lock (and advisory-lock key) of an installation's deliveries."""
    return f"installation:{int(installation_id)}"


_LOCK_SQL = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"
_DEFER_SQL = (
    "SELECT procrastinate_defer_jobs_v1(ARRAY[ROW(%s, %s, 0, %s, NULL, %s::jsonb, NULL)"
    "::procrastinate_job_to_defer_v1])"
)


@dataclass(frozen=True, slots=True)
class StalledJob:
    """A job of a worker that stopped sending heartbeats (procrastinate's ``doing`` state)."""

    job_id: int
    delivery_id: str


@dataclass
class StalledReport:
    retried: list[str] = field(default_factory=list)
    dead: list[tuple[str, str, int]] = field(default_factory=list)  # (delivery, event name, attempts)


class PgJobJournal:
    """Dedup + journal + queue intake on one PostgreSQL database (a pool of its own)."""

    def __init__(
        self,
        url: str,
        *,
        dedup_window: timedelta = DEDUP_WINDOW,
        queue: str = QUEUE,
        max_size: int = POOL_MAX,
    ) -> None:
        self._safe = safe_url(url)
        self._window = dedup_window
        self.queue = queue
        self._codec = PayloadCodec()
        self._inserts = 0
        self._log = get_logger("kodiai.jobs.journal")
        try:  # before the pool: its warnings quote libpq's parse error, which quotes a bad token (a password)
            conninfo_to_dict(url)
        except psycopg.Error:
            raise ConnectionError(f"cannot connect to {self._safe}: the URL is malformed") from None
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max_size,
            timeout=POOL_TIMEOUT,
            kwargs={"autocommit": True},
            name="kodiai-jobs",
            open=False,
        )
        try:
            self._pool.open(wait=True, timeout=POOL_TIMEOUT)
        except Exception as exc:  # the pool's error text may name the URL: keep to host and database
            self._pool.close()
            raise ConnectionError(f"cannot connect to {self._safe}: {type(exc).__name__}") from None
        self._threads = ThreadPoolExecutor(max_size, thread_name_prefix="kodiai-pg-journal")
        self._closed = False

    @classmethod
    def open(cls, url: str, **kwargs: Any) -> PgJobJournal:
        """Apply the jobs migrations and procrastinate's schema (each once), then open the pool."""
        from kodiai.jobs.pg_schema import ensure_procrastinate_schema
        from kodiai.storage.migrations import apply_postgres_migrations

        apply_postgres_migrations(url, "jobs")
        ensure_procrastinate_schema(url)
        return cls(url, **kwargs)

    def describe(self) -> str:
        return self._safe

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._threads.shutdown(wait=True)
        self._pool.close()

    async def off_loop(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` on the journal's threads (the event loop never waits on PostgreSQL)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._threads, partial(fn, *args, **kwargs))

    @contextmanager
    def _transaction(self) -> Iterator[psycopg.Connection[Any]]:
        with self._pool.connection() as conn, conn.transaction():
            yield conn

    # ------------------------------------------------------------------ intake (web)
    def intake(self, intake: Intake, *, now: datetime, journal: bool = True) -> Acceptance:
        """Dedup, journal and (with work) defer the delivery's job, in one transaction. Raises when the
        delivery could not be recorded (it must not be acknowledged then)."""
        # Pipeline mode: BEGIN, the lock and the digest check go in one round trip, the writes in a second,
        # COMMIT in a third (one statement each would be seven).
        with self._pool.connection() as conn, conn.pipeline(), conn.transaction():
            verdict = self._intake_in(conn, intake, now=now, journal=journal)
        if verdict is True:
            self._inserts += 1
            if self._inserts % EVICT_EVERY == 0:
                try:
                    self.evict(now=now)
                except psycopg.Error as exc:
                    self._log.warning("Job journal upkeep failed", err=f"{type(exc).__name__}: {exc}")
        return verdict

    async def intake_async(self, intake: Intake, *, now: datetime, journal: bool = True) -> Acceptance:
        return await self.off_loop(self.intake, intake, now=now, journal=journal)

    def _intake_in(
        self, conn: psycopg.Connection[Any], intake: Intake, *, now: datetime, journal: bool
    ) -> Acceptance:
        lock = installation_lock(intake.installation_id)
        if journal:  # job ids of one installation follow commit order (see the module docstring)
            conn.execute(_LOCK_SQL, (lock,))
        if intake.digest is not None:
            row = conn.execute(
                "SELECT delivery_id FROM delivery_journal WHERE body_sha256 = %s AND received_at >= %s LIMIT 1",
                (intake.digest, iso(now - self._window)),
            ).fetchone()
            if row is not None and row[0] != intake.delivery_id:
                return Duplicate(of=str(row[0]), by="body")
        # One statement: the journal row, then (with work) its body and its job; nothing for a duplicate id.
        row = conn.execute(
            "WITH j AS (INSERT INTO delivery_journal (delivery_id, event_name, action, installation_id, status,"
            " attempts, received_at, body_sha256) VALUES (%(id)s, %(event)s, %(action)s, %(inst)s, %(status)s, 0,"
            " %(at)s, %(digest)s) ON CONFLICT (delivery_id) DO NOTHING RETURNING seq),"
            " p AS (INSERT INTO delivery_payloads (seq, payload) SELECT seq, %(body)s FROM j WHERE %(work)s"
            " RETURNING seq)"
            " SELECT j.seq, (SELECT procrastinate_defer_jobs_v1(ARRAY[ROW(%(queue)s, %(task)s, 0, %(lock)s, NULL,"
            " %(args)s::jsonb, NULL)::procrastinate_job_to_defer_v1]) FROM p) FROM j",
            {
                "id": intake.delivery_id,
                "event": intake.event_name,
                "action": _pg_text(intake.action),
                "inst": intake.installation_id,
                "status": "pending" if journal else "ignored",
                "at": iso(now),
                "digest": intake.digest,
                "body": self._codec.encode(intake.body) if journal else b"",
                "work": journal,
                "queue": self.queue,
                "task": TASK,
                "lock": lock,
                "args": json.dumps({"delivery_id": intake.delivery_id}),
            },
        ).fetchone()
        if row is None:
            return Duplicate(of=intake.delivery_id, by="id")
        return True

    def _defer_in(self, conn: psycopg.Connection[Any], delivery_id: str, lock: str) -> int:
        row = conn.execute(
            _DEFER_SQL, (self.queue, TASK, lock, json.dumps({"delivery_id": delivery_id}))
        ).fetchone()
        assert row is not None
        return int(row[0][0])

    # ------------------------------------------------------------------ the worker's side
    def begin(self, delivery_id: str, *, now: datetime) -> JournalEntry | None:
        """A job of the delivery starts: count the attempt (status ``running``) and return the delivery,
        or ``None`` when it is no longer open (finished before a worker died, dead, or unknown). A body that
        cannot be read moves the delivery to ``dead`` with the reason."""
        with self._transaction() as conn:
            cur = conn.cursor(row_factory=dict_row)
            row = cur.execute(
                "SELECT j.delivery_id, j.event_name, j.action, j.installation_id, j.status, j.attempts,"
                " j.handlers_done, j.error, p.payload FROM delivery_journal j"
                " LEFT JOIN delivery_payloads p USING (seq) WHERE j.delivery_id = %s FOR UPDATE OF j",
                (delivery_id,),
            ).fetchone()
            if row is None or row["status"] not in OPEN_STATUSES:
                return None
            try:
                if row["payload"] is None:
                    raise ValueError("the stored body is gone")
                payload = self._codec.decode(bytes(row["payload"]))
                if not isinstance(payload, dict):
                    raise ValueError("not a JSON object")
            except (ValueError, UnicodeDecodeError, RecursionError, zstandard.ZstdError) as exc:
                reason = f"stored body unreadable: {type(exc).__name__}: {exc}"[:2000]
                self._log.error(
                    "Stored delivery body unreadable; moved to dead", deliveryId=delivery_id, err=reason
                )
                _finish_in(conn, delivery_id, now, "dead", reason)
                return None
            attempts = conn.execute(
                "UPDATE delivery_journal SET status = 'running', attempts = attempts + 1, started_at = %s"
                " WHERE delivery_id = %s RETURNING attempts",
                (iso(now), delivery_id),
            ).fetchone()
        return JournalEntry(
            delivery_id=row["delivery_id"],
            event_name=row["event_name"],
            action=row["action"],
            installation_id=row["installation_id"],
            payload=payload,
            status="running",
            attempts=int(attempts[0]) if attempts else row["attempts"] + 1,
            handlers_done=json.loads(row["handlers_done"]),
            error=row["error"],
        )

    def mark_handler_done(self, delivery_id: str, handler: str) -> None:
        with self._pool.connection() as conn:
            conn.execute(
                "UPDATE delivery_journal SET handlers_done = (handlers_done::jsonb || to_jsonb(%s::text))::text"
                " WHERE delivery_id = %s AND NOT jsonb_exists(handlers_done::jsonb, %s)",
                (handler, delivery_id, handler),
            )

    def finish(
        self, delivery_id: str, *, now: datetime, status: JournalStatus = "done", error: str | None = None
    ) -> None:
        """Final status; a finished delivery's stored body is dropped with it (a dead one keeps it)."""
        with self._transaction() as conn:
            _finish_in(conn, delivery_id, now, status, error)

    def release(self, delivery_id: str) -> None:
        """A graceful shutdown cut the attempt, not the job: give it back (status ``pending``)."""
        with self._pool.connection() as conn:
            conn.execute(
                "UPDATE delivery_journal SET status = 'pending', attempts = GREATEST(attempts - 1, 0)"
                " WHERE delivery_id = %s AND status = 'running'",
                (delivery_id,),
            )

    def settle_stalled(
        self, jobs: list[StalledJob], *, max_attempts: int, now: datetime, stalled_seconds: float = 30.0
    ) -> StalledReport:
        """Jobs of dead workers: retried (back to ``todo``, same lock and place in line), or, for a delivery
        whose job was running ``max_attempts`` times when its worker died, ``dead`` in the journal and
        ``failed`` in the queue — each in one transaction with the journal row.

        ``jobs`` is a list taken earlier, and another worker's check may have acted on it since (the job
        retried, then taken by a live worker): each job is tested again under its row lock — still
        ``doing``, its worker gone or silent for ``stalled_seconds`` — else it is left to whoever runs it."""
        from kodiai.jobs.dispatcher import dead_letter_error

        report = StalledReport()
        for job in jobs:
            try:
                with self._transaction() as conn:
                    still = conn.execute(
                        "SELECT 1 FROM procrastinate_jobs q LEFT JOIN procrastinate_workers w ON w.id = q.worker_id"
                        " WHERE q.id = %s AND q.status = 'doing' AND (q.worker_id IS NULL"
                        " OR w.last_heartbeat < now() - make_interval(secs => %s)) FOR UPDATE OF q",
                        (job.job_id, float(stalled_seconds)),
                    ).fetchone()
                    if still is None:
                        continue
                    row = conn.execute(
                        "SELECT status, attempts, event_name, error FROM delivery_journal"
                        " WHERE delivery_id = %s FOR UPDATE",
                        (job.delivery_id,),
                    ).fetchone()
                    if row is not None and row[0] == "running" and int(row[1]) >= max_attempts:
                        error = dead_letter_error(int(row[1]), row[3])
                        _finish_in(conn, job.delivery_id, now, "dead", error)
                        conn.execute("SELECT procrastinate_finish_job_v1(%s, 'failed', false)", (job.job_id,))
                        report.dead.append((job.delivery_id, str(row[2]), int(row[1])))
                    else:  # a finished row is seen by the task, which then returns at once
                        conn.execute(
                            "SELECT procrastinate_retry_job_v2(%s, now(), NULL, NULL, NULL)", (job.job_id,)
                        )
                        report.retried.append(job.delivery_id)
            except psycopg.Error as exc:  # another worker's check took it first: nothing to do
                self._log.info(
                    "Stalled job already handled",
                    jobId=job.job_id,
                    deliveryId=job.delivery_id,
                    err=str(exc)[:200],
                )
        return report

    def requeue_orphans(self) -> list[str]:
        """Open deliveries with no job to run them (rows copied from a SQLite journal by ``kodiai db
        migrate-to-postgres``, or a job deleted by hand): queue one each, oldest first, under the
        installation's lock. Intake and retry write a row and its job together, so a running system has
        none; two workers starting at once do this one after the other (an advisory lock)."""
        queued: list[str] = []
        with self._transaction() as conn:
            conn.execute(_LOCK_SQL, ("kodiai:requeue-orphans",))
            rows = conn.execute(
                "SELECT j.delivery_id, j.installation_id FROM delivery_journal j"
                " WHERE j.status IN ('pending', 'running', 'requeued') AND NOT EXISTS (SELECT 1 FROM"
                " procrastinate_jobs q WHERE q.task_name = %s AND q.args->>'delivery_id' = j.delivery_id"
                " AND q.status IN ('todo', 'doing')) ORDER BY j.seq",
                (TASK,),
            ).fetchall()
            for delivery, installation in rows:
                lock = installation_lock(int(installation))
                conn.execute(_LOCK_SQL, (lock,))
                self._defer_in(conn, str(delivery), lock)
                queued.append(str(delivery))
        return queued

    # ------------------------------------------------------------------ reads and upkeep
    def get(self, delivery_id: str) -> JournalRecord | None:
        with self._pool.connection() as conn:
            row = (
                conn.cursor(row_factory=dict_row)
                .execute(
                    "SELECT * FROM delivery_journal WHERE delivery_id = %s AND status != 'ignored'",
                    (delivery_id,),
                )
                .fetchone()
            )
        return journal_record(row) if row else None

    def seen(self, delivery_id: str) -> bool:
        with self._pool.connection() as conn:
            return (
                conn.execute(
                    "SELECT 1 FROM delivery_journal WHERE delivery_id = %s", (delivery_id,)
                ).fetchone()
                is not None
            )

    def counts(self) -> dict[str, int]:
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT status, COUNT(*) FROM delivery_journal WHERE status != 'ignored' GROUP BY status"
            ).fetchall()
        return {str(s): int(n) for s, n in rows}

    def open_counts(self) -> dict[str, int]:
        """Deliveries pending, running, requeued and dead (the journal's open-rows index; for /metrics)."""
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT status, COUNT(*) FROM delivery_journal"
                " WHERE status IN ('pending', 'running', 'requeued', 'dead') GROUP BY status"
            ).fetchall()
        return {str(s): int(n) for s, n in rows}

    def queue_counts(self) -> dict[str, int]:
        """procrastinate jobs of the deliveries queue by state (todo, doing, failed, …)."""
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT status::text, COUNT(*) FROM procrastinate_jobs WHERE queue_name = %s GROUP BY status",
                (self.queue,),
            ).fetchall()
        return {str(s): int(n) for s, n in rows}

    def ping(self) -> None:
        """Raises when PostgreSQL cannot be reached (readiness)."""
        with self._pool.connection(timeout=5.0) as conn:
            conn.execute("SELECT 1")

    def evict(self, *, now: datetime) -> int:
        """As the SQLite journal's: ids past the dedup window, finished rows past their retention, bodies of
        rows no longer open or dead; and the queue's failed jobs of deliveries no longer dead."""
        cutoff = iso(now - self._window)
        finished_cutoff = iso(now - max(FINISHED_RETENTION, self._window))
        with self._transaction() as conn:
            removed = conn.execute(
                "DELETE FROM delivery_journal WHERE received_at < %s AND status = 'ignored'", (cutoff,)
            ).rowcount
            removed += conn.execute(
                "DELETE FROM delivery_journal WHERE received_at < %s AND status IN ('done', 'failed', 'abandoned')",
                (finished_cutoff,),
            ).rowcount
            conn.execute(
                "DELETE FROM delivery_payloads p WHERE NOT EXISTS (SELECT 1 FROM delivery_journal j"
                " WHERE j.seq = p.seq AND j.status IN ('pending', 'running', 'requeued', 'dead'))"
            )
            conn.execute(
                "DELETE FROM procrastinate_jobs q WHERE q.task_name = %s"
                " AND q.status IN ('failed', 'cancelled', 'aborted', 'succeeded') AND NOT EXISTS"
                " (SELECT 1 FROM delivery_journal j WHERE j.delivery_id = q.args->>'delivery_id' AND j.status = 'dead')",
                (TASK,),
            )
        return int(removed)

    # ------------------------------------------------------------------ operators (kodiai jobs)
    def list_deliveries(self, states: tuple[str, ...], *, limit: int) -> list[DeliveryRow]:
        from kodiai.jobs.journal_admin import _COLUMNS

        with self._pool.connection() as conn:
            rows = (
                conn.cursor(row_factory=dict_row)
                .execute(
                    f"SELECT {_COLUMNS} FROM delivery_journal WHERE status = ANY(%s) ORDER BY seq DESC LIMIT %s",
                    (list(states), int(limit)),
                )
                .fetchall()
            )
        return [delivery_row(r) for r in rows]

    def retry(self, delivery_ids: list[str], *, all_dead: bool = False) -> RetryResult:
        """Dead deliveries (named, or all) back in the queue: status ``requeued``, attempts reset, and a new
        job deferred under the installation's lock, in one transaction."""
        result = RetryResult()
        with self._transaction() as conn:
            targets = retry_targets(
                lambda sql, params: conn.execute(to_pyformat(sql), params).fetchall(),
                delivery_ids,
                all_dead,
                result,
            )
            for delivery in targets:
                row = conn.execute(
                    "SELECT installation_id FROM delivery_journal WHERE delivery_id = %s", (delivery,)
                ).fetchone()
                assert row is not None
                lock = installation_lock(int(row[0]))
                conn.execute(_LOCK_SQL, (lock,))
                requeued = conn.execute(
                    "UPDATE delivery_journal SET status = 'requeued', attempts = 0, finished_at = NULL"
                    " WHERE delivery_id = %s AND status = 'dead'",
                    (delivery,),
                ).rowcount
                if not requeued:  # another retry (a second shell, --all-dead) took it while we waited
                    result.refused[delivery] = "not dead (retried by another request meanwhile)"
                    continue
                self._defer_in(conn, delivery, lock)
                result.requeued.append(delivery)
        return result


def _finish_in(
    conn: psycopg.Connection[Any], delivery_id: str, now: datetime, status: str, error: str | None
) -> None:
    conn.execute(
        "UPDATE delivery_journal SET status = %s, finished_at = %s, error = %s WHERE delivery_id = %s",
        (status, iso(now), _pg_text(error), delivery_id),  # a handler's error may quote NUL from a payload
    )
    if status in FINAL_STATUSES:
        conn.execute(
            "DELETE FROM delivery_payloads WHERE seq = (SELECT seq FROM delivery_journal WHERE delivery_id = %s)",
            (delivery_id,),
        )


def _pg_text(text: str | None) -> str | None:
    """PostgreSQL's text refuses NUL, which valid JSON may carry (``"action": "opened\\u0000"``): the
    journal's copy of the action gets U+FFFD instead, so such a delivery is recorded, not answered 500."""
    return text.replace("\x00", "\ufffd") if text and "\x00" in text else text


def utcnow() -> datetime:
    return datetime.now(UTC)
