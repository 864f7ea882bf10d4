"""Delivery guarantees at the HTTP surface (the real app over loopback HTTP, the real journal and lanes):

- a captured signed body replayed under a new delivery id is acknowledged as a duplicate and not run again;
- nothing after the journal commit answers 500: a lone surrogate in a logged field (rendered by the
  production JSON renderer) or a log line that fails outright still gets 200, and the job runs;
- a delivery the journal cannot record is answered 500 and counted in
  ``kodiai_webhook_responses_total{status="500"}``.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

import httpx
import pytest
import structlog
from structlog.testing import LogCapture

from kodiai.log import configure_logging
from kodiai.server.runtime import Runtime
from support.fake_github import FakeGitHub
from support.live_server import (
    LiveServer,
    Recorder,
    eventually,
    make_config,
    make_github,
    recording_handler,
    signed_headers,
    start_kodiai,
)


@pytest.fixture
def served(tmp_path: Path, fake: FakeGitHub) -> Iterator[tuple[LiveServer, Runtime, Recorder]]:
    recorder = Recorder()

    def register(rt: Runtime) -> None:
        rt.router.register("issues.opened", recording_handler(rt, recorder, "record"), name="record")

    server, runtime = start_kodiai(make_config(tmp_path, fake.url), make_github(fake), register)
    try:
        yield server, runtime, recorder
    finally:
        server.stop()


@pytest.fixture
def logging_config() -> Iterator[None]:
    saved = structlog.get_config()
    try:
        yield
    finally:
        structlog.configure(**saved)


def post(server: LiveServer, body: bytes, delivery: str) -> httpx.Response:
    return httpx.post(
        f"{server.url}/webhooks/github",
        content=body,
        headers=signed_headers(body, event="issues", delivery=delivery),
        timeout=10,
    )


def done(runtime: Runtime, delivery: str) -> bool:
    assert runtime.journal is not None
    row = runtime.journal.get(delivery)
    return row is not None and row["status"] == "done"


def test_a_signed_body_replayed_under_a_new_delivery_id_does_not_run_again(
    served: tuple[LiveServer, Runtime, Recorder], logging_config: None
) -> None:
    server, runtime, recorder = served
    capture = LogCapture()
    structlog.configure(processors=[capture])
    body = b'{"action":"opened","installation":{"id":3},"issue":{"number":1}}'
    assert post(server, body, "original").status_code == 200
    replay = post(server, body, "captured-and-replayed")
    assert replay.status_code == 200 and replay.json() == {"received": True}
    assert recorder.wait_count(1)
    assert eventually(lambda: done(runtime, "original"))
    assert [d for d, _h in recorder.records] == ["original"]
    assert runtime.journal is not None and not runtime.journal.seen("captured-and-replayed")
    skipped = [e for e in capture.entries if e["event"].startswith("Replayed webhook body skipped")]
    assert [(e["deliveryId"], e["duplicateOf"]) for e in skipped] == [("captured-and-replayed", "original")]


def test_a_lone_surrogate_in_a_logged_field_is_acknowledged_and_run(
    served: tuple[LiveServer, Runtime, Recorder], logging_config: None
) -> None:
    """The production JSON renderer (orjson) refuses lone surrogates; the delivery is committed first."""
    server, runtime, recorder = served
    configure_logging("info", json=True)
    body = (
        b'{"action":"opened","installation":{"id":3},"sender":{"login":"a\\ud800b","type":"User"},'
        b'"repository":{"full_name":"acme/\\udfffx"},"n":1}'
    )
    r = post(server, body, "surrogate")
    assert r.status_code == 200 and r.json() == {"received": True}
    assert recorder.wait_count(1) and recorder.records == [("surrogate", "record")]
    assert eventually(lambda: done(runtime, "surrogate"))


def test_a_log_line_that_fails_after_the_commit_does_not_turn_the_delivery_into_a_500(
    served: tuple[LiveServer, Runtime, Recorder], logging_config: None
) -> None:
    server, runtime, recorder = served
    capture = LogCapture()

    def broken_sink(_logger: Any, _name: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        if event["event"] == "Webhook accepted and queued for dispatch":  # e.g. stderr gone (EPIPE)
            raise BrokenPipeError("log sink closed")
        return event

    structlog.configure(processors=[broken_sink, capture])
    body = b'{"action":"opened","installation":{"id":3},"n":2}'
    r = post(server, body, "log-fails")
    assert r.status_code == 200 and r.json() == {"received": True}
    assert recorder.wait_count(1) and recorder.records == [("log-fails", "record")]
    assert eventually(lambda: done(runtime, "log-fails"))
    failed = [e for e in capture.entries if e["event"].startswith("Webhook post-commit step failed")]
    assert [(e["step"], e["deliveryId"]) for e in failed] == [("log", "log-fails")]


def test_a_delivery_the_journal_cannot_record_is_a_counted_500(
    served: tuple[LiveServer, Runtime, Recorder],
) -> None:
    server, runtime, recorder = served
    assert runtime.journal is not None
    runtime.journal._db.execute("PRAGMA query_only=ON")  # SQLite refuses every write from here on
    body = b'{"action":"opened","installation":{"id":3},"n":3}'
    r = post(server, body, "unrecorded")
    assert r.status_code == 500 and r.json() == {"error": "Internal Server Error"}
    ready = httpx.get(f"{server.url}/readiness", timeout=10)
    assert ready.status_code == 503 and "job journal" in ready.json()["reason"]
    text = runtime.metrics.render()[0].decode()
    assert 'kodiai_webhook_responses_total{status="500"} 1.0' in text
    runtime.journal._db.execute("PRAGMA query_only=OFF")
    assert eventually(lambda: httpx.get(f"{server.url}/readiness", timeout=10).status_code == 200)
    assert post(server, body, "unrecorded").status_code == 200  # GitHub's redelivery is now recorded
    assert recorder.wait_count(1) and recorder.records == [("unrecorded", "record")]
