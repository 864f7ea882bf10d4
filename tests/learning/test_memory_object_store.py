"""The learned memory on object storage (``LEARNING_MEMORY_URI=s3://bucket/prefix``) against a real S3 server
(moto) and real LanceDB: several writer processes and a compacting one on one table, another process's write
seen within the refresh interval, the conditional-PUT start-up probe, and the plain-HTTP refusal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from pydantic import SecretStr
from typer.testing import CliRunner

from kodiai.cli.main import app
from kodiai.learning.memory_index import MemoryStoreOptions
from kodiai.learning.memory_store import open_memory_store
from kodiai.learning.object_store import (
    MemoryStoreRefused,
    probe_conditional_put,
    s3_target,
    sign_v4,
)
from kodiai.learning.setup import open_store_for_provider
from kodiai.server.stores import open_stores
from kodiai.settings import Settings
from support.s3 import S3Bucket

WORKER = Path(__file__).with_name("memory_s3_worker.py")
sys.path.insert(0, str(WORKER.parent))
from memory_s3_worker import SHARED_BASE, Provider, record, vector  # noqa: E402


def _spawn(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _result(proc: subprocess.Popen[str], timeout: float = 240) -> dict:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def _reap(procs: list[subprocess.Popen[str]]) -> None:
    """Kill what a failed assertion left running (and close its pipes)."""
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def test_three_writers_and_a_compactor_on_one_s3_table(s3_bucket: S3Bucket, tmp_path: Path) -> None:
    """Every memory present once, ids unique, and a memory written by all three writers at once is one row
    whose id every writer returned (its content key's)."""
    uri = s3_bucket.uri("memory")
    env = {**os.environ, "LEARNING_MEMORY_REFRESH_SECONDS": "1"}
    go, stop = tmp_path / "go", tmp_path / "stop"
    unique, shared = 3, 3
    writers = [_spawn("write", uri, str(w), str(unique), str(shared), str(go), env=env) for w in (1, 2, 3)]
    compactor = _spawn("compact", uri, str(stop), env=env)
    try:
        time.sleep(0.5)
        go.touch()
        results = [_result(w) for w in writers]
        stop.touch()
        assert _result(compactor)["compactions"] >= 2
    finally:
        _reap([*writers, compactor])

    store = open_store_for_provider(uri, Provider(), mark_stale=False)  # type: ignore[arg-type]
    assert store is not None
    rows = store.list_records()
    keys = Counter((r.repo, r.finding_id, r.outcome) for r in rows)
    expected = {SHARED_BASE + i for i in range(shared)} | {
        w * 1000 + i for w in (1, 2, 3) for i in range(unique)
    }
    assert {finding for _, finding, _ in keys} == expected
    assert max(keys.values()) == 1, [k for k, n in keys.items() if n > 1]  # no duplicate of a shared memory
    ids = [r.id for r in rows]
    assert len(ids) == len(set(ids)) == 3 * unique + shared
    by_finding = {r.finding_id: r.id for r in rows}
    for result in results:
        for finding, memory_id in result["ids"].items():
            assert memory_id is None or memory_id == by_finding[int(finding)]


def test_a_cache_sees_another_processs_row_within_the_refresh_interval(
    s3_bucket: S3Bucket, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """This process has the repo's vectors, live count and duplicate keys cached; a row written by another
    process is found by search and by ``has_memory`` within LEARNING_MEMORY_REFRESH_SECONDS."""
    monkeypatch.setenv("LEARNING_MEMORY_REFRESH_SECONDS", "2")
    uri = s3_bucket.uri("memory")
    store = open_store_for_provider(uri, Provider(), mark_stale=False)  # type: ignore[arg-type]
    assert store is not None
    first = store.write_memory(record("acme/api", 1), vector(1))
    assert [h.memory_id for h in store.retrieve_memories(vector(2), "acme/api", 5)] == [first]  # cached
    assert not store.has_memory("acme/api", 2, "accepted")

    go = tmp_path / "go"
    go.touch()
    writer = _spawn("write", uri, "9", "1", "0", str(go), env=dict(os.environ))  # finding 9000
    try:
        written = _result(writer)["ids"]["9000"]
    finally:
        _reap([writer])
    seen_at = time.monotonic()
    while True:
        hits = [h.memory_id for h in store.retrieve_memories(vector(9000), "acme/api", 5)]
        if written in hits:
            break
        assert time.monotonic() - seen_at < 2 + 1.5, "another process's memory not seen within the interval"
        time.sleep(0.1)
    assert hits[0] == written and store.has_memory("acme/api", 9000, "accepted")
    assert store.count("acme/api") == 2


# ---- the start-up probe --------------------------------------------------------------------------------


class _IgnoresConditions(BaseHTTPRequestHandler):
    """An "S3-compatible" endpoint that accepts every PUT, If-None-Match or not (the data-loss case)."""

    puts: ClassVar[list[str | None]] = []

    def do_PUT(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        type(self).puts.append(self.headers.get("If-None-Match"))
        self.send_response(200)
        self.send_header("ETag", '"abc"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_DELETE(self) -> None:
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def lax_s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _IgnoresConditions)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    for key, value in {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_ALLOW_HTTP": "true",
    }.items():
        monkeypatch.setenv(key, value)
    _IgnoresConditions.puts = []
    try:
        yield endpoint
    finally:
        server.shutdown()
        server.server_close()


def test_probe_passes_on_a_store_honouring_conditional_puts(s3_bucket: S3Bucket) -> None:
    uri = s3_bucket.uri("memory")
    outcome = probe_conditional_put(s3_target(uri, os.environ), os.environ)
    assert outcome.startswith("conditional-PUT probe passed (second write refused with HTTP 412)")
    assert not [k for k in s3_bucket.object_keys() if "put-probe" in k]  # the probe object is removed


def test_a_store_ignoring_conditional_puts_stops_the_server_start(lax_s3: str, tmp_path: Path) -> None:
    """The start-up path of ``kodiai serve``: refused (not fail-open), with the risk named, nothing opened."""
    settings = Settings(
        _env_file=None,
        telemetry_db_path=str(tmp_path / "t.db"),
        knowledge_db_path=str(tmp_path / "k.db"),
        learning_memory_uri="s3://kodiai-lax/memory",
        embedding_provider="voyage",
        voyage_api_key=SecretStr("pa-test"),
    )
    with pytest.raises(MemoryStoreRefused) as refused:
        open_stores(settings)
    message = str(refused.value)
    assert "ignores conditional writes" in message and "lose memories" in message
    assert "\n" not in message and "testing" not in message  # one line, no secret
    assert _IgnoresConditions.puts == ["*", "*"]  # both probe writes carried If-None-Match and were accepted


def test_memory_cli_refuses_plain_http_without_allow_http(
    s3_bucket: S3Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_ALLOW_HTTP")
    args = ["memory", "stats", "--uri", s3_bucket.uri("memory"), "--provider", "voyage"]
    result = CliRunner().invoke(app, [*args, "--voyage-api-key", "pa-test"])
    assert result.exit_code == 1
    assert "AWS_ENDPOINT_URL 127.0.0.1:" in result.output and "plain http://" in result.output
    assert "AWS_ALLOW_HTTP=true" in result.output and "testing" not in result.output
    assert s3_bucket.object_keys() == []  # nothing written


def test_memory_cli_refuses_a_store_ignoring_conditional_puts(lax_s3: str) -> None:
    args = ["memory", "stats", "--uri", "s3://kodiai-lax/memory", "--provider", "voyage"]
    result = CliRunner().invoke(app, [*args, "--voyage-api-key", "pa-test"])
    assert result.exit_code == 1 and "ignores conditional writes" in result.output


def test_sigv4_signature_matches_botocore() -> None:
    """The probe signs its requests itself (no AWS SDK at run time): same signature as botocore's."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    url = "http://127.0.0.1:9000/bucket/memory/_kodiai/put-probe-0a1b"
    request = AWSRequest(method="PUT", url=url, data=b"probe", headers={"If-None-Match": "*"})
    S3SigV4Auth(Credentials("AKID", "SECRET", "TOKEN"), "s3", "eu-west-1").add_auth(request)
    now = datetime.strptime(request.headers["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    ours = sign_v4(
        "PUT",
        url,
        {"if-none-match": "*"},
        b"probe",
        access_key="AKID",
        secret_key="SECRET",
        region="eu-west-1",
        now=now,
        session_token="TOKEN",
    )
    assert ours["authorization"] == request.headers["Authorization"]


def test_compaction_keeps_recent_versions(tmp_path: Path) -> None:
    """`kodiai memory compact` (the periodic job's call, for cron where no job runs it) compacts and keeps the
    recent table versions a concurrent reader may be reading; a shorter window is refused."""
    uri = str(tmp_path / "m.lance")
    vectors = np.eye(1024, dtype=np.float32)[:3]
    store = open_memory_store(uri, 1024)
    for finding in range(3):
        store.write_memory(record("acme/api", finding), vectors[finding])
    versions = store.with_table(lambda t: len(t.list_versions()))
    args = ["memory", "compact", "--uri", uri, "--provider", "voyage", "--voyage-api-key", "pa-test"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "Compacted" in result.output and "3 memories" in result.output
    again = open_memory_store(uri, 1024)
    assert again.with_table(lambda t: len(t.list_versions())) > versions  # compacted, nothing deleted
    with pytest.raises(ValueError, match="at least 1:00:00"):
        again.compact(timedelta(0))
    assert [h.memory_id for h in again.retrieve_memories(vectors[0], "acme/api", 1)] == [1]


def test_another_writers_rows_reach_a_cached_ann_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above the exact limit a repo is searched through its in-memory faiss index: after the refresh
    interval it holds the rows another writer added and not those it retired (here two handles on one
    directory with LEARNING_MEMORY_MULTI_WRITER=true; the S3 test above covers two processes)."""
    monkeypatch.setenv("LEARNING_MEMORY_MULTI_WRITER", "true")
    monkeypatch.setenv("LEARNING_MEMORY_REFRESH_SECONDS", "0.2")
    uri = str(tmp_path / "m.lance")
    options = MemoryStoreOptions(exact_search_max_rows=4, ann_calibrate=False, ann_lists=2, ann_nprobe=2)
    reader = open_store_for_provider(uri, Provider(), options=options, mark_stale=False)  # type: ignore[arg-type]
    writer = open_store_for_provider(uri, Provider(), options=options, mark_stale=False)  # type: ignore[arg-type]
    assert reader is not None and writer is not None and reader.multi_writer
    ids = reader.write_memories([record("acme/api", f) for f in range(8)], [vector(f) for f in range(8)])
    assert reader.retrieve_memories(vector(0), "acme/api", 1)[0].distance < 1e-6
    assert reader.stats().ann["acme/api"].structure == "ivf"  # the cached faiss index answers

    added = writer.write_memory(record("acme/api", 100), vector(100))
    assert writer.retire("acme/api", 0) == 1
    time.sleep(0.3)
    assert reader.retrieve_memories(vector(100), "acme/api", 1)[0].memory_id == added
    assert ids[0] not in {h.memory_id for h in reader.retrieve_memories(vector(0), "acme/api", 9)}
    assert reader.stats().ann["acme/api"].structure == "ivf"
