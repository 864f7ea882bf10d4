"""The documented move of the learned memory to object storage (docs/deployment.md, "Moving an existing
deployment to the cluster"): the LanceDB directory of a single process copied file by file under the
bucket prefix (what ``aws s3 sync DIR/ s3://bucket/prefix/`` does) opens as the same memory at
``LEARNING_MEMORY_URI=s3://bucket/prefix``, through the standard AWS variables only (a real S3 server)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kodiai.learning.memory_store import open_memory_store
from learning.learning_helpers import make_record
from support.s3 import S3Bucket

DIM = 8


def _sync(directory: Path, bucket: S3Bucket, prefix: str) -> int:
    """Every file under ``directory`` to ``prefix/<relative path>``, as ``aws s3 sync`` names them."""
    client = bucket.server.client()
    files = [p for p in sorted(directory.rglob("*")) if p.is_file()]
    for path in files:
        client.upload_file(str(path), bucket.name, f"{prefix}/{path.relative_to(directory).as_posix()}")
    return len(files)


def test_a_synced_memory_directory_opens_from_the_bucket(tmp_path: Path, s3_bucket: S3Bucket) -> None:
    local = tmp_path / "kodiai-memory.lance"
    store = open_memory_store(str(local), dimensions=DIM)
    rng = np.random.default_rng(7)
    try:
        for batch in range(2):  # several versions, as a server's writes leave them
            records = [make_record(finding_id=batch * 10 + i, dim=DIM) for i in range(10)]
            store.write_memories(records, rng.random((10, DIM)))
        before = sorted((r.finding_id, r.outcome) for r in store.list_records())
    finally:
        store.close()
    assert len(before) == 20

    assert _sync(local, s3_bucket, "memory") > 3
    remote = open_memory_store(s3_bucket.uri("memory"), dimensions=DIM)
    try:
        assert sorted((r.finding_id, r.outcome) for r in remote.list_records()) == before
        assert remote.count() == 20
    finally:
        remote.close()
