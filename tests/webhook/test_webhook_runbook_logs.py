"""P1.3: the log messages operators' runbooks grep for, emitted by the running server with their fields."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import structlog

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


def test_1_3_runbook_messages(tmp_path: Path, fake: FakeGitHub) -> None:
    recorder = Recorder()

    def register(rt: Runtime) -> None:
        rt.router.register("issues.opened", recording_handler(rt, recorder, "ok"), name="ok")
        rt.router.register("issues.opened", recording_handler(rt, recorder, "bad", fail=True), name="bad")

    with structlog.testing.capture_logs() as logs:
        server, runtime = start_kodiai(make_config(tmp_path, fake.url), make_github(fake), register)
        try:
            body = json.dumps(
                {
                    "action": "opened",
                    "installation": {"id": 5},
                    "sender": {"login": "octo", "type": "User"},
                    "repository": {"full_name": "acme/widgets"},
                }
            ).encode()
            url = f"{server.url}/webhooks/github"
            httpx.post(url, content=body, headers=signed_headers(body, event="issues", delivery="log-1"))
            httpx.post(url, content=body, headers=signed_headers(body, event="issues", delivery="log-1"))
            httpx.post(
                url,
                content=body,
                headers={**signed_headers(body, event="issues"), "X-Hub-Signature-256": "x"},
            )
            bot = json.dumps({"action": "opened", "sender": {"login": "kodiai[bot]", "type": "Bot"}}).encode()
            r = httpx.post(url, content=bot, headers=signed_headers(bot, event="issues", delivery="log-bot"))
            assert r.status_code == 200, r.text
            none = json.dumps({"action": "created", "sender": {"login": "u", "type": "User"}}).encode()
            httpx.post(url, content=none, headers=signed_headers(none, event="star", delivery="log-none"))
            assert recorder.wait_count(1)
            assert eventually(lambda: runtime.dispatcher is not None and runtime.dispatcher.in_flight == 0)
        finally:
            server.stop()
    by_event: dict[str, list[dict[str, object]]] = {}
    for entry in logs:
        by_event.setdefault(str(entry["event"]), []).append(entry)
    for message in (
        "GitHub App authenticated as kodiai",
        "Kodiai server started",
        "Webhook accepted and queued for dispatch",
        "Webhook signature verification failed",
        "Duplicate delivery skipped",
        "Router evaluated dispatch keys",
        "Event filtered before dispatch",
        "Event skipped because no handlers matched",
        "Dispatched to 2 handler(s)",
        "Handler failed during dispatch",
        "Enqueuing job for installation",
        "Job execution started",
        "Job execution completed",
        "Job execution failed",
    ):
        assert message in by_event, message
    accepted = by_event["Webhook accepted and queued for dispatch"][0]
    for field in (
        "deliveryId",
        "eventName",
        "action",
        "installationId",
        "repository",
        "sender",
        "receivedAt",
        "userAgent",
    ):
        assert field in accepted, field
    assert accepted["repository"] == "acme/widgets" and accepted["installationId"] == 5
    filtered = by_event["Event filtered before dispatch"][0]
    assert filtered["filtered"] is True and filtered["filterReason"] == "bot-filter"
    assert filtered["deliveryId"] == "log-bot" and filtered["eventName"] == "issues"
    assert filtered["sender"] == "kodiai[bot]" and filtered["action"] == "opened"
    assert "Event dispatch failed" not in by_event
    dispatched = by_event["Dispatched to 2 handler(s)"][0]
    assert dispatched["succeeded"] == 1 and dispatched["failed"] == 1
    keys = by_event["Router evaluated dispatch keys"][0]
    assert keys["specificKey"] == "issues.opened" and keys["generalKey"] == "issues"
    assert keys["matchedHandlerCount"] == 2
