"""Every payload in fixtures/webhooks/, signed and posted to the running app over HTTP (P3.1, P3.3)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from kodiai.server.runtime import Runtime
from kodiai.webhook.signature import sign
from support.fake_github import FakeGitHub
from support.live_server import (
    LiveServer,
    Recorder,
    fixture_payloads,
    make_config,
    make_github,
    payload_json,
    recording_handler,
    signed_headers,
    start_kodiai,
)

# The original's event→handler table at cd3cee39 (behaviour P3.3), in dispatch order.
TABLE: dict[str, list[str]] = {
    "pull_request.opened": ["review", "feedback-sync"],
    "pull_request.ready_for_review": ["review", "feedback-sync"],
    "pull_request.review_requested": ["review", "feedback-sync"],
    "pull_request.synchronize": ["review"],
    "pull_request.closed": ["dep-bump-merge-history"],
    "issue_comment.created": ["mention", "feedback-sync"],
    "pull_request_review_comment.created": ["mention", "feedback-sync"],
    "pull_request_review.submitted": ["mention", "feedback-sync"],
}
FIXTURES = fixture_payloads()


class Env:
    def __init__(self, server: LiveServer, runtime: Runtime, recorder: Recorder) -> None:
        self.server = server
        self.runtime = runtime
        self.recorder = recorder
        self.http = httpx.Client(base_url=server.url, timeout=10)

    def post(self, event: str, body: bytes, delivery: str, **headers: str) -> httpx.Response:
        h = signed_headers(body, event=event, delivery=delivery)
        h.update(headers)
        return self.http.post("/webhooks/github", content=body, headers=h)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, fake: FakeGitHub) -> Iterator[Env]:
    tmp: Path = tmp_path_factory.mktemp("fixtures")
    recorder = Recorder()

    def register(rt: Runtime) -> None:
        for key, names in TABLE.items():
            for name in names:
                rt.router.register(key, recording_handler(rt, recorder, name), name=name)

    server, runtime = start_kodiai(make_config(tmp, fake.url), make_github(fake), register)
    yield Env(server, runtime, recorder)
    server.stop()


def _key(event: str, raw: bytes) -> str:
    action = payload_json(raw).get("action")
    return f"{event}.{action}" if action else event


@pytest.mark.parametrize(("name", "event", "raw"), FIXTURES, ids=[f[0] for f in FIXTURES])
def test_3_fixture_signed_routed_deduped(env: Env, name: str, event: str, raw: bytes) -> None:
    """P3.1/P3.3: 200 {"received": true}; routed to exactly the table's handlers; a redelivery is dropped."""
    delivery = f"fx-{uuid.uuid4()}"
    r = env.post(event, raw, delivery)
    assert r.status_code == 200 and r.json() == {"received": True}
    expected = TABLE.get(_key(event, raw), [])
    if expected:
        assert env.recorder.wait_for(lambda recs: len([d for d, _ in recs if d == delivery]) >= len(expected))
        assert env.runtime.journal is not None
        # the journal row is finished once the dispatch settles
        row = None
        for _ in range(500):
            row = env.runtime.journal.get(delivery)
            if row and row["status"] == "done":
                break
            env.recorder.wait_for(lambda _r: False, timeout=0.01)
        assert row is not None and row["status"] == "done"
    again = env.post(event, raw, delivery)
    assert again.status_code == 200 and again.json() == {"received": True}
    # every handler ran exactly once for this delivery, duplicate included
    got = sorted(h for d, h in env.recorder.records if d == delivery)
    assert got == sorted(expected)
    if not expected:
        assert (
            env.runtime.journal is not None and env.runtime.journal.get(delivery) is None
        )  # nothing to replay
        assert env.runtime.journal.seen(delivery)


@pytest.mark.parametrize(("name", "event", "raw"), FIXTURES, ids=[f[0] for f in FIXTURES])
def test_3_1_fixture_bad_signatures_rejected(env: Env, name: str, event: str, raw: bytes) -> None:
    """P3.1 #3: wrong secret, upper-case hex, bare digest, sha1-only header, missing header → 401 empty body."""
    good = sign("test-webhook-secret", raw)
    variants = {
        "wrong-secret": {"X-Hub-Signature-256": sign("other-secret", raw)},
        "upper-hex": {"X-Hub-Signature-256": "sha256=" + good[7:].upper()},
        "bare-digest": {"X-Hub-Signature-256": good[7:]},
        "tampered-body": {"X-Hub-Signature-256": sign("test-webhook-secret", raw + b" ")},
    }
    for label, header in variants.items():
        delivery = f"bad-{label}-{uuid.uuid4()}"
        r = env.post(event, raw, delivery, **header)
        assert r.status_code == 401, label
        assert r.content == b"", label
        assert r.headers["content-type"].startswith("text/plain")
        assert env.runtime.journal is not None and not env.runtime.journal.seen(delivery)
    missing = {"Content-Type": "application/json", "X-GitHub-Event": event, "X-GitHub-Delivery": "m"}
    legacy = {**missing, "X-Hub-Signature": "sha1=" + "0" * 40}
    assert env.http.post("/webhooks/github", content=raw, headers=missing).status_code == 401
    assert env.http.post("/webhooks/github", content=raw, headers=legacy).status_code == 401
