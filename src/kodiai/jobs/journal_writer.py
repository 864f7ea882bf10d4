"""Group commit for the job journal: one writer thread, many deliveries per SQLite transaction; WAL
checkpoints on a thread of their own.

Under load, concurrent webhook requests each need their intake write committed before the 200. Here the
requests queue their operations; a single thread drains the queue, applies a whole batch in one
transaction, commits, and only then resolves the waiting futures (one wake-up per waiting loop). So a
200 is still only sent once its delivery is durably journaled, but the commit is shared and SQLite runs
off the event loop (it releases the GIL while it works).

Applying the batch on the event loop itself costs less CPU (no hand-off), but measured with
benchmarks/webhook.py it starved new connections: with 200 clients, the first request of the last
connections to open waited 2.3-2.9 s (p99 2.6 s, against 0.23-0.33 s with this thread), because libuv
accepts one connection per loop iteration and those iterations had grown long.

A write that fails is never dropped silently. An intake write's caller learns it (the delivery is answered
500, not acknowledged). A *deferred* write (an attempt starting, a handler finishing, a final status) is
kept, in order, and applied again with everything that follows it until it lands: dropping a "done" on a
full disk would run the job again after the next restart. A held-back write that carries a ``mark`` (a
completion: final status, handler done) is also handed to ``hold`` once, which saves it where a stop
before space returns does not lose it (:mod:`kodiai.jobs.journal_reserve`); ``landed`` hears when such a
saved write has reached the journal (or was dropped). While writes fail, or nothing has shown they
work again, :attr:`JournalWriter.failure` says why (``/readiness`` answers not-ready); when idle, the
thread probes with a 64 KiB write every ``retry_every`` seconds.

The journal's connection never checkpoints the WAL itself on commit (a checkpoint copies pages back and
syncs): a daemon thread runs a PASSIVE checkpoint every second through its own connection, and writers carry
on meanwhile. Under sustained writes PASSIVE alone never lets the WAL restart (there is always a frame the
checkpoint has not reached when the next transaction starts: 124 MB in 3 s under benchmark load), so the
journal also runs a TRUNCATE checkpoint on the writer thread whenever the WAL passes a size limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kodiai.log import get_logger
from kodiai.storage.connection import checkpoint_passive, connect

MAX_BATCH = 256
CHECKPOINT_EVERY = 1.0  # seconds
IDLE_TICK = 1.0  # seconds between idle checks (file identity) when nothing is queued
RETRY_EVERY = 0.5  # seconds between retries of failed deferred writes (or probes) while idle


@dataclass
class WriteOp:
    """One queued journal operation: ``apply(conn)`` runs inside the batch transaction.

    ``intake``: a new delivery (refused when the journal is damaged; its caller answers the webhook, so it
    is never retried here). ``retry``: a deferred write kept and applied again until it lands.
    """

    apply: Callable[[Any], Any]
    future: asyncio.Future[Any] | None = None
    loop: asyncio.AbstractEventLoop | None = None
    result: Any = None
    error: BaseException | None = field(default=None)
    intake: bool = False
    retry: bool = False
    label: str = ""
    mark: Any = None  # what ``hold`` saves of a held-back completion (see the module docstring)
    saved: bool = False  # ``hold`` saved it


BatchApplier = Callable[[list[WriteOp]], None]
OpsHook = Callable[[list[WriteOp]], None]
_STOP = object()


class JournalWriter:
    """The single writer thread. ``submit`` returns a future resolved after the batch commits.

    ``apply_batch`` sets each op's result or error (raising means the whole batch failed); ``probe`` is
    a write run when idle while writes are failing; ``idle`` runs on every idle tick (the
    journal's file-identity check); ``hold`` and ``landed`` see held-back completions (module docstring).
    """

    def __init__(
        self,
        apply_batch: BatchApplier,
        *,
        max_batch: int = MAX_BATCH,
        probe: Callable[[], None] | None = None,
        idle: Callable[[], None] | None = None,
        on_failure: Callable[[BaseException], None] | None = None,
        on_backlog: Callable[[int], None] | None = None,
        hold: OpsHook | None = None,
        landed: OpsHook | None = None,
        idle_tick: float = IDLE_TICK,
        retry_every: float = RETRY_EVERY,
    ) -> None:
        self._apply_batch = apply_batch
        self._max = max_batch
        self._probe = probe
        self._idle = idle
        self._on_failure = on_failure
        self._on_backlog = on_backlog
        self._hold = hold
        self._landed = landed
        self._idle_tick = idle_tick
        self._retry_every = retry_every
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._backlog: list[WriteOp] = []
        self._failure: str | None = None
        self._log = get_logger("kodiai.jobs.journal")
        self._thread = threading.Thread(target=self._loop, name="kodiai-journal-writer", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ state
    @property
    def failure(self) -> str | None:
        """Why the journal cannot write now (the last failure, until a write lands with nothing held back)."""
        return self._failure

    @property
    def backlog(self) -> int:
        """Deferred writes held back by a failure, waiting to be applied again."""
        return len(self._backlog)

    def submit(
        self,
        apply: Callable[[Any], Any],
        *,
        wait: bool,
        intake: bool = False,
        retry: bool = False,
        label: str = "",
        mark: Any = None,
        saved: bool = False,
    ) -> asyncio.Future[Any] | None:
        """Queue ``apply``; with ``wait`` return a future for its result (set after COMMIT)."""
        op = WriteOp(apply=apply, intake=intake, retry=retry, label=label, mark=mark, saved=saved)
        future: asyncio.Future[Any] | None = None
        if wait:
            op.loop = asyncio.get_running_loop()
            op.future = future = op.loop.create_future()
        self._queue.put(op)
        return future  # not op.future: the writer clears it once settled, possibly before this line runs

    def stop(self) -> None:
        """Apply everything already queued (and try the held-back writes once more), then end the thread."""
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join(timeout=30)

    # ------------------------------------------------------------------ the thread
    def _loop(self) -> None:
        while True:
            timeout = self._retry_every if (self._backlog or self._failure) else self._idle_tick
            try:
                first = self._queue.get(timeout=timeout)
            except queue.Empty:
                self._tick()
                continue
            if first is _STOP:
                self._final_attempt()
                return
            batch: list[WriteOp] = [*self._backlog, first]  # held-back writes first: order is kept
            limit = self._max + len(self._backlog)
            self._backlog = []
            stop_after = False
            while len(batch) < limit:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is _STOP:
                    stop_after = True
                    break
                batch.append(item)
            self._run(batch)
            if stop_after:
                self._final_attempt()
                return

    def _tick(self) -> None:
        """Nothing queued: retry held-back writes, probe while failing, run the idle check."""
        if self._idle is not None:
            try:
                self._idle()
            except Exception as exc:  # the check must never stop the writer
                self._log.warning("Job journal idle check failed", err=f"{type(exc).__name__}: {exc}")
        if self._backlog:
            batch, self._backlog = self._backlog, []
            self._run(batch)
        elif self._failure is not None and self._probe is not None:
            try:
                self._probe()
            except Exception as exc:
                self._note_failure(exc)
            else:
                self._recovered()

    def _run(self, batch: list[WriteOp]) -> None:
        for op in batch:  # a held-back op carries its last failure until it is applied again
            op.result, op.error = None, None
        try:
            self._apply_batch(batch)
        except BaseException as exc:  # the whole transaction failed: every op learns it
            for op in batch:
                op.result, op.error = None, exc
        failures = [op.error for op in batch if op.error is not None and is_write_failure(op.error)]
        for op in batch:
            if op.error is None or not op.retry:
                continue
            if is_write_failure(op.error):
                self._backlog.append(op)
            else:  # a bug in the op itself: applying it again would fail the same way
                self._log.error(
                    "Job journal write dropped", op=op.label, err=f"{type(op.error).__name__}: {op.error}"
                )
        self._settle_marks(batch)
        if failures:
            self._note_failure(failures[0])
        elif not self._backlog:
            self._recovered()
        if self._on_backlog is not None:
            self._on_backlog(len(self._backlog))
        self._resolve_all(batch)
        for op in batch:  # a held-back op is settled once (its waiter has moved on); later runs only apply it
            op.future, op.loop = None, None

    def _settle_marks(self, batch: list[WriteOp]) -> None:
        """Hand new held-back completions to ``hold`` (before the backlog is reported: a reader of the gauge
        may rely on them being saved), and saved ones that left the backlog to ``landed``."""
        if self._hold is not None:
            new = [op for op in self._backlog if op.mark is not None and not op.saved]
            if new:
                self._hold(new)
        if self._landed is not None:
            held = {id(op) for op in self._backlog}
            gone = [op for op in batch if op.saved and id(op) not in held]
            if gone:
                self._landed(gone)

    def _note_failure(self, exc: BaseException) -> None:
        reason = f"{type(exc).__name__}: {exc}"
        if self._failure is None:
            self._log.error(
                "Job journal write failed; retrying held-back writes until they land",
                err=reason,
                heldBack=[op.label for op in self._backlog if op.label][:50],
            )
        self._failure = reason
        if self._on_failure is not None:
            self._on_failure(exc)

    def _recovered(self) -> None:
        if self._failure is not None:
            self._log.info("Job journal writes landing again", previousError=self._failure)
        self._failure = None

    def _final_attempt(self) -> None:
        """At shutdown: one more try for held-back writes; whatever still fails is named in the log."""
        if self._backlog:
            batch, self._backlog = self._backlog, []
            self._run(batch)
        kept = [op.label for op in self._backlog if op.saved]
        lost = [op.label for op in self._backlog if not op.saved and op.mark is not None]
        counts = [op.label for op in self._backlog if op.mark is None and op.label]
        if kept:
            self._log.warning(
                "Job journal writes held back at shutdown; the completion marks are saved in the reserve"
                " file and applied at the next start",
                err=self._failure,
                kept=kept,
            )
        if lost:
            self._log.error(
                "Job journal writes lost at shutdown; these deliveries will run again at the next start",
                err=self._failure,
                lost=lost,
            )
        if counts:  # an attempt not counted (or not given back): only the dead-letter count is off by one
            self._log.warning("Job journal attempt counts lost at shutdown", err=self._failure, lost=counts)

    @staticmethod
    def _resolve_all(batch: list[WriteOp]) -> None:
        """Settle the batch's waiting futures with one wake-up of each waiting loop (not one per op)."""
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], Any, BaseException | None]]]
        by_loop = {}
        for op in batch:
            if op.future is not None and op.loop is not None:
                by_loop.setdefault(op.loop, []).append((op.future, op.result, op.error))
        for loop, settled in by_loop.items():
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
                loop.call_soon_threadsafe(_settle, settled)


