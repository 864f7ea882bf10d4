"""Creating the memory table when several processes open a new store at once (real LanceDB, real threads,
real S3 via moto): the table is created once and never replaced, so no opener's rows or primary key are lost."""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

import lancedb
import numpy as np
import pytest
from learning_helpers import make_record

from kodiai.learning.memory_schema import TABLE_NAME
from kodiai.learning.memory_store import open_memory_store
from kodiai.learning.object_store import s3_target
from kodiai.learning.table_create import TableCreateTimeout, open_or_create
from kodiai.learning.types import LearningMemoryRecord
from support.s3 import S3Bucket

DIM = 8
OPENERS = 6
ROUNDS = 6


def record(finding_id: int) -> LearningMemoryRecord:
    return make_record(finding_id=finding_id, file_path="a.py", model="m", dim=DIM)


def _race(uri: str, storage_options: dict[str, str] | None = None) -> tuple[int, list[BaseException]]:
    """OPENERS threads open the absent store at the same moment (multi-writer), each writes its own memory."""
    barrier = threading.Barrier(OPENERS)
    errors: list[BaseException] = []

    def opener(i: int) -> None:
        try:
            barrier.wait()
            store = open_memory_store(uri, DIM, storage_options=storage_options, multi_writer=True)
            store.write_memory(record(i + 1), np.eye(DIM, dtype=np.float32)[i % DIM])
        except BaseException as exc:  # collected, asserted on below
            errors.append(exc)

    threads = [threading.Thread(target=opener, args=(i,)) for i in range(OPENERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return open_memory_store(uri, DIM, multi_writer=True, storage_options=storage_options).count(), errors


def test_racing_openers_on_a_directory_create_the_table_once(tmp_path: Path) -> None:
    """Without the creation lock a late creator's Overwrite replaced the table (rows lost, or a writer's
    merge_insert refused as incompatible with it) in about one round in five."""
    for n in range(ROUNDS):
        uri = str(tmp_path / f"m{n}.lance")
        count, errors = _race(uri)
        assert not errors, errors
        assert count == OPENERS, f"round {n}: {OPENERS - count} memories lost"


def test_racing_openers_on_s3_create_the_table_once(s3_bucket: S3Bucket) -> None:
    target = s3_target(s3_bucket.uri("memory"), os.environ)
    for n in range(2):
        count, errors = _race(s3_bucket.uri(f"memory{n}"), target.storage_options())
        assert not errors, errors
        assert count == OPENERS
    assert not [k for k in s3_bucket.object_keys() if k.endswith(".lock")]  # the lock objects are removed


def test_an_opener_waits_for_the_lock_holder_then_gives_up_clearly(tmp_path: Path) -> None:
    """While another process holds the creation lock without creating the table, an opener neither creates
    nor replaces anything, and after its wait fails naming the lock file."""
    uri = str(tmp_path / "m.lance")
    lock = tmp_path / "m.lance" / f".{TABLE_NAME}.create.lock"
    lock.parent.mkdir()
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        db = lancedb.connect(uri)
        with pytest.raises(TableCreateTimeout, match=r"\.learning_memories\.create\.lock"):
            open_or_create(
                db, TABLE_NAME, lambda: pytest.fail("created under a held lock"), uri, None, wait_seconds=0.5
            )
