"""``LEARNING_MEMORY_URI`` as an unlucky operator writes it: LanceDB resolves dot segments (``a/../b`` is
``b``, ``%2e%2e/z`` is ``z``, ``../other/p`` is ``other/p``) and drops a query or fragment, so the memory
would live somewhere other than the prefix named (and logged) — possibly another deployment's memory in a
shared bucket. Refused at start with the reason; ordinary prefixes (spaces, non-ASCII) still work."""

from __future__ import annotations

import pytest

from kodiai.learning.object_store import MemoryStoreRefused, s3_target

ENV = {"AWS_ENDPOINT_URL": "https://s3.example.test", "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE"}


@pytest.mark.parametrize(
    "uri",
    [
        "s3://bucket/team-a/../team-b",
        "s3://bucket/../other-bucket/memory",
        "s3://bucket/./memory",
        "s3://bucket/%2e%2e/memory",
        "s3://bucket/a//b",
        "s3://bucket/memory?versionId=1",
        "s3://bucket/memory#frag",
    ],
)
def test_a_prefix_that_would_resolve_elsewhere_is_refused(uri: str) -> None:
    with pytest.raises(MemoryStoreRefused, match="LEARNING_MEMORY_URI"):
        s3_target(uri, ENV)


@pytest.mark.parametrize(
    "uri", ["s3://AKID:wJalrXUtnFEMI@bucket/memory", "s3://bucket:9000/memory", "s3://bucket%2Fx/memory"]
)
def test_a_bucket_that_is_not_a_bucket_name_is_refused_without_echoing_it(uri: str) -> None:
    """Credentials pasted into the URI (``s3://key:secret@bucket``) must not become the "bucket" that
    every start-up log line then names."""
    with pytest.raises(MemoryStoreRefused) as refused:
        s3_target(uri, ENV)
    assert "wJalrXUtnFEMI" not in str(refused.value) and "bucket name" in str(refused.value)


@pytest.mark.parametrize(
    ("uri", "prefix"),
    [
        ("s3://bucket/memory", "memory"),
        ("s3://bucket/with space/p", "with space/p"),
        ("s3://my.bucket-1/ü/ß/", "ü/ß"),
        ("s3://bucket", ""),
        ("s3://bucket/a.b/..c/d..", "a.b/..c/d.."),
    ],
)
def test_ordinary_prefixes_still_work(uri: str, prefix: str) -> None:
    assert s3_target(uri, ENV).prefix == prefix