def is_write_failure(exc: BaseException) -> bool:
    """A storage failure (full disk, I/O error, lock, damage), as opposed to an op's own bug or a
    constraint it broke: only these hold writes back and make the journal not ready."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    return not isinstance(exc, sqlite3.IntegrityError | sqlite3.ProgrammingError | sqlite3.InterfaceError)


def _settle(settled: list[tuple[asyncio.Future[Any], Any, BaseException | None]]) -> None:
    """On the waiting loop: set each result (or error) unless its waiter already gave up."""
    for future, result, error in settled:
        if future.done():
            continue
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)


class Checkpointer:
    """A daemon thread that runs a PASSIVE WAL checkpoint on ``path`` every ``every`` seconds."""

    def __init__(self, path: str | Path, *, every: float = CHECKPOINT_EVERY) -> None:
        self._path = path
        self._every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kodiai-journal-checkpoint", daemon=True)
        self._log = get_logger("kodiai.jobs.journal")
        self._thread.start()

    def _loop(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            conn = connect(self._path)
            while not self._stop.wait(self._every):
                try:
                    checkpoint_passive(conn)
                except sqlite3.Error as exc:  # busy or I/O: the next round tries again
                    self._log.warning("Job journal checkpoint failed", err=f"{type(exc).__name__}: {exc}")
        except sqlite3.Error as exc:
            self._log.error("Job journal checkpointer stopped", err=f"{type(exc).__name__}: {exc}")
        finally:
            if conn is not None:
                conn.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
