"""Can a store still write? Write failures of the knowledge, telemetry and learned-memory stores, for
``/readiness`` and ``/metrics``.

The review handler's writes to these stores are fail-open (behaviour R1 steps 47-50): on a full disk
the review is still posted and the failed write only logged, so nothing else would tell an operator that
every review is now losing its knowledge rows and memories. Each store owns one :class:`WriteHealth`; its
write methods report through :func:`reports_writes`. A failure is classified (:func:`classify`):

- ``no_space`` (``SQLITE_FULL``, ``ENOSPC``, ``EDQUOT``, ``EFBIG``, PostgreSQL's ``disk_full``) and ``io``
  (``SQLITE_IOERR``, ``EIO``, PostgreSQL's ``io_error``) make
  the store *failing*: ``/readiness`` answers 503 naming it, until space returns;
- ``other`` (a constraint, a lock, a bad record) is only counted: the next write may well work.

Recovery is decided by a probe, not by the next write that happens to succeed: on a full disk a small
SQLite write can still fit in WAL space the file already has, and an insert-or-ignore of a duplicate
changes nothing, so either would make readiness flap. While failing, a daemon thread writes, syncs and
removes a ``PROBE_BYTES`` file in the store's directory every ``probe_every`` seconds; the first that
lands clears the state. A store with no local directory (an object-storage LanceDB URI) has no probe, and
its next successful write clears it instead. One log line per change of state, never one per write.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

from kodiai.log import get_logger, redact

FailureKind = Literal["no_space", "io", "other"]
FailureObserver = Callable[[str, FailureKind], None]
"""Called with ``(store, kind)`` on every reported write failure (the metrics counter)."""

PROBE_BYTES = 64 * 1024  # more than a few pages: a page or two may still fit where a real write does not
PROBE_EVERY = 1.0  # seconds between probes while a store is failing
MAX_REASON = 300

_SQLITE_FULL = 13
_SQLITE_IOERR = 10
_NO_SPACE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
_IO_ERRNOS = {errno.EIO}
_OS_ERROR = re.compile(r"\(os error (\d+)\)")  # how Rust (LanceDB) spells an errno in its messages
_NO_SPACE_TEXT = (
    "database or disk is full",
    "no space left on device",
    "disk quota exceeded",
    "file too large",
)
_IO_TEXT = ("disk i/o error", "input/output error")

_F = TypeVar("_F", bound=Callable[..., Any])


def classify(exc: BaseException) -> FailureKind:
    """``no_space``, ``io`` or ``other``, from the exception or any exception it was raised from.

    SQLite errors carry their result code (its low byte is the primary code); ``OSError`` its errno;
    LanceDB raises ``RuntimeError("lance error: … No space left on device (os error 28) …")``, so its
    text is read for the errno too.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        kind = _classify_one(current)
        if kind != "other":
            return kind
        current = current.__cause__ or current.__context__
    return "other"


# PostgreSQL's SQLSTATEs (``DATABASE_URL``): 53100 disk_full; 58030 io_error, XX001/XX002 data or index
# corrupted, class 08 (connection lost or refused) and 57P01-57P03 (shutting down, cannot connect now): the
# store cannot write until the server is back, and its next write that lands clears the state.
_PG_NO_SPACE = {"53100"}
_PG_IO = {"58030", "XX001", "XX002", "57P01", "57P02", "57P03"}


def _classify_one(exc: BaseException) -> FailureKind:
    sqlstate = getattr(exc, "sqlstate", None)  # psycopg's errors carry it
    if isinstance(sqlstate, str):
        if sqlstate in _PG_NO_SPACE:
            return "no_space"
        if sqlstate in _PG_IO or sqlstate.startswith("08"):
            return "io"
        return "other"
    if type(exc).__name__ == "PoolTimeout":  # psycopg_pool: no connection to the server within the timeout
        return "io"
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        if isinstance(code, int):
            primary = code & 0xFF
            if primary == _SQLITE_FULL:
                return "no_space"
            if primary == _SQLITE_IOERR:
                return "io"
            return "other"
    if isinstance(exc, OSError) and exc.errno is not None:
        if exc.errno in _NO_SPACE_ERRNOS:
            return "no_space"
        if exc.errno in _IO_ERRNOS:
            return "io"
    text = str(exc).lower()
    for match in _OS_ERROR.finditer(text):
        number = int(match.group(1))
        if number in _NO_SPACE_ERRNOS:
            return "no_space"
        if number in _IO_ERRNOS:
            return "io"
    if any(t in text for t in _NO_SPACE_TEXT):
        return "no_space"
    if any(t in text for t in _IO_TEXT):
        return "io"
    return "other"


def database_directory(path: str | Path) -> Path | None:
    """Where a SQLite database's probe writes: its file's directory (``None`` for ``:memory:``)."""
    if str(path) == ":memory:":
        return None
    return Path(path).resolve().parent


