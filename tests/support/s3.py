"""An S3 server for the tests (``moto[server]`` from PyPI): no Docker, no cloud account.

One :class:`moto.server.ThreadedMotoServer` per test session (per xdist worker) on a free loopback port,
started on first use; each test gets a bucket of its own and the standard AWS variables pointing at the
server (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``,
``AWS_ALLOW_HTTP=true``), which is how an operator configures ``LEARNING_MEMORY_URI=s3://bucket/prefix``.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from support.postgres import free_port

REGION = "us-east-1"
_buckets = itertools.count(1)


@dataclass(frozen=True)
class S3Server:
    endpoint: str

    def env(self) -> dict[str, str]:
        """The AWS variables a process needs to use this server (test credentials, plain HTTP)."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ALLOW_HTTP": "true",
        }

    def client(self):  # type: ignore[no-untyped-def]
        import boto3

        env = self.env()
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        )


@dataclass(frozen=True)
class S3Bucket:
    server: S3Server
    name: str

    def uri(self, prefix: str = "memory") -> str:
        return f"s3://{self.name}/{prefix}"

    def object_keys(self) -> list[str]:
        """Every object key in the bucket."""
        pages = self.server.client().get_paginator("list_objects_v2").paginate(Bucket=self.name)
        return [obj["Key"] for page in pages for obj in page.get("Contents", [])]


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """The session's S3 server on 127.0.0.1, stopped at the end."""
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield S3Server(endpoint=f"http://127.0.0.1:{port}")
    finally:
        server.stop()


@pytest.fixture
def s3_bucket(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Bucket]:
    """A new bucket for this test, with the AWS variables set to reach it; emptied and removed after."""
    for key, value in s3_server.env().items():
        monkeypatch.setenv(key, value)
    bucket = S3Bucket(s3_server, f"kodiai-test-{os.getpid()}-{next(_buckets)}")
    client = s3_server.client()
    client.create_bucket(Bucket=bucket.name)
    try:
        yield bucket
    finally:
        for key in bucket.object_keys():
            client.delete_object(Bucket=bucket.name, Key=key)
        client.delete_bucket(Bucket=bucket.name)
