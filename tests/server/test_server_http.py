"""P2 HTTP surface over real HTTP: health, readiness, strict 404s, 413, metrics, error boundary."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import pytest

from kodiai.server.runtime import Runtime
from support.fake_github import FakeGitHub
from support.live_server import (
    Recorder,
    eventually,
    make_config,
    make_github,
    recording_handler,
    signed_headers,
    start_kodiai,
)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def server(tmp_path: Path, fake: FakeGitHub):  # type: ignore[no-untyped-def]
    recorder = Recorder()

    def register(rt: Runtime) -> None:
        rt.router.register("pull_request.opened", recording_handler(rt, recorder, "review"), name="review")

    srv, runtime = start_kodiai(make_config(tmp_path, fake.url), make_github(fake), register)
    srv.recorder = recorder  # type: ignore[attr-defined]
    srv.runtime = runtime  # type: ignore[attr-defined]
    yield srv
    srv.stop()


def test_2_health_is_ok(server) -> None:  # type: ignore[no-untyped-def]
    """P2: GET /health → 200 {"status":"ok"}; HEAD returns the GET status with an empty body."""
    r = httpx.get(f"{server.url}/health")
    assert r.status_code == 200 and r.json() == {"status": "ok"}
    head = httpx.head(f"{server.url}/health")
    assert head.status_code == 200 and head.content == b""


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/health/"), ("GET", "/webhooks/github"), ("GET", "/nope"), ("POST", "/health"), ("GET", "/")],
)
def test_2_strict_routing_plain_text_404(server, method: str, path: str) -> None:  # type: ignore[no-untyped-def]
    """P2: anything else is 404 text/plain "404 Not Found"; trailing slash and wrong method included."""
    r = httpx.request(method, f"{server.url}{path}")
    assert r.status_code == 404
    assert r.text == "404 Not Found"
    assert r.headers["content-type"].startswith("text/plain")


def test_2_readiness_ready_then_503_when_github_unreachable(tmp_path: Path, fake: FakeGitHub) -> None:
    """P2/P1.4: readiness uses the 30 s cached check; a failed check → 503 with the original's body."""
    clock = Clock()
    github = make_github(fake, clock=clock)
    srv, _ = start_kodiai(make_config(tmp_path, fake.url), github)
    try:
        assert httpx.get(f"{srv.url}/readiness").json() == {"status": "ready"}
        assert fake.calls_to("GET", "/app") and len(fake.calls_to("GET", "/app")) == 1  # primed at start-up
        fake.fail(500, times=10, path="^/app$")
        clock.t += 10  # still cached
        assert httpx.get(f"{srv.url}/readiness").status_code == 200
        clock.t += 25  # past 30 s: a fresh check that fails
        r = httpx.get(f"{srv.url}/readiness")
        assert r.status_code == 503
        assert r.json() == {"status": "not ready", "reason": "GitHub API unreachable"}
        fake.faults.clear()
        assert httpx.get(f"{srv.url}/readiness").status_code == 503  # failure cached too
        clock.t += 31
        assert httpx.get(f"{srv.url}/readiness").status_code == 200
    finally:
        srv.stop()


def test_webhook_body_over_25_mib_is_413(server) -> None:  # type: ignore[no-untyped-def]
    """Bodies over GitHub's 25 MiB cap are refused with 413 (declared length, before reading it)."""
    body = b"x" * (25 * 1024 * 1024 + 1)
    r = httpx.post(f"{server.url}/webhooks/github", content=body, headers=signed_headers(body, event="push"))
    assert r.status_code == 413