def local_directory(uri: str | Path) -> Path | None:
    """The local directory a LanceDB URI names (a plain path or ``file://``), or ``None`` (object storage)."""
    text = str(uri)
    if text.startswith("file://"):
        return Path(text[len("file://") :])
    if "://" in text:
        return None
    return Path(text)


class WriteHealth:
    """One store's write state: failing (with the reason) or not, and its failure counts by kind.

    ``probe_dir``: where the recovery probe writes (the database's directory); ``None`` means no probe.
    Thread-safe: worker threads report, the event loop reads.
    """

    def __init__(
        self,
        store: str,
        probe_dir: str | Path | None,
        *,
        probe_every: float = PROBE_EVERY,
        probe_bytes: int = PROBE_BYTES,
    ) -> None:
        self.store = store
        self._probe_dir = Path(probe_dir) if probe_dir is not None else None
        self._probe_every = probe_every
        self._probe_bytes = probe_bytes
        self._lock = threading.Lock()
        self._failure: str | None = None
        self._counts: Counter[FailureKind] = Counter()
        self._observers: list[FailureObserver] = []
        self._prober: threading.Thread | None = None
        self._closed = threading.Event()
        self._inside = threading.local()
        self._log = get_logger("kodiai.storage")

    # ------------------------------------------------------------------ state
    @property
    def failure(self) -> str | None:
        """Why the store cannot write (``"<store> store cannot write: <error>"``), or ``None``."""
        return self._failure

    def counts(self) -> dict[FailureKind, int]:
        """Reported write failures by kind since the store opened."""
        with self._lock:
            return dict(self._counts)

    def observe(self, observer: FailureObserver) -> None:
        """Call ``observer(store, kind)`` on every later write failure."""
        with self._lock:
            self._observers.append(observer)

    # ------------------------------------------------------------------ reports
    def failed(self, exc: BaseException) -> FailureKind:
        """A write raised ``exc``: count it; a full disk or an I/O error makes the store failing."""
        kind = classify(exc)
        detail = redact(str(exc) or type(exc).__name__)[:MAX_REASON]
        with self._lock:
            self._counts[kind] += 1
            observers = list(self._observers)
            entered = kind != "other" and self._failure is None
            if kind != "other":
                self._failure = f"{self.store} store cannot write: {detail}"
            if entered and self._probe_dir is not None and not self._closed.is_set():
                self._prober = threading.Thread(
                    target=self._probe_until_recovered, name=f"kodiai-{self.store}-write-probe", daemon=True
                )
                self._prober.start()
        if entered:
            self._log.warning(
                "Store cannot write; not ready until a probe write lands (its fail-open writes are lost)",
                store=self.store,
                kind=kind,
                err=detail,
            )
        for observer in observers:
            with contextlib.suppress(Exception):  # a metrics hiccup must not hide the write's own error
                observer(self.store, kind)
        return kind

    def succeeded(self) -> None:
        """A write landed: recovery for a store without a probe (with one, only the probe decides)."""
        if self._failure is not None and self._probe_dir is None:
            self._recovered()

    def probe(self) -> bool:
        """Write, sync and remove ``probe_bytes`` in the store's directory; True (and recovered) if it landed."""
        if self._probe_dir is None:
            return False
        path = self._probe_dir / f".kodiai-write-probe-{self.store}"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
            try:
                os.write(fd, b"\0" * self._probe_bytes)  # one write: a short one is retried by the next probe
                if os.fstat(fd).st_size < self._probe_bytes:
                    return False
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError:
            return False
        finally:
            with contextlib.suppress(OSError):
                path.unlink()
        self._recovered()
        return True

    def close(self) -> None:
        """Stop probing (the store is closing)."""
        self._closed.set()

    # ------------------------------------------------------------------ internals
    def _recovered(self) -> None:
        with self._lock:
            previous, self._failure = self._failure, None
        if previous is not None:
            self._log.info("Store writes landing again; ready", store=self.store, previousError=previous)

    def _probe_until_recovered(self) -> None:
        while not self._closed.wait(self._probe_every):
            if self._failure is None or self.probe():
                return

    def _enter(self) -> bool:
        """True for the outermost reported write on this thread (a write method may call another)."""
        depth = getattr(self._inside, "depth", 0)
        self._inside.depth = depth + 1
        return depth == 0

    def _leave(self) -> None:
        self._inside.depth -= 1


def reports_writes(method: _F) -> _F:
    """Decorate a store's write method: its failures (and successes) go to ``self.write_health``."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        health: WriteHealth = self.write_health
        outermost = health._enter()
        try:
            result = method(self, *args, **kwargs)
        except Exception as exc:
            if outermost:
                health.failed(exc)
            raise
        finally:
            health._leave()
        if outermost:
            health.succeeded()
        return result

    return cast(_F, wrapper)
