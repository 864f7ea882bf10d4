"""A lock object on S3 with a lease, so a process that dies holding it does not block every later start.

The lock is one object: created with ``If-None-Match: *`` (exactly one creator wins). Its body names the
holder (a random owner id, host, pid) and the lease it claims. The holder rewrites it every third of the
lease (``If-Match`` on its own ETag; each body is distinct, so each write has a new ETag). A waiter reads it
and judges the lease by the *server's* clock (the object's ``Last-Modified`` against the response's
``Date``), so clocks that disagree between machines do not matter. Once the lease has lapsed, a waiter
overwrites the object with ``If-Match`` on the ETag it read: of two waiters that read the same expired lock,
the store accepts one write and refuses the other (412). Release is a conditional DELETE on the holder's
own ETag, so a holder whose lease was taken over never deletes the new holder's lock.

AWS S3 supports ``If-Match`` on PUT and DELETE; before the first takeover in a process the store is checked
to refuse a PUT with a wrong ``If-Match`` (a store that ignores it could let two waiters both take over).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import socket
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING

from kodiai.learning.object_store import S3Target, signed_request
from kodiai.log import get_logger

if TYPE_CHECKING:
    import httpx

LEASE_SECONDS = 30.0
"""How long a lock stays valid after its last write. Creating an empty table takes well under a second to a
few seconds and the holder renews every ``LEASE_SECONDS / 3`` while it runs, so a live creator is taken over
only if two renewals in a row fail or it stalls for this long; a crashed one blocks the others this long."""
_CLOCK_RESOLUTION = timedelta(seconds=1)  # Last-Modified and Date carry whole seconds
_HELD, _REFUSED = "held", "refused"


@dataclass(frozen=True)
class LeaseBody:
    """What the lock object says: who holds it and for how long after each write."""

    owner: str
    lease_seconds: float
    host: str
    pid: int
    renewal: int = 0

    def encode(self) -> bytes:
        return json.dumps(
            {
                "kodiai": "table-create-lock",
                "owner": self.owner,
                "lease_seconds": self.lease_seconds,
                "host": self.host,
                "pid": self.pid,
                "renewal": self.renewal,
            },
            sort_keys=True,
        ).encode()

    @staticmethod
    def decode(data: bytes) -> LeaseBody | None:
        """The body, or ``None`` for anything else (a lock written by an older version: default lease)."""
        try:
            raw = json.loads(data)
            return LeaseBody(
                owner=str(raw["owner"]),
                lease_seconds=max(0.0, float(raw["lease_seconds"])),
                host=str(raw.get("host", "?")),
                pid=int(raw.get("pid", 0)),
                renewal=int(raw.get("renewal", 0)),
            )
        except (ValueError, TypeError, KeyError, AttributeError):
            return None


def lease_expiry(last_modified: datetime, lease_seconds: float) -> datetime:
    """When a lock written at ``last_modified`` lapses: one second later than the lease, because the
    server's timestamps are whole seconds (a lock written at 12:00:00.9 reads as 12:00:00)."""
    return last_modified + timedelta(seconds=lease_seconds) + _CLOCK_RESOLUTION


@dataclass(frozen=True)
class Observed:
    """A waiter's reading of the lock object."""

    etag: str
    holder: LeaseBody | None
    last_modified: datetime
    server_now: datetime

    @property
    def lease_seconds(self) -> float:
        return self.holder.lease_seconds if self.holder else LEASE_SECONDS

    @property
    def expires(self) -> datetime:
        return lease_expiry(self.last_modified, self.lease_seconds)

    @property
    def expired(self) -> bool:
        return self.server_now >= self.expires

    def describe(self) -> str:
        who = (
            f"held by pid {self.holder.pid} on host {self.holder.host}"
            if self.holder
            else "written by an older Kodiai version"
        )
        state = "lapsed" if self.expired else "valid"
        return (
            f"{who}, last written {self.last_modified:%Y-%m-%d %H:%M:%S} UTC, lease of "
            f"{self.lease_seconds:g} s {state} until {self.expires:%H:%M:%S} UTC"
        )