def test_webhook_chunked_body_over_limit_is_413(tmp_path: Path, fake: FakeGitHub) -> None:
    """A chunked body (no Content-Length) is cut off as soon as it passes the limit."""
    srv, _ = start_kodiai(make_config(tmp_path, fake.url, max_body_bytes=1024), make_github(fake))
    try:

        def chunks():  # type: ignore[no-untyped-def]
            for _ in range(100):
                yield b"y" * 512

        headers = {"X-GitHub-Event": "push", "X-Hub-Signature-256": "sha256=" + "0" * 64}  # well-formed
        r = httpx.post(f"{srv.url}/webhooks/github", content=chunks(), headers=headers)
        assert r.status_code == 413
        metrics = httpx.get(f"{srv.url}/metrics").text
        assert 'kodiai_webhook_deliveries_total{event="unverified",outcome="too_large"} 1.0' in metrics
    finally:
        srv.stop()


def test_metrics_exposes_deliveries_queue_depth_durations_and_threshold_methods(server) -> None:  # type: ignore[no-untyped-def]
    """/metrics: deliveries by event+outcome, queue depth per lane, job durations, retrieval methods."""
    body = b'{"action":"opened","installation":{"id":7},"sender":{"login":"a","type":"User"}}'
    headers = signed_headers(body, event="pull_request", delivery="m-1")
    assert httpx.post(f"{server.url}/webhooks/github", content=body, headers=headers).status_code == 200
    assert httpx.post(f"{server.url}/webhooks/github", content=body, headers=headers).status_code == 200
    assert server.recorder.wait_count(1)
    server.runtime.metrics.retrieval_threshold_method.labels("gap").inc()
    text = httpx.get(f"{server.url}/metrics").text
    assert 'kodiai_webhook_deliveries_total{event="pull_request",outcome="accepted"} 1.0' in text
    assert 'kodiai_webhook_deliveries_total{event="pull_request",outcome="duplicate"} 1.0' in text
    assert 'kodiai_job_duration_seconds_count{job_type="test-job",outcome="ok"} 1.0' in text
    assert 'kodiai_retrieval_threshold_method_total{method="gap"} 1.0' in text
    assert "# TYPE kodiai_job_queue_depth gauge" in text


def test_queue_depth_gauge_per_lane(server) -> None:  # type: ignore[no-untyped-def]
    """Queue depth is reported per installation lane while jobs wait, and dropped when the lane is pruned."""
    gate = threading.Event()
    rt: Runtime = server.runtime
    rt.router.register(
        "issues.opened", recording_handler(rt, server.recorder, "gated", gate=gate), name="gated"
    )
    for i in range(3):  # distinct bodies: a repeated body under a new delivery id is a replay (deduplicated)
        body = b'{"action":"opened","installation":{"id":9},"sender":{"login":"a","type":"User"},"n":%d}' % i
        r = httpx.post(
            f"{server.url}/webhooks/github",
            content=body,
            headers=signed_headers(body, event="issues", delivery=f"q{i}"),
        )
        assert r.status_code == 200
    label = rt.metrics.queue_depth.label("9")  # a keyed hash of the id by default
    waiting = eventually(
        lambda: (
            f'kodiai_job_queue_depth{{installation="{label}"}} 2.0' in httpx.get(f"{server.url}/metrics").text
        )
    )
    gate.set()
    assert waiting, "two jobs should wait behind the running one in lane 9"
    assert server.recorder.wait_count(3)
    assert eventually(lambda: not rt.queue.lane_ids())
    assert f'installation="{label}"' not in httpx.get(f"{server.url}/metrics").text


def test_2_unhandled_error_is_500_json_without_stack(tmp_path: Path, fake: FakeGitHub) -> None:
    """P2: an uncaught exception → 500 {"error":"Internal Server Error"}, no traceback on the wire."""
    srv, runtime = start_kodiai(make_config(tmp_path, fake.url), make_github(fake))
    try:
        runtime.journal.close()  # the next accept hits a closed database
        body = b'{"action":"opened"}'
        r = httpx.post(f"{srv.url}/webhooks/github", content=body, headers=signed_headers(body, event="push"))
        assert r.status_code == 500
        assert r.json() == {"error": "Internal Server Error"}
        assert "Traceback" not in r.text
    finally:
        srv.stop()
