"""The S3 creation lock's lease, against the moto S3 server: a crashed holder's lock is taken over once its
lease lapses, a live holder's never is, two waiters cannot both take one over, and a holder never deletes
a lock that is no longer its own."""

from __future__ import annotations

import json
import os
import threading
import time
from datetime import UTC, datetime, timedelta

import lancedb
import pytest
import structlog

from kodiai.learning.lease_lock import LEASE_SECONDS, LeaseBody, ObjectLease, Observed
from kodiai.learning.object_store import S3Target, s3_target
from kodiai.learning.table_create import TableCreateTimeout, lock_for, lock_key, open_or_create
from support.s3 import S3Bucket

NAME = "learning_memories"
SHORT = 0.0  # a crashed holder's lease: lapses within a second (the server's clock has whole seconds)


@pytest.fixture
def store(s3_bucket: S3Bucket) -> tuple[S3Bucket, S3Target, str]:
    target = s3_target(s3_bucket.uri("memory"), os.environ)
    return s3_bucket, target, lock_key(target, NAME)


def lock_owner(bucket: S3Bucket, key: str) -> str | None:
    client = bucket.server.client()
    try:
        body = client.get_object(Bucket=bucket.name, Key=key)["Body"].read()
    except client.exceptions.NoSuchKey:
        return None
    return str(json.loads(body)["owner"])


def wait_until_lapsed(target: S3Target, key: str) -> None:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        seen = ObjectLease(target, key).observe()
        if seen is not None and seen.expired:
            return
        time.sleep(0.1)
    pytest.fail("the lock's lease never lapsed")


def test_a_crashed_holders_lock_is_taken_over_once_its_lease_lapses(
    store: tuple[S3Bucket, S3Target, str],
) -> None:
    """Before the lease, a lock left by a process that died while creating blocked every later start until
    it failed (after 2 minutes), until an operator deleted the object."""
    bucket, target, key = store
    assert ObjectLease(target, key, lease_seconds=SHORT).acquire()  # and never released nor renewed
    uri = bucket.uri("memory")
    db = lancedb.connect(uri, storage_options=target.storage_options())
    created: list[str] = []

    def create() -> str:
        created.append("table")
        return "table"

    started = time.monotonic()
    table = open_or_create(db, NAME, create, uri, target.storage_options(), wait_seconds=10)
    assert (table, created) == ("table", ["table"])
    assert time.monotonic() - started < 5
    assert lock_owner(bucket, key) is None  # the new holder released it


def test_a_live_holder_is_never_taken_over(store: tuple[S3Bucket, S3Target, str]) -> None:
    """A holder that is still creating keeps renewing its lease, so waiters wait past the lease length; when
    they give up, the message names the object, its holder and why it was not taken over."""
    bucket, target, key = store
    uri = bucket.uri("memory")
    db = lancedb.connect(uri, storage_options=target.storage_options())
    holder = ObjectLease(target, key, lease_seconds=0.5)
    with holder.hold() as held:
        assert held
        with pytest.raises(TableCreateTimeout) as raised:
            open_or_create(
                db,
                NAME,
                lambda: pytest.fail("created while a live process held the lock"),
                uri,
                target.storage_options(),
                wait_seconds=2,  # four lease lengths
            )
        assert lock_owner(bucket, key) == holder.body.owner
    message = str(raised.value)
    assert f"delete the lock object {uri}/_kodiai/create-{NAME}.lock" in message
    assert f"held by pid {os.getpid()}" in message
    assert "keeps renewing it" in message
    assert lock_owner(bucket, key) is None


def test_two_waiters_racing_for_a_lapsed_lock_exactly_one_wins(store: tuple[S3Bucket, S3Target, str]) -> None:
    """Both waiters read the same lapsed lock (a barrier holds each until both have), then both try to take
    it over with that reading: the second write is refused because the first changed the object's ETag.
    The two writes are sent one after the other because moto (unlike S3) checks a condition and writes in
    two steps, so truly simultaneous writes could both pass on moto (2 in 200 in a measurement)."""
    bucket, target, key = store
    assert ObjectLease(target, key, lease_seconds=SHORT).acquire()
    wait_until_lapsed(target, key)
    waiters = [ObjectLease(target, key), ObjectLease(target, key)]
    read, first_done = threading.Barrier(2), threading.Event()
    won: dict[int, bool] = {}

    def waiter(i: int) -> None:
        seen = waiters[i].observe()
        read.wait(10)
        assert seen is not None and seen.expired
        if i == 1:
            first_done.wait(10)
        won[i] = waiters[i].take_over(seen)
        first_done.set()

    threads = [threading.Thread(target=waiter, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert won == {0: True, 1: False}
    assert lock_owner(bucket, key) == waiters[0].body.owner


def test_a_holder_whose_lease_was_taken_over_does_not_delete_the_new_lock(
    store: tuple[S3Bucket, S3Target, str],
) -> None:
    """A holder that stalled past its lease and then releases leaves the new holder's lock in place."""
    bucket, target, key = store
    stalled = ObjectLease(target, key, lease_seconds=SHORT)
    assert stalled.acquire()
    wait_until_lapsed(target, key)
    taker = ObjectLease(target, key)
    assert taker.acquire()
    stalled.release()
    assert lock_owner(bucket, key) == taker.body.owner
    taker.release()
    assert lock_owner(bucket, key) is None


def test_a_lock_from_an_older_version_lapses_after_the_default_lease() -> None:
    """Locks written before the lease (a constant body) are judged by the default lease from Last-Modified."""
    written = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    holder = LeaseBody.decode(b"kodiai create lock\n")
    assert holder is None
    at = written + timedelta(seconds=LEASE_SECONDS)
    assert not Observed('"e"', holder, written, at).expired  # Last-Modified drops the fraction of a second
    assert Observed('"e"', holder, written, at + timedelta(seconds=1)).expired


def test_stores_without_a_lock_say_so_when_they_create() -> None:
    """gs://, az:// and S3 through a role cannot write the lock object: the warning says what to do."""
    for uri, reason in (("gs://bucket/memory", "gs:// has no creation lock"), ("s3://bucket/memory", "role")):
        with (
            structlog.testing.capture_logs() as logs,
            lock_for(uri, NAME, {"aws_region": "us-east-1"}).attempt(),
        ):
            pass
        (line,) = [entry for entry in logs if entry["log_level"] == "warning"]
        assert "Start one process first" in line["event"]
        assert reason in line["reason"]
