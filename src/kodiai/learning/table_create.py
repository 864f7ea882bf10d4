"""Create the memory table once, even when several processes open a new store at the same moment.

LanceDB's ``create_table`` is not safe to race: its creation commit is an Overwrite, and Lance rebases an
Overwrite onto the newest version, so a process that checked "absent" just before another created the table
replaces that table (rows and primary-key declaration lost; the other's next ``merge_insert`` then fails with
"incompatible with concurrent transaction Overwrite"). This happens in both of its create modes. So creation is
serialised by a lock: an ``fcntl`` lock file in a local directory, and on S3 (with key credentials) a lock
object with a lease (:mod:`kodiai.learning.lease_lock`: a crashed holder's lock is taken over once its lease
lapses). Only the lock holder creates, after checking again that the table is absent; the others wait until
the table exists and open it. Other stores (``gs://``, ``az://``, S3 through a role) have no lock: a warning
says so when such a process finds the table absent.
"""

from __future__ import annotations

import contextlib
import fcntl
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

from kodiai.learning.lease_lock import LEASE_SECONDS, ObjectLease
from kodiai.learning.object_store import S3Target, target_from_storage_options
from kodiai.log import get_logger
from kodiai.storage.write_health import local_directory

CREATE_WAIT_SECONDS = 120.0
"""How long an opener waits for another process to create the table before giving up (a crashed holder's
S3 lock is taken over after its lease, :data:`~kodiai.learning.lease_lock.LEASE_SECONDS`)."""
_POLL_SECONDS = 0.2


class TableCreateTimeout(RuntimeError):
    """Another process held the creation lock for too long without creating the table."""


class CreationLock(Protocol):
    def attempt(self) -> contextlib.AbstractContextManager[bool]:
        """Hold the lock for the ``with`` block (``True``), or not this time (``False``)."""
        ...

    def stuck(self) -> str:
        """Why an opener is still waiting, and what the operator can do: for the timeout message."""
        ...


def open_or_create(
    db: Any,
    name: str,
    create: Callable[[], Any],
    uri: str,
    storage_options: dict[str, str] | None,
    *,
    wait_seconds: float = CREATE_WAIT_SECONDS,
    lease_seconds: float = LEASE_SECONDS,
) -> Any:
    """Open table ``name``, or create it with ``create()`` if no process has: creation happens once."""
    lock = lock_for(uri, name, storage_options, lease_seconds=lease_seconds)
    deadline = time.monotonic() + wait_seconds
    while True:
        table = _try_open(db, name)
        if table is not None:
            return table
        with lock.attempt() as held:
            if held:
                table = _try_open(db, name)  # created between the check above and the lock
                return table if table is not None else create()
        if time.monotonic() > deadline:
            raise TableCreateTimeout(
                f"memory table {name!r} at {uri} was not created within {wait_seconds:.0f} s: {lock.stuck()}"
            )
        time.sleep(_POLL_SECONDS)


def _try_open(db: Any, name: str) -> Any | None:
    """The table, or ``None`` while it has no committed version: on object storage its directory is
    listed as soon as the creator writes data files, before the creation commit lands."""
    if name not in db.list_tables().tables:
        return None
    try:
        return db.open_table(name)
    except ValueError as exc:
        if "not found" not in str(exc):
            raise
        return None


def lock_for(
    uri: str, name: str, storage_options: dict[str, str] | None, *, lease_seconds: float = LEASE_SECONDS
) -> CreationLock:
    """The creation lock for table ``name`` at ``uri``: a lock file, a lease lock object, or none."""
    directory = local_directory(uri)
    if directory is not None:
        return _FileLock(directory / f".{name}.create.lock")
    target = target_from_storage_options(uri, storage_options)
    if target is not None:
        return _ObjectLock(
            target,
            lock_key(target, name),
            f"{str(uri).rstrip('/')}/_kodiai/create-{name}.lock",
            lease_seconds,
        )
    return _NoLock(uri)


def lock_key(target: S3Target, name: str) -> str:
    return f"{target.prefix}/_kodiai/create-{name}.lock".lstrip("/")


class _FileLock:
    """Non-blocking exclusive ``fcntl`` lock (released by the kernel if the process dies)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @contextlib.contextmanager
    def attempt(self) -> Iterator[bool]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def stuck(self) -> str:
        return (
            f"another process on this machine holds its creation lock file {self.path} (an fcntl lock, "
            "released when that process exits) and has not created the table; it may be stuck: stop it and "
            "start again"
        )


class _ObjectLock:
    """The S3 lease lock; a fresh :class:`ObjectLease` (owner id) per attempt."""

    def __init__(self, target: S3Target, key: str, where: str, lease_seconds: float) -> None:
        self.target, self.key, self.where, self.lease_seconds = target, key, where, lease_seconds
        self.last: ObjectLease | None = None

    @contextlib.contextmanager
    def attempt(self) -> Iterator[bool]:
        self.last = ObjectLease(self.target, self.key, lease_seconds=self.lease_seconds)
        with self.last.hold() as held:
            yield held

    def stuck(self) -> str:
        seen = self.last.last_seen if self.last else None
        refused = self.last.takeover_refused if self.last else None
        if refused:
            why = f"its creation lock ({seen.describe() if seen else 'unreadable'}) has lapsed but {refused}"
        elif seen is not None:
            why = (
                f"another process holds its creation lock ({seen.describe()}) and keeps renewing it without "
                "creating the table, so it is alive but stuck (a lock whose holder died is taken over once "
                "its lease lapses)"
            )
        else:
            why = "the object store kept refusing its creation lock"
        return (
            f"{why}. If no other process is starting on this store, delete the lock object {self.where} "
            "and start again"
        )


class _NoLock:
    """No lock can be written here: say so when it matters (the table is absent), and what to do."""

    def __init__(self, uri: str) -> None:
        self.uri = uri

    @contextlib.contextmanager
    def attempt(self) -> Iterator[bool]:
        scheme = str(self.uri).split(":", 1)[0].lower()
        reason = (
            "S3 reached through a role (no AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY): Kodiai signs its lock "
            "object only with key credentials"
            if scheme == "s3"
            else f"{scheme}:// has no creation lock (only local directories and s3:// with key credentials do)"
        )
        get_logger("kodiai.learning").warning(
            "Memory table absent: creating it without a lock; processes starting on this store at the same "
            "moment could replace each other's new table. Start one process first and let it create the "
            "table, then the others",
            reason=reason,
            uri_scheme=scheme,
        )
        yield True

    def stuck(self) -> str:  # pragma: no cover - attempt() always holds
        return "no creation lock"
