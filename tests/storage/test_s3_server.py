"""The S3 server fixture (moto) is a real object store for LanceDB: a table created at ``s3://bucket/prefix``
with the standard AWS variables is read back by a second connection and its files are in the bucket."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from support.s3 import S3Bucket


def connect(uri: str, **kwargs: object) -> Any:
    """A LanceDB connection; imported here, not at module level: importing LanceDB costs seconds of every
    test run's collection, on every worker."""
    import lancedb

    return lancedb.connect(uri, **kwargs)


def test_lancedb_creates_and_reads_a_table_in_the_bucket(s3_bucket: S3Bucket) -> None:
    uri = s3_bucket.uri("memory")  # AWS_ENDPOINT_URL, AWS_ALLOW_HTTP, keys and region come from the env
    data = pa.table({"id": [1, 2, 3], "vector": [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]})
    connect(uri).create_table("learning_memories_d2", data)
    table = connect(uri).open_table("learning_memories_d2")  # a second connection
    table.add(pa.table({"id": [4], "vector": [[0.7, 0.8]]}))
    assert sorted(connect(uri).open_table("learning_memories_d2").to_arrow()["id"].to_pylist()) == [
        1,
        2,
        3,
        4,
    ]
    keys = s3_bucket.object_keys()
    assert keys and all(k.startswith("memory/learning_memories_d2.lance/") for k in keys)
    assert any(k.endswith(".lance") and "/data/" in k for k in keys)
