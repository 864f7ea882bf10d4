"""The durable side of webhook intake: delivery dedup and the job journal, in one SQLite file.

A delivery is *accepted* by appending one row to ``delivery_journal`` (its id is the dedup key, kept
≥ 24 h; the sha256 of its body is a second dedup key inside the same window) and, when it has work to do,
its body to ``delivery_payloads``, in one transaction. This happens before the webhook is acknowledged, so
a crash or a deploy after the 200 loses nothing: unfinished rows are replayed at start-up. Handlers that
already finished for a delivery are recorded individually and skipped on replay. On a full disk those
completion marks are saved in space reserved ahead (:mod:`kodiai.jobs.journal_reserve`) until the journal
takes them, and a start applies what a stopped process left there before it replays anything.

What is promised is *at least once*: a job whose completion was not yet written when the process died
runs again, and the handlers' effects are idempotent (the review output marker, the write key). An
attempt is counted when a job of the delivery starts (status ``running``), not at intake or replay; a
delivery whose job was running every time the process died, ``MAX_ATTEMPTS`` times, becomes ``dead``
(kept with its body and error; ``kodiai jobs retry`` puts it back as ``requeued``).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import zstandard
from pydantic import BaseModel, Field

from kodiai.jobs.journal_admin import JournalRecord, journal_record
from kodiai.jobs.journal_guard import (
    FileIdentity,
    JournalDamagedError,
    JournalUnavailableError,
    damaged_message,
    detach,
    ensure_identity,
    integrity_problem,
    is_corruption,
    rescue_copy,
    write_sidecar,
)
from kodiai.jobs.journal_reserve import Mark, MarkReserve
from kodiai.jobs.journal_rows import (
    FINAL_STATUSES,
    Acceptance,
    Duplicate,
    Intake,
    PayloadCodec,
    accept_in,
    adopt_first_schema_rows,
    claim_requeued_in,
    finish_in,
    iso,
    mark_done_in,
    payload_bytes,
    release_in,
    start_in,
)
from kodiai.jobs.journal_writer import Checkpointer, JournalWriter, WriteOp, is_write_failure
from kodiai.log import get_logger
from kodiai.storage.connection import MEMORY, LockedConnection, connect
from kodiai.storage.migrations import apply_migrations_to

if TYPE_CHECKING:
    from kodiai.metrics import Metrics

DEDUP_WINDOW = timedelta(hours=24)
FINISHED_RETENTION = timedelta(days=7)
EVICT_EVERY = 1000
WAL_LIMIT_BYTES = 16 * 1024 * 1024  # a TRUNCATE checkpoint once the WAL passes this (and journal_size_limit)
TRUNCATE_BUSY_MS = 250  # how long a TRUNCATE checkpoint may wait for readers (intake waits meanwhile)
TRUNCATE_RETRY_SECONDS = 0.5  # or sooner, once the WAL grew by another limit's worth
PROBE_BYTES = 64 * 1024  # several intakes' worth of WAL (see _probe)
RESERVE_RETRY_SECONDS = 1.0  # while the reserve file cannot be made, how often to try again

__all__ = [
    "FINAL_STATUSES",
    "Acceptance",
    "Duplicate",
    "Intake",
    "JobJournal",
    "JournalEntry",
    "JournalHealth",
    "PayloadCodec",
]

JournalStatus = Literal["pending", "running", "requeued", "done", "failed", "dead", "abandoned"]
OPEN_STATUSES = ("pending", "running", "requeued")  # replayed at start-up


@dataclass(frozen=True, slots=True)
class JournalHealth:
    """``ok``; ``failing`` (writes fail now, e.g. a full disk: not ready, nothing lost in memory yet);
    ``damaged`` (corrupt, deleted or replaced: every new delivery would fail; the process must be
    restarted on a sound file); ``unreserved`` (writes work, but the reserve file for completion marks
    could not be made: on a full disk finished jobs would run again after a restart)."""

    state: Literal["ok", "failing", "damaged", "unreserved"]
    reason: str | None = None
    held_back: int = 0


class JournalEntry(BaseModel):
    """One journaled delivery."""

    delivery_id: str
    event_name: str
    action: str | None = None
    installation_id: int = 0
    payload: dict[str, Any]
    status: JournalStatus = "pending"
    attempts: int = 0
    handlers_done: list[str] = Field(default_factory=list)
    error: str | None = None


class JobJournal:
    """Dedup + journal over one locked SQLite connection (see :mod:`kodiai.storage.connection`)."""

    def __init__(
        self,
        conn: LockedConnection,
        *,
        dedup_window: timedelta = DEDUP_WINDOW,
        path: str | Path | None = None,
        wal_limit_bytes: int = WAL_LIMIT_BYTES,
        truncate_retry_seconds: float = TRUNCATE_RETRY_SECONDS,
    ) -> None:
        self._db = conn
        self._path = path
        self._checkpointer: Checkpointer | None = None
        self._window = dedup_window
        self._inserts = 0
        self._writer: JournalWriter | None = None
        self._pending_evict = False
        self._codec = PayloadCodec()
        self._log = get_logger("kodiai.jobs.journal")
        self._metrics: Metrics | None = None
        self._identity = FileIdentity.of(path) if path is not None and str(path) != MEMORY else None
        self._instance = ""
        self._companions: list[FileIdentity] = []  # this process's -wal and -shm (see journal_guard.detach)
        self._damaged: str | None = None
        self._rescued = False
        self._wal = Path(f"{path}-wal") if self._identity is not None else None
        self._wal_limit = wal_limit_bytes
        self._truncate_retry = truncate_retry_seconds
        self._truncate_after = 0.0
        self._truncate_at_bytes = 0
        self._reserve: MarkReserve | None = None
        self._unapplied: list[Mark] = []  # found in the reserve at open, not yet in the journal
        self._saved = 0  # held-back completions saved in the reserve and not yet landed (writer thread)
        self._reserve_tried = 0.0
        self._reserve_missing = False  # its absence was logged

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        dedup_window: timedelta = DEDUP_WINDOW,
        wal_limit_bytes: int = WAL_LIMIT_BYTES,
        truncate_retry_seconds: float = TRUNCATE_RETRY_SECONDS,
    ) -> JobJournal:
        """Open (creating) the jobs database: integrity check, ``migrations/jobs``, rows left in the tables
        of the first schema moved across, and the journal's identity checked against the copy beside it.

        Raises :class:`~kodiai.jobs.journal_guard.JournalDamagedError` (one line) on a damaged, missing
        or swapped journal.
        """
        created = str(path) == MEMORY or not Path(path).exists() or Path(path).stat().st_size == 0
        try:
            raw = connect(path)
        except sqlite3.DatabaseError as exc:
            if is_corruption(exc):
                raise JournalDamagedError(damaged_message(path, str(exc))) from None
            raise
        try:
            problem = integrity_problem(raw)
            if problem is not None:
                raise JournalDamagedError(damaged_message(path, f"PRAGMA quick_check: {problem}"))
            apply_migrations_to(raw, "jobs")
            if raw.in_transaction:  # on a full disk the migration runner's lock row leaves its failed one open
                raw.execute("ROLLBACK")
            adopt_first_schema_rows(raw)
            instance = ensure_identity(raw, path, created=created)
            raw.execute(f"PRAGMA journal_size_limit={int(wal_limit_bytes)}")
        except sqlite3.DatabaseError as exc:
            raw.close()
            if is_corruption(exc):
                raise JournalDamagedError(damaged_message(path, str(exc))) from None
            raise
        except BaseException:
            raw.close()
            raise
        journal = cls(
            LockedConnection(raw),
            dedup_window=dedup_window,
            path=path,
            wal_limit_bytes=wal_limit_bytes,
            truncate_retry_seconds=truncate_retry_seconds,
        )
        journal._instance = instance
        journal._companions = [
            c for c in (FileIdentity.of(f"{path}-wal"), FileIdentity.of(f"{path}-shm")) if c
        ]
        if str(path) != MEMORY:
            journal._reserve = MarkReserve(path).load()
            journal._apply_reserved()
        return journal

    def _apply_reserved(self) -> None:
        """At open: the completion marks a stopped process saved in the reserve go into the journal first,
        so nothing they cover is replayed. On a journal that still cannot write they are kept in memory
        (:meth:`unfinished` honours them) and handed to the writer when it starts."""
        reserve = self._reserve
        if reserve is None or not reserve.found:
            return
        marks = reserve.found
        deliveries = sorted({m.delivery_id for m in marks})
        try:
            with self._transaction() as conn:
                for mark in marks:
                    apply_mark(conn, mark)
        except sqlite3.DatabaseError as exc:
            if not is_write_failure(exc) or is_corruption(exc):
                raise
            self._unapplied = list(marks)
            self._log.warning(
                "Completion marks from the journal's reserve file cannot be written yet; kept in memory",
                reserve=str(reserve.path),
                deliveries=deliveries[:50],
                err=f"{type(exc).__name__}: {exc}",
            )
            return
        reserve.clear()
        self._log.info(
            "Applied completion marks saved in the journal's reserve file while the disk was full",
            reserve=str(reserve.path),
            marks=len(marks),
            deliveries=deliveries[:50],
        )

    @property
    def path(self) -> str | Path | None:
        return self._path

    def close(self) -> None:
        """Stop the writer (after it applies what is queued), then close the connection."""
        if self._writer is not None:
            self._writer.stop()
            self._writer = None
        if self._checkpointer is not None:
            self._checkpointer.stop()
            self._checkpointer = None
        if self._reserve is not None:
            self._reserve.close()
        if self._rescued and self._path is not None:  # what finished since the first copy: a final one
            try:
                with self._db.lock:
                    copy = rescue_copy(self._db.raw, self._path)
                self._log.error("Job journal rescue copy saved at shutdown", rescuedCopy=str(copy))
            except (OSError, sqlite3.Error) as exc:
                self._log.error("Job journal rescue copy failed", err=f"{type(exc).__name__}: {exc}")
        self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``; a failed COMMIT (a full disk fails there, when the WAL grows)
        is rolled back too, so the connection is never left inside a transaction."""
        with self._db.lock:
            conn = self._db.raw
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    with suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                raise

    # ------------------------------------------------------------------ health
    def health(self) -> JournalHealth:
        """What ``/health`` and ``/readiness`` report about the journal."""
        if self._damaged is not None:
            return JournalHealth("damaged", self._damaged)
        if self._identity is not None:
            problem = self._identity.problem()
            if problem is not None:
                return JournalHealth("damaged", problem)
        writer = self._writer
        if writer is not None and (writer.failure is not None or writer.backlog):
            reason = writer.failure or "held-back writes not yet applied"
            return JournalHealth("failing", reason, writer.backlog)
        if writer is not None and self._reserve is not None and self._reserve.problem is not None:
            return JournalHealth("unreserved", self._reserve.problem)
        return JournalHealth("ok")

    def _check_file(self) -> None:
        """Before each batch and on idle ticks (writer thread): notice a journal deleted or replaced under us."""
        if self._damaged is not None or self._identity is None:
            return
        problem = self._identity.problem()
        if problem is not None:
            self._mark_damaged(problem, rescue=True)

    def _mark_damaged(self, reason: str, *, rescue: bool = False) -> None:
        if self._damaged is not None:
            return
        self._damaged = reason
        rescued: str | None = None
        detached: list[str] = []
        if rescue and self._path is not None:
            try:
                with self._db.lock:
                    rescued = str(rescue_copy(self._db.raw, self._path))
                self._rescued = True
                detached = detach(self._companions)  # never to be applied to another file at the path
                write_sidecar(self._path, self._instance)  # a restart on an empty file must not pass silently
            except (OSError, sqlite3.Error) as exc:
                self._log.error("Job journal rescue copy failed", err=f"{type(exc).__name__}: {exc}")
        self._log.error(
            "Job journal damaged; refusing new deliveries (jobs already accepted keep running)",
            reason=reason,
            rescuedCopy=rescued,
            detached=detached,
            hint="see docs/operations.md, 'Job journal damage'",
        )

    def _on_write_failure(self, exc: BaseException) -> None:
        if self._metrics is not None:
            self._metrics.journal_write_failures.inc()
        if is_corruption(exc):
            self._mark_damaged(f"job journal {self._path} is damaged: {exc}")

    # ------------------------------------------------------------------ intake
    def accept(
        self,
        entry: JournalEntry,
        *,
        now: datetime,
        journal: bool = True,
        raw_payload: bytes | str | None = None,
        started: bool = False,
    ) -> bool:
        """Remember the delivery id and (if ``journal``) journal the event; False if already seen.

        ``raw_payload`` is the body as received (stored verbatim, no re-serialisation; else the entry's
        payload is serialised); ``started`` records an attempt at once (status ``running``).
        """
        intake = Intake(
            entry.delivery_id,
            entry.event_name,
            entry.action,
            entry.installation_id,
            payload_bytes(entry.payload, raw_payload),
        )
        return bool(self._accept_now(intake, now=now, journal=journal, started=started))

    def _accept_now(self, intake: Intake, *, now: datetime, journal: bool, started: bool) -> Acceptance:
        """Intake in its own transaction (no writer), evicting every ``EVICT_EVERY`` acceptances."""
        with self._transaction() as conn:
            verdict = self._intake_in(conn, intake, now=now, journal=journal, started=started)
        if verdict is True and self._bump():
            self.evict(now=now)
        return verdict

    # ------------------------------------------------------------------ group commit (server use)
    def start_writer(self, metrics: Metrics | None = None) -> None:
        """Route the ``*_async``/``*_later`` methods through the group-commit writer thread, and move WAL
        checkpoints off this connection onto a thread of their own (see :mod:`kodiai.jobs.journal_writer`)."""
        self._metrics = metrics
        if self._writer is None:
            backlog = metrics.journal_held_back_writes.set if metrics is not None else None
            self._keep_reserve(force=True)
            self._writer = JournalWriter(
                self._apply_batch,
                probe=self._probe,
                idle=self._idle,
                on_failure=self._on_write_failure,
                on_backlog=backlog,
                hold=self._hold_marks,
                landed=self._marks_landed,
            )
            self._saved += len(self._unapplied)  # already in the reserve: cleared once they land
            for mark in self._unapplied:
                self._writer.submit(
                    partial(apply_mark, mark=mark),
                    wait=False,
                    retry=True,
                    label=mark_label(mark),
                    mark=mark,
                    saved=True,
                )
        if self._checkpointer is None and self._path is not None and str(self._path) != MEMORY:
            self._db.execute("PRAGMA wal_autocheckpoint=0")
            self._checkpointer = Checkpointer(self._path)

    async def accept_async(self, intake: Intake, *, now: datetime, journal: bool = True) -> bool:
        """Accept through the writer; resolves after the COMMIT. False for a duplicate."""
        return bool(await self.intake_async(intake, now=now, journal=journal))

    async def intake_async(self, intake: Intake, *, now: datetime, journal: bool = True) -> Acceptance:
        """:meth:`accept_async` that says what a duplicate duplicates (by id, or by body digest).

        Raises the write's error when the delivery could not be recorded (the caller must not acknowledge
        it), :class:`~kodiai.jobs.journal_guard.JournalUnavailableError` when the journal is damaged.
        """
        if self._writer is None:
            if self._damaged is not None:
                raise JournalUnavailableError(self._damaged)
            return self._accept_now(intake, now=now, journal=journal, started=False)

        def apply(conn: sqlite3.Connection) -> Acceptance:
            verdict = self._intake_in(conn, intake, now=now, journal=journal, started=False)
            self._pending_evict = self._pending_evict or (verdict is True and self._bump())
            return verdict

        future = self._writer.submit(apply, wait=True, intake=True, label=f"intake {intake.delivery_id}")
        assert future is not None
        result: Acceptance = await future
        return result

    def finish_later(
        self, delivery_id: str, *, now: datetime, status: JournalStatus = "done", error: str | None = None
    ) -> None:
        """Queue :meth:`finish` behind the intake writes (no waiting; ordering is kept; retried until it
        lands)."""
        if self._writer is None:
            self.finish(delivery_id, now=now, status=status, error=error)
            return
        mark = Mark(delivery_id, "finish", status, error, iso(now))
        self._writer.submit(
            partial(apply_mark, mark=mark), wait=False, retry=True, label=mark_label(mark), mark=mark
        )

    def mark_handler_done_later(self, delivery_id: str, handler: str) -> None:
        if self._writer is None:
            self.mark_handler_done(delivery_id, handler)
            return
        mark = Mark(delivery_id, "handler", handler=handler)
        self._writer.submit(
            partial(apply_mark, mark=mark), wait=False, retry=True, label=mark_label(mark), mark=mark
        )

    async def start_attempt_async(self, delivery_id: str, *, now: datetime) -> int:
        """A job of the delivery is starting: count the attempt (status ``running``) before it runs.

        Returns the attempt number. When the write fails it is held back and retried (the job still
        runs: the delivery was acknowledged), and the error is raised to the caller for its log.
        """
        if self._writer is None:
            return self.start_attempt(delivery_id, now=now)
        future = self._writer.submit(
            lambda conn: start_in(conn, delivery_id, now),
            wait=True,
            retry=True,
            label=f"attempt {delivery_id}",
        )
        assert future is not None
        attempts: int = await future
        return attempts

    def release_attempt_later(self, delivery_id: str) -> None:
        """The attempt was cut by a graceful shutdown, not by the job: give it back (status ``pending``)."""
        if self._writer is None:
            with self._transaction() as conn:
                release_in(conn, delivery_id)
            return
        self._writer.submit(
            lambda conn: release_in(conn, delivery_id),
            wait=False,
            retry=True,
            label=f"release {delivery_id}",
        )

    async def claim_requeued_async(self) -> list[JournalEntry]:
        """Deliveries ``kodiai jobs retry`` put back (status ``requeued``), now marked ``pending`` and
        returned for dispatch; claimed in one write, so two servers never both take one."""
        if self._writer is None:
            with self._transaction() as conn:
                rows = claim_requeued_in(conn)
        else:
            future = self._writer.submit(claim_requeued_in, wait=True, label="claim requeued")
            assert future is not None
            rows = await future
        return [entry for entry, _problem in self._entries(rows) if entry is not None]

    def _bump(self) -> bool:
        self._inserts += 1
        return self._inserts % EVICT_EVERY == 0

    def _apply_batch(self, ops: list[WriteOp]) -> None:
        """Group commit: every op in one transaction; one failure stays local to its op.

        The batch is first applied without savepoints (two statements less per op, measured with
        benchmarks/webhook.py). If any op raises, that transaction is rolled back whole and the batch is
        applied again with one savepoint per op. Ops only run SQL (their rolled-back first attempt
        leaves nothing behind), so a redo is safe. A damaged journal refuses intake ops (the rest still
        run: they record work already accepted).
        """
        self._check_file()
        if self._damaged is not None:
            refused = JournalUnavailableError(self._damaged)
            for op in ops:
                if op.intake:
                    op.error = refused
            ops = [op for op in ops if not op.intake]
            if not ops:
                return
        try:
            with self._transaction() as conn:
                for op in ops:
                    op.result = op.apply(conn)
        except Exception:
            for op in ops:
                op.result, op.error = None, None
            self._apply_isolated(ops)
        self._after_commit()

    def _apply_isolated(self, ops: list[WriteOp]) -> None:
        """Every op in one transaction, each in a savepoint so one failure stays local."""
        with self._transaction() as conn:
            for op in ops:
                conn.execute("SAVEPOINT op")
                try:
                    op.result = op.apply(conn)
                except Exception as exc:
                    conn.execute("ROLLBACK TO op")
                    op.error = exc
                conn.execute("RELEASE op")

    def _after_commit(self) -> None:
        """Upkeep after a batch landed; it never fails the batch (its ops are already committed)."""
        try:
            if self._pending_evict:
                self._pending_evict = False
                self.evict(now=datetime.now(UTC))
            self._limit_wal()
        except sqlite3.Error as exc:
            self._log.warning("Job journal upkeep failed", err=f"{type(exc).__name__}: {exc}")

    def _limit_wal(self) -> None:
        """TRUNCATE checkpoint once the WAL passes its limit (PASSIVE ones alone fall behind under load)."""
        if self._wal is None:
            return
        try:
            size = self._wal.stat().st_size
        except FileNotFoundError:
            size = 0
        if self._metrics is not None:
            self._metrics.journal_wal_bytes.set(size)
        now = time.monotonic()
        if size <= self._wal_limit:
            return
        # After a checkpoint that could not finish (a reader holds its snapshot): retry after a pause, or
        # sooner once the WAL has grown by another limit's worth (a busy writer adds ~20 MB in the pause:
        # one missed checkpoint must not let the WAL reach many times its limit).
        if now < self._truncate_after and size < self._truncate_at_bytes:
            return
        with self._db.lock:
            conn = self._db.raw
            conn.execute(f"PRAGMA busy_timeout={TRUNCATE_BUSY_MS}")
            try:
                busy, _log, _done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            finally:
                conn.execute("PRAGMA busy_timeout=5000")
        if busy:
            self._truncate_after = now + self._truncate_retry
            self._truncate_at_bytes = size + self._wal_limit
            self._log.warning("Job journal WAL checkpoint could not finish; retrying", walBytes=size)
        else:
            self._truncate_after, self._truncate_at_bytes = 0.0, 0

    def _probe(self) -> None:
        """Does the journal take writes again? A write of ``PROBE_BYTES``: on a full disk a page or two can
        still fit in WAL space the file already has (after a checkpoint lets the WAL restart), so a tiny
        probe would make readiness flap while an intake still fails."""
        self._check_file()
        now = iso(datetime.now(UTC))
        with self._transaction() as conn:
            conn.execute(
                "UPDATE journal_meta SET probed_at = ?, probe = randomblob(?) WHERE id = 1",
                (now, PROBE_BYTES),
            )

    def _idle(self) -> None:
        self._check_file()
        self._keep_reserve()

    # ------------------------------------------------------------------ the reserve (writer thread)
    def _keep_reserve(self, *, force: bool = False) -> None:
        """Make the reserve file while it is missing (at most every ``RESERVE_RETRY_SECONDS``)."""
        reserve = self._reserve
        if reserve is None or reserve.ready:
            return
        now = time.monotonic()
        if not force and now - self._reserve_tried < RESERVE_RETRY_SECONDS:
            return
        self._reserve_tried = now
        if reserve.ensure():
            if self._reserve_missing:
                self._log.info("Job journal reserve file created; ready", reserve=str(reserve.path))
            self._reserve_missing = False
        elif not self._reserve_missing:
            self._reserve_missing = True
            self._log.error(
                "Job journal has no reserve file: on a full disk, jobs that finish would run again after a"
                " restart; not ready until it is made",
                reason=reserve.problem,
                hint="free space on the journal's filesystem; see docs/operations.md, 'A full disk under the job journal'",
            )

    def _hold_marks(self, ops: list[WriteOp]) -> None:
        """Writer hook: held-back completions go into the reserve (a stop before space returns keeps them)."""
        reserve = self._reserve
        saved = reserve.save([op.mark for op in ops]) if reserve is not None else 0
        for op in ops[:saved]:
            op.saved = True
        if saved and self._saved == 0:
            self._log.warning(
                "Completion marks saved in the journal's reserve file until the journal takes writes again",
                reserve=str(reserve.path) if reserve is not None else None,
                marks=saved,
            )
        self._saved += saved
        if saved < len(ops):
            self._log.error(
                "Completion marks cannot be saved (the reserve file is missing or full): these deliveries run"
                " again if the process stops before the journal takes writes",
                reason=(reserve.problem if reserve is not None else None) or "reserve full",
                deliveries=[op.label for op in ops[saved:]][:50],
            )

    def _marks_landed(self, ops: list[WriteOp]) -> None:
        """Writer hook: saved completions reached the journal; once all have, the reserve is zeroed."""
        self._saved = max(self._saved - len(ops), 0)
        if self._saved == 0 and self._reserve is not None:
            self._reserve.clear()

    def seen(self, delivery_id: str) -> bool:
        rows = self._db.query("SELECT 1 FROM delivery_journal WHERE delivery_id = ?", (delivery_id,))
        return bool(rows)

    # ------------------------------------------------------------------ progress
    def start_attempt(self, delivery_id: str, *, now: datetime) -> int:
        with self._transaction() as conn:
            return start_in(conn, delivery_id, now)

    def mark_handler_done(self, delivery_id: str, handler: str) -> None:
        """Record that one handler finished for this delivery (skipped if the delivery is replayed)."""
        with self._transaction() as conn:
            mark_done_in(conn, delivery_id, handler)

    def finish(
        self, delivery_id: str, *, now: datetime, status: JournalStatus = "done", error: str | None = None
    ) -> None:
        """Final status; a finished delivery's stored body is dropped with it (a dead one keeps it)."""
        with self._transaction() as conn:
            finish_in(conn, delivery_id, now, status, error)

    # ------------------------------------------------------------------ recovery and upkeep
    def reopen_requeued(self) -> int:
        """At start-up: requeued deliveries are replayed with the rest (status ``pending``)."""
        with self._transaction() as conn:
            return int(
                conn.execute(
                    "UPDATE delivery_journal SET status = 'pending' WHERE status = 'requeued'"
                ).rowcount
            )

    def unfinished(self) -> list[JournalEntry]:
        """Rows still open (queued, running or requeued when the last process stopped), oldest first.
        A row whose stored body cannot be read is moved to ``dead`` with the reason."""
        rows = self._db.query(
            "SELECT j.delivery_id, j.event_name, j.action, j.installation_id, p.payload, j.status, j.attempts,"
            " j.handlers_done, j.error FROM delivery_journal j JOIN delivery_payloads p USING (seq)"
            " WHERE j.status IN ('pending', 'running', 'requeued') ORDER BY j.seq"
        )
        out: list[JournalEntry] = []
        finished = {m.delivery_id for m in self._unapplied if m.kind == "finish"}
        for entry, problem in self._entries(rows):
            if entry is not None and entry.delivery_id in finished:
                continue  # finished while the disk was full: the mark waits in the reserve, not replayed
            if entry is not None:
                entry.handlers_done += [
                    m.handler
                    for m in self._unapplied
                    if m.kind == "handler"
                    and m.delivery_id == entry.delivery_id
                    and m.handler not in entry.handlers_done
                ]
                out.append(entry)
            elif problem is not None:
                delivery, reason = problem
                self._log.error(
                    "Stored delivery body unreadable; moved to dead", deliveryId=delivery, err=reason
                )
                self.finish(delivery, now=datetime.now(UTC), status="dead", error=reason)
        return out

    def _entries(
        self, rows: list[sqlite3.Row]
    ) -> Iterator[tuple[JournalEntry | None, tuple[str, str] | None]]:
        for r in rows:
            try:
                payload = self._codec.decode(r["payload"])
                if not isinstance(payload, dict):
                    raise ValueError("not a JSON object")
            except (ValueError, UnicodeDecodeError, RecursionError, zstandard.ZstdError) as exc:
                yield None, (r["delivery_id"], f"stored body unreadable: {type(exc).__name__}: {exc}"[:2000])
                continue
            yield (
                JournalEntry(
                    delivery_id=r["delivery_id"],
                    event_name=r["event_name"],
                    action=r["action"],
                    installation_id=r["installation_id"],
                    payload=payload,
                    status=r["status"],
                    attempts=r["attempts"],
                    handlers_done=json.loads(r["handlers_done"]),
                    error=r["error"],
                ),
                None,
            )

    def get(self, delivery_id: str) -> JournalRecord | None:
        """The journal row of a delivery that had work (deliveries acknowledged without work: ``None``)."""
        rows = self._db.query(
            "SELECT * FROM delivery_journal WHERE delivery_id = ? AND status != 'ignored'", (delivery_id,)
        )
        return journal_record(rows[0]) if rows else None

    def evict(self, *, now: datetime) -> int:
        """Forget delivery ids older than the dedup window, finished rows past their retention, and any
        stored body of a row that is no longer open or dead. Returns how many delivery rows went."""
        cutoff = iso(now - self._window)
        finished_cutoff = iso(now - max(FINISHED_RETENTION, self._window))
        with self._transaction() as conn:
            removed = conn.execute(
                "DELETE FROM delivery_journal WHERE received_at < ? AND status = 'ignored'", (cutoff,)
            ).rowcount
            removed += conn.execute(
                "DELETE FROM delivery_journal WHERE received_at < ? AND status IN ('done', 'failed', 'abandoned')",
                (finished_cutoff,),
            ).rowcount
            conn.execute(
                "DELETE FROM delivery_payloads WHERE seq NOT IN (SELECT seq FROM delivery_journal"
                " WHERE status IN ('pending', 'running', 'requeued', 'dead'))"
            )
        return int(removed)

    def counts(self) -> dict[str, int]:
        rows = self._db.query(
            "SELECT status, COUNT(*) AS n FROM delivery_journal WHERE status != 'ignored' GROUP BY status"
        )
        return {r["status"]: int(r["n"]) for r in rows}

    def _intake_in(
        self, conn: sqlite3.Connection, intake: Intake, *, now: datetime, journal: bool, started: bool
    ) -> Acceptance:
        return accept_in(
            conn, intake, now=now, window=self._window, journal=journal, started=started, codec=self._codec
        )


def apply_mark(conn: sqlite3.Connection, mark: Mark) -> None:
    """Write one completion mark (inside the caller's transaction); applying it twice changes nothing."""
    if mark.kind == "finish":
        finish_in(conn, mark.delivery_id, datetime.fromisoformat(mark.at), mark.status, mark.error)
    else:
        mark_done_in(conn, mark.delivery_id, mark.handler)


def mark_label(mark: Mark) -> str:
    if mark.kind == "finish":
        return f"{mark.status} {mark.delivery_id}"
    return f"handler {mark.handler} done {mark.delivery_id}"