def _http_date(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return parsedate_to_datetime(value).astimezone(UTC)
    except (TypeError, ValueError):
        return None


_if_match_checked: dict[tuple[str | None, str], bool] = {}
_if_match_lock = threading.Lock()


class ObjectLease:
    """One process's attempt at the lock object ``key`` (a fresh owner id per instance)."""

    def __init__(
        self, target: S3Target, key: str, *, lease_seconds: float = LEASE_SECONDS, timeout: float = 10.0
    ) -> None:
        self.target = target
        self.key = key
        self.lease_seconds = lease_seconds
        self.timeout = timeout
        self.body = LeaseBody(uuid.uuid4().hex, lease_seconds, socket.gethostname(), os.getpid())
        self.etag: str | None = None  # set while held
        self.last_seen: Observed | None = None  # the other holder, as last read
        self.takeover_refused: str | None = None
        self._log = get_logger("kodiai.learning")

    # ---- requests ------------------------------------------------------------------------------------

    def _request(
        self, method: str, headers: dict[str, str], data: bytes = b"", key: str | None = None
    ) -> httpx.Response:
        import httpx

        with httpx.Client(timeout=self.timeout) as client:
            return signed_request(client, self.target, method, key or self.key, headers, data)

    def _write(self, body: LeaseBody, condition: dict[str, str]) -> str:
        """PUT ``body`` under ``condition``: ``_HELD`` (and the new ETag recorded) or ``_REFUSED``."""
        data = body.encode()
        answer = self._request("PUT", condition, data)
        # 409 (a concurrent conditional write), 412 (condition false), 404 (If-Match on a deleted object),
        # 5xx (some stores under contention): not ours this time; the caller retries until its deadline.
        if answer.status_code in (404, 409, 412) or answer.status_code >= 500:
            return _REFUSED
        if answer.status_code >= 300:
            raise RuntimeError(
                f"object store at {self.target.describe()} refused the table-creation lock write "
                f"(HTTP {answer.status_code})"
            )
        self.body = body
        self.etag = answer.headers.get("etag") or f'"{hashlib.md5(data).hexdigest()}"'
        return _HELD

    # ---- the protocol --------------------------------------------------------------------------------

    def try_create(self) -> bool:
        """Take the lock if nobody holds it."""
        return self._write(self.body, {"if-none-match": "*"}) == _HELD

    def observe(self) -> Observed | None:
        """Read the lock as it is now, or ``None`` when there is none (released since)."""
        answer = self._request("GET", {})
        if answer.status_code == 404 or answer.status_code >= 500:
            return None
        if answer.status_code >= 300:
            raise RuntimeError(
                f"object store at {self.target.describe()} refused to read the table-creation lock "
                f"(HTTP {answer.status_code})"
            )
        last_modified = _http_date(answer.headers.get("last-modified"))
        etag = answer.headers.get("etag")
        if last_modified is None or not etag:
            return None
        server_now = _http_date(answer.headers.get("date")) or datetime.now(UTC)
        seen = Observed(etag, LeaseBody.decode(answer.content), last_modified, server_now)
        self.last_seen = seen
        return seen

    def take_over(self, seen: Observed) -> bool:
        """Replace a lapsed lock, only if it is still the one read (``If-Match`` on its ETag)."""
        if not seen.expired or not self._store_honours_if_match():
            return False
        taken = self._write(self.body, {"if-match": seen.etag}) == _HELD
        if taken:
            self._log.warning(
                "Took over a lapsed memory-table creation lock (its holder stopped renewing it)",
                lock=self.key,
                previous=seen.describe(),
            )
        return taken

    def acquire(self) -> bool:
        """Create the lock, or take it over once its lease has lapsed."""
        if self.try_create():
            return True
        seen = self.observe()
        return seen is not None and self.take_over(seen)

    def renew(self) -> bool:
        """Extend the lease (a new body, hence a new ETag); ``False`` when the lock is no longer ours."""
        if self.etag is None:
            return False
        renewed = dataclasses.replace(self.body, renewal=self.body.renewal + 1)
        return self._write(renewed, {"if-match": self.etag}) == _HELD

    def release(self) -> None:
        """Delete the lock only if it is still ours: a DELETE with ``If-Match`` on our ETag."""
        import httpx

        etag, self.etag = self.etag, None
        if etag is None:
            return
        with contextlib.suppress(httpx.HTTPError):
            answer = self._request("DELETE", {"if-match": etag})
            if answer.status_code == 412:
                self._log.warning(
                    "Memory-table creation lock was taken over by another process; left in place",
                    lock=self.key,
                )
            elif answer.status_code in (400, 501):  # a store without conditional deletes
                current = self._request("GET", {})
                if current.status_code == 200 and current.headers.get("etag") == etag:
                    self._request("DELETE", {})

    @contextlib.contextmanager
    def hold(self) -> Iterator[bool]:
        """Acquire (``True``) or not (``False``); while held, renew the lease in a thread; release after."""
        if not self.acquire():
            yield False
            return
        stop = threading.Event()
        renewer = threading.Thread(target=self._renew_until, args=(stop,), name="kodiai-lease", daemon=True)
        renewer.start()
        try:
            yield True
        finally:
            stop.set()
            renewer.join()
            self.release()

    def _renew_until(self, stop: threading.Event) -> None:
        import httpx

        while not stop.wait(self.lease_seconds / 3):
            try:
                if not self.renew():
                    self._log.warning(
                        "Lost the memory-table creation lock (another process took it over after its lease "
                        "lapsed, or it was deleted)",
                        lock=self.key,
                    )
                    return
            except (httpx.HTTPError, RuntimeError) as exc:  # transient: the next renewal may succeed
                self._log.warning("Could not renew the memory-table creation lock", error=type(exc).__name__)

    def _store_honours_if_match(self) -> bool:
        """Whether the store refuses a PUT whose ``If-Match`` names the wrong ETag (checked once per store
        and process, on a probe object): a store that ignores it could let two waiters both take over."""
        where = (self.target.endpoint, self.target.bucket)
        with _if_match_lock:
            if where not in _if_match_checked:
                probe = f"{self.target.prefix}/_kodiai/if-match-probe-{uuid.uuid4().hex}".lstrip("/")
                self._request("PUT", {"if-none-match": "*"}, b"probe\n", key=probe)
                wrong = self._request("PUT", {"if-match": '"' + "0" * 32 + '"'}, b"probe 2\n", key=probe)
                self._request("DELETE", {}, key=probe)
                _if_match_checked[where] = wrong.status_code == 412
            honoured = _if_match_checked[where]
        if not honoured:
            self.takeover_refused = (
                f"the object store at {self.target.describe()} ignores If-Match on PUT, so a lapsed lock "
                "cannot be taken over safely"
            )
        return honoured
