"""P3.1–P3.3 pipeline behaviours over real HTTP: invalid JSON, dedup, bot filter, concurrent handlers."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

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


class Env:
    def __init__(self, server: LiveServer, runtime: Runtime, recorder: Recorder) -> None:
        self.server, self.runtime, self.recorder = server, runtime, recorder
        self.http = httpx.Client(base_url=server.url, timeout=10)

    def post(self, event: str, payload: object | bytes, delivery: str) -> httpx.Response:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        return self.http.post(
            "/webhooks/github", content=body, headers=signed_headers(body, event=event, delivery=delivery)
        )


@pytest.fixture
def env(tmp_path: Path, fake: FakeGitHub) -> Iterator[Env]:
    recorder = Recorder()

    def register(rt: Runtime) -> None:
        rt.router.register(
            "issue_comment.created", recording_handler(rt, recorder, "mention"), name="mention"
        )
        rt.router.register("issue_comment", recording_handler(rt, recorder, "general"), name="general")
        rt.router.register("issues.opened", recording_handler(rt, recorder, "boom", fail=True), name="boom")
        rt.router.register("issues.opened", recording_handler(rt, recorder, "ok"), name="ok")

    server, runtime = start_kodiai(
        make_config(tmp_path, fake.url, bot_allow_list=["renovate", "dependabot"]),
        make_github(fake),
        register,
    )
    env = Env(server, runtime, recorder)
    with env.http:
        yield env
    server.stop()


def comment(sender: str = "octocat", kind: str = "User", installation: int = 1) -> dict[str, object]:
    return {
        "action": "created",
        "installation": {"id": installation},
        "sender": {"login": sender, "type": kind},
        "issue": {"number": 1},
        "comment": {"id": 5, "body": "@kodiai hi"},
    }


def test_3_1_invalid_json_is_400_and_not_marked_seen(env: Env) -> None:
    """PARITY fix (P3.1 #5 quirk): invalid JSON → 400; GitHub's redelivery of that id is then processed."""
    r = env.post("issue_comment", b"{not json", "d-invalid")
    assert r.status_code == 400 and r.json() == {"error": "Invalid JSON payload"}
    assert env.runtime.journal is not None and not env.runtime.journal.seen("d-invalid")
    ok = env.post("issue_comment", comment(), "d-invalid")
    assert ok.status_code == 200 and ok.json() == {"received": True}
    assert env.recorder.wait_count(2)
    assert sorted(h for d, h in env.recorder.records if d == "d-invalid") == ["general", "mention"]


def test_non_object_json_is_400(env: Env) -> None:
    """A JSON array/number/string is not a webhook payload: 400, not seen."""
    for i, body in enumerate([b"[1,2]", b"42", b'"x"', b"null"]):
        r = env.post("issue_comment", body, f"d-nonobj-{i}")
        assert r.status_code == 400
        assert env.runtime.journal is not None and not env.runtime.journal.seen(f"d-nonobj-{i}")


def test_3_2_duplicate_delivery_gets_200_and_runs_once(env: Env) -> None:
    """P3.2: a delivery id is processed once; a repeat still gets 200 {"received": true}."""
    for _ in range(3):
        assert env.post("issue_comment", comment(), "d-dup").json() == {"received": True}
    assert env.recorder.wait_count(2)
    assert eventually(lambda: env.runtime.dispatcher is not None and env.runtime.dispatcher.in_flight == 0)
    assert sorted(h for d, h in env.recorder.records if d == "d-dup") == ["general", "mention"]


def test_3_1_missing_delivery_header_shares_unknown(env: Env) -> None:
    """P3.2: deliveries without X-GitHub-Delivery share the id "unknown": only the first is processed."""
    body = json.dumps(comment()).encode()
    for _ in range(2):
        headers = signed_headers(body, event="issue_comment")
        del headers["X-GitHub-Delivery"]
        assert env.http.post("/webhooks/github", content=body, headers=headers).status_code == 200
    assert env.recorder.wait_count(2)
    assert eventually(lambda: env.runtime.dispatcher is not None and env.runtime.dispatcher.in_flight == 0)
    assert len([1 for d, _ in env.recorder.records if d == "unknown"]) == 2  # mention + general, once


def test_3_3_app_own_events_always_dropped(env: Env) -> None:
    """P3.3 #2: sender login equal to the app slug (after [bot] strip, any case) → dropped, even if allow-listed."""
    for i, login in enumerate(["kodiai[bot]", "KodiAI", "kodiai"]):
        assert env.post("issue_comment", comment(login, "Bot"), f"d-self-{i}").status_code == 200
    assert env.post("issue_comment", comment(), "d-after-self").status_code == 200  # a marker event
    assert env.recorder.wait_count(2)
    assert {d for d, _ in env.recorder.records} == {"d-after-self"}
    assert env.runtime.journal is not None and env.runtime.journal.get("d-self-0") is None
    assert env.runtime.journal.seen("d-self-0")


def test_3_3_bots_need_the_allow_list(env: Env) -> None:
    """P3.3 #3–4: User passes; Bot passes only when its normalised login is allow-listed."""
    env.post("issue_comment", comment("renovate[bot]", "Bot"), "d-renovate")
    env.post("issue_comment", comment("random-bot[bot]", "Bot"), "d-random")
    env.post("issue_comment", comment("SomeOrg", "Organization"), "d-org")
    env.post("issue_comment", comment("human", "User"), "d-human")
    assert env.recorder.wait_count(4)
    assert eventually(lambda: env.runtime.dispatcher is not None and env.runtime.dispatcher.in_flight == 0)
    assert {d for d, _ in env.recorder.records} == {"d-renovate", "d-human"}


def test_3_3_events_without_sender_skip_the_filter(env: Env) -> None:
    """P3.3 router #1: no sender object → no bot filter."""
    payload = comment()
    del payload["sender"]
    env.post("issue_comment", payload, "d-nosender")
    assert env.recorder.wait_count(2)


def test_3_3_handlers_concurrent_with_isolated_failures(env: Env) -> None:
    """P3.3 router #6: one handler's failure never affects the others; the journal keeps the failure."""
    payload = {"action": "opened", "installation": {"id": 3}, "sender": {"login": "u", "type": "User"}}
    assert env.post("issues", payload, "d-iso").status_code == 200
    assert env.recorder.wait_count(1)
    assert env.recorder.records == [("d-iso", "ok")]
    journal = env.runtime.journal
    assert journal is not None
    assert eventually(lambda: (journal.get("d-iso") or {}).get("status") == "failed")
    row = journal.get("d-iso")
    assert row is not None and "boom failed on purpose" in row["error"]
    assert json.loads(row["handlers_done"]) == ["ok"]


def test_3_3_unrouted_event_is_acknowledged_and_not_journaled(env: Env) -> None:
    """P3.3 router #5: no handlers matched → acknowledged, nothing queued, nothing to replay."""
    r = env.post("star", {"action": "created", "sender": {"login": "u", "type": "User"}}, "d-star")
    assert r.status_code == 200
    assert env.runtime.journal is not None and env.runtime.journal.get("d-star") is None


def test_acknowledged_before_the_job_finishes(env: Env) -> None:
    """P3.1 #8–9: the 200 comes back while the job is still blocked."""
    gate = threading.Event()
    rt = env.runtime
    rt.router.register("issues.closed", recording_handler(rt, env.recorder, "slow", gate=gate), name="slow")
    payload = {"action": "closed", "installation": {"id": 4}, "sender": {"login": "u", "type": "User"}}
    r = env.post("issues", payload, "d-slow")
    assert r.status_code == 200
    assert env.recorder.records == []
    row = rt.journal.get("d-slow") if rt.journal is not None else None
    assert row is not None and row["status"] in ("pending", "running")  # running once its job has started
    gate.set()
    assert env.recorder.wait_count(1)
