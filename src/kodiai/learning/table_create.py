"""Create the memory table once, even when several processes open a new store at the same moment.

LanceDB's ``create_table`` is not safe to race: its creation commit is an Overwrite, and Lance rebases an
Overwrite onto the newest version, so a process that checked "absent" just before another created the table
replaces that table (rows and primary-key declaration lost; the other's next ``merge_insert`` then fails with
"incompatible with concurrent transaction Overwrite"). This happens in both of its create modes. So creation is
serialised by a lock: an ``fcntl`` lock file in a local directory, and on S3 a lock object written with a
conditional PUT (``If-None-Match: *``, the same guarantee the commits rely on). Only the lock holder creates,
after checking again that the table is absent; the others wait until the table exists and open it.
"""

from __future__ import annotations

import contextlib
import fcntl
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kodiai.learning.object_store import S3Target, signed_request, target_from_storage_options
from kodiai.log import get_logger
from kodiai.storage.write_health import local_directory

CREATE_WAIT_SECONDS = 120.0
"""How long an opener waits for another process to create the table before giving up."""
_POLL_SECONDS = 0.2


class TableCreateTimeout(RuntimeError):
    """Another process held the creation lock for too long without creating the table."""


def open_or_create(
    db: Any,
    name: str,
    create: Callable[[], Any],
    uri: str,
    storage_options: dict[str, str] | None,
    *,
    wait_seconds: float = CREATE_WAIT_SECONDS,
) -> Any:
    """Open table ``name``, or create it with ``create()`` if no process has: creation happens once."""
    lock = _lock_for(uri, name, storage_options)
    deadline = time.monotonic() + wait_seconds
    while True:
        table = _try_open(db, name)
        if table is not None:
            return table
        with lock() as held:
            if held:
                table = _try_open(db, name)  # created between the check above and the lock
                return table if table is not None else create()
        if time.monotonic() > deadline:
            raise TableCreateTimeout(
                f"memory table {name!r} at {uri} was not created within {wait_seconds:.0f} s while another "
                f"process held its creation lock ({_describe_lock(uri, name)}) or the store kept refusing "
                "it; if no other process is starting on this store, delete that lock and start again"
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


LockFactory = Callable[[], contextlib.AbstractContextManager[bool]]


def _lock_for(uri: str, name: str, storage_options: dict[str, str] | None) -> LockFactory:
    directory = local_directory(uri)
    if directory is not None:
        return lambda: _file_lock(directory / f".{name}.create.lock")
    target = target_from_storage_options(uri, storage_options)
    if target is not None:
        return lambda: _object_lock(target, _lock_key(target, name))
    get_logger("kodiai.learning").warning(
        "Memory table creation not serialised (no S3 key credentials to write a lock object)",
        uri_scheme=uri.split(":", 1)[0],
    )
    return _no_lock


def _lock_key(target: S3Target, name: str) -> str:
    return f"{target.prefix}/_kodiai/create-{name}.lock".lstrip("/")


def _describe_lock(uri: str, name: str) -> str:
    directory = local_directory(uri)
    if directory is not None:
        return f"lock file {directory / f'.{name}.create.lock'}"
    return f"lock object {str(uri).rstrip('/')}/_kodiai/create-{name}.lock"


@contextlib.contextmanager
def _no_lock() -> Iterator[bool]:
    yield True


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[bool]:
    """Non-blocking exclusive ``fcntl`` lock (released by the kernel if the process dies)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def _object_lock(target: S3Target, key: str, timeout: float = 10.0) -> Iterator[bool]:
    """Take the lock by creating ``key`` with ``If-None-Match: *`` (412/409: another process holds it);
    delete it after. A creator that dies holding it leaves it: the waiters' timeout names it."""
    import httpx

    with httpx.Client(timeout=timeout) as client:
        answer = signed_request(client, target, "PUT", key, {"if-none-match": "*"}, b"kodiai create lock\n")
        if answer.status_code in (409, 412) or answer.status_code >= 500:
            # 412: held. 409 and 5xx: a concurrent conditional write of the same key (S3 may answer 409,
            # some stores 500/503): not ours this time; the caller retries until its deadline.
            yield False
            return
        if answer.status_code >= 300:
            raise RuntimeError(
                f"object store at {target.describe()} refused the table-creation lock write "
                f"(HTTP {answer.status_code})"
            )
        try:
            yield True
        finally:
            with contextlib.suppress(httpx.HTTPError):
                signed_request(client, target, "DELETE", key, {}, b"")
